"""The read cache of admission (controller/aws/readcache.py) on a fake clock: one lookup in
flight per key, found and not-found answers kept for their times, the bound on keys, misses
paced by the bucket, and failures that fail open without being cached."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from controller.aws import AWSError, LookupCache, LookupUnavailable, ReadCacheSettings
from runtime.clock import FakeClock
from runtime.tokenbucket import TokenBucket

Answer = str | None


class Lookups:
    """Lookups that answer what `answers` says (None: not there), counting the calls; with
    `gate` set they wait for it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.answers: dict[str, Answer | Exception] = {}
        self.gate: asyncio.Event | None = None

    def of(self, key: str) -> Callable[[], Awaitable[Answer]]:
        async def lookup() -> Answer:
            self.calls.append(key)
            if self.gate is not None:
                await self.gate.wait()
            answer = self.answers.get(key, f"found {key}")
            if isinstance(answer, Exception):
                raise answer
            return answer
        return lookup


def cache(clock: FakeClock, **settings: float) -> LookupCache[Answer]:
    chosen = ReadCacheSettings(**settings)  # type: ignore[arg-type]
    return LookupCache(bucket=TokenBucket(rate=chosen.rate, burst=chosen.burst, clock=clock),
                       clock=clock, settings=chosen, missing=lambda answer: answer is None)


async def settle() -> None:
    """Let every task run until it waits (for the clock or a lookup)."""
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_concurrent_callers_of_one_key_share_one_lookup(clock: FakeClock) -> None:
    reads, lookups = cache(clock), Lookups()
    lookups.gate = asyncio.Event()
    callers = [asyncio.create_task(reads.get(key, lookups.of(key)))
               for key in ["tg-1"] * 300 + ["tg-2"] * 300]
    await settle()
    lookups.gate.set()
    answers = await asyncio.gather(*callers)
    assert sorted(lookups.calls) == ["tg-1", "tg-2"]
    assert answers == ["found tg-1"] * 300 + ["found tg-2"] * 300
    # And later callers are answered from the cache.
    assert await reads.get("tg-1", lookups.of("tg-1")) == "found tg-1"
    assert reads.lookups == 2


async def test_answers_are_kept_for_their_ttl_and_then_asked_again(clock: FakeClock) -> None:
    reads, lookups = cache(clock, ttl=30.0, negative_ttl=5.0), Lookups()
    lookups.answers["gone"] = None
    assert await reads.get("tg", lookups.of("tg")) == "found tg"
    assert await reads.get("gone", lookups.of("gone")) is None
    await clock.advance(4.9)
    assert await reads.get("gone", lookups.of("gone")) is None  # not found, still
    await clock.advance(0.2)
    lookups.answers["gone"] = "made since"
    assert await reads.get("gone", lookups.of("gone")) == "made since"
    assert await reads.get("tg", lookups.of("tg")) == "found tg"
    assert lookups.calls == ["tg", "gone", "gone"]
    await clock.advance(25.0)  # past the first answer's 30 s
    assert await reads.get("tg", lookups.of("tg")) == "found tg"
    assert lookups.calls == ["tg", "gone", "gone", "tg"]


async def test_the_least_recently_used_keys_go_first_past_the_size(clock: FakeClock) -> None:
    reads, lookups = cache(clock, size=3, burst=100), Lookups()
    for key in ("a", "b", "c"):
        await reads.get(key, lookups.of(key))
    await reads.get("a", lookups.of("a"))  # used again: now the newest
    await reads.get("d", lookups.of("d"))  # "b" goes
    assert len(reads) == 3
    assert [reads.cached(key)[0] for key in "abcd"] == [True, False, True, True]
    await reads.get("b", lookups.of("b"))
    assert lookups.calls == ["a", "b", "c", "d", "b"]


async def test_misses_past_the_burst_wait_for_a_token_or_fail_open(clock: FakeClock) -> None:
    reads, lookups = cache(clock, rate=2.0, burst=3, max_wait=1.0), Lookups()
    for key in ("a", "b", "c"):
        await reads.get(key, lookups.of(key))
    # The fourth miss waits half a second for its token.
    fourth = asyncio.create_task(reads.get("d", lookups.of("d")))
    await settle()
    assert not fourth.done()
    await clock.advance(0.5)
    assert await fourth == "found d"
    # Hits cost no token.
    assert await reads.get("a", lookups.of("a")) == "found a"
    # Three more misses at once: a token each at 0.5 s and 1 s, none for the third in 1 s.
    late = [asyncio.create_task(reads.get(key, lookups.of(key))) for key in ("e", "f", "g")]
    await settle()
    for _ in range(4):
        await clock.advance(0.5)
    results = await asyncio.gather(*late, return_exceptions=True)
    assert results[:2] == ["found e", "found f"]
    assert isinstance(results[2], LookupUnavailable)
    assert "rate limited" in str(results[2])
    assert lookups.calls == ["a", "b", "c", "d", "e", "f"]


async def test_a_failed_lookup_fails_open_and_is_not_cached(clock: FakeClock) -> None:
    reads, lookups = cache(clock), Lookups()
    lookups.answers["tg"] = AWSError("AccessDenied", "not authorized",
                                     operation="DescribeTargetGroups", status=403)
    callers = [asyncio.create_task(reads.get("tg", lookups.of("tg"))) for _ in range(5)]
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(r, LookupUnavailable) for r in results)
    first = results[0]
    assert isinstance(first, LookupUnavailable)
    assert "AccessDenied" in str(first)
    assert isinstance(first.__cause__, AWSError)
    assert lookups.calls == ["tg"]
    del lookups.answers["tg"]
    assert await reads.get("tg", lookups.of("tg")) == "found tg"  # asked again
    assert lookups.calls == ["tg", "tg"]


async def test_a_caller_that_gives_up_leaves_the_lookup_to_finish(clock: FakeClock) -> None:
    reads, lookups = cache(clock), Lookups()
    lookups.gate = asyncio.Event()
    caller = asyncio.create_task(reads.get("tg", lookups.of("tg")))
    await settle()
    caller.cancel()  # its review reached its deadline
    with pytest.raises(asyncio.CancelledError):
        await caller
    lookups.gate.set()
    await settle()
    assert reads.cached("tg") == (True, "found tg")
    assert await reads.get("tg", lookups.of("tg")) == "found tg"
    assert lookups.calls == ["tg"]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="positive"):
        ReadCacheSettings(ttl=0)
    with pytest.raises(ValueError, match="at least 1"):
        ReadCacheSettings(size=0)
