"""Rate limiters and the token bucket, driven by a fake clock."""

from __future__ import annotations

import pytest

from runtime.clock import FakeClock
from runtime.tokenbucket import TokenBucket
from runtime.workqueue.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_doubles_per_key_and_caps() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    # controller-runtime's defaults reach the 1000 s cap on the 19th consecutive failure.
    assert delays[17] < 1000.0
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b") == pytest.approx(0.005)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_exponential_survives_huge_failure_counts() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base=1.0, max_delay=5.0
    )
    for _ in range(3000):
        delay = limiter.when("k")
    assert delay == 5.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base": 0.0}, "base must be a positive number"),
        ({"base": float("nan")}, "base must be a positive number"),
        ({"base": 2.0, "max_delay": 1.0}, "max_delay must be a number >= base"),
    ],
)
def test_exponential_rejects_bad_settings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ItemExponentialFailureRateLimiter(**kwargs)


async def test_token_bucket_burst_then_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(4)] == [True, True, True, False]
    assert bucket.time_to_next() == pytest.approx(0.5)
    await clock.advance(0.25)
    assert not bucket.try_take()
    assert bucket.time_to_next() == pytest.approx(0.25)
    await clock.advance(0.25)
    assert bucket.time_to_next() == 0.0
    assert bucket.try_take()
    await clock.advance(100.0)
    assert bucket.tokens() == pytest.approx(3.0)  # never more than the burst


async def test_token_bucket_reserve_goes_into_debt() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=2, clock=clock)
    assert [bucket.reserve() for _ in range(5)] == pytest.approx([0.0, 0.0, 0.1, 0.2, 0.3])
    assert not bucket.try_take()
    assert bucket.time_to_next() == pytest.approx(0.4)
    await clock.advance(0.4)
    assert bucket.try_take()


def test_token_bucket_sees_a_token_at_float_rounded_instants() -> None:
    class Manual:
        t = 0.0

        def now(self) -> float:
            return self.t

        def wall(self) -> float:
            return self.t

        async def sleep(self, seconds: float) -> None:
            raise AssertionError("not used")

    clock = Manual()
    bucket = TokenBucket(rate=3.0, burst=1, clock=clock)
    assert bucket.try_take()
    for _ in range(50):
        clock.t += bucket.time_to_next()
        assert bucket.try_take()


@pytest.mark.parametrize(
    ("rate", "burst", "message"),
    [
        (0.0, 1, "rate must be a positive number"),
        (float("inf"), 1, "rate must be a positive number"),
        (1.0, 0, "burst must be an integer >= 1"),
        (1.0, 1.5, "burst must be an integer >= 1"),
    ],
)
def test_token_bucket_rejects_bad_settings(rate: float, burst: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenBucket(rate=rate, burst=burst)


def test_bucket_limiter_is_global_not_per_key() -> None:
    clock = FakeClock()
    limiter: BucketRateLimiter[str] = BucketRateLimiter(qps=1.0, burst=2, clock=clock)
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == 0.0
    assert limiter.when("c") == pytest.approx(1.0)
    assert limiter.when("a") == pytest.approx(2.0)
    assert limiter.num_requeues("a") == 0
    limiter.forget("a")
    assert limiter.when("z") == pytest.approx(3.0)


def test_max_of_calls_every_child_and_takes_the_max() -> None:
    clock = FakeClock()
    exp: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base=1.0, max_delay=100.0
    )
    bucket: BucketRateLimiter[str] = BucketRateLimiter(qps=1.0, burst=1, clock=clock)
    limiter: RateLimiter[str] = MaxOfRateLimiter(exp, bucket)
    # exp 1, bucket 0 → 1; exp 2, bucket 1 → 2; exp 4, bucket 2 → 4.
    assert [limiter.when("k") for _ in range(3)] == pytest.approx([1.0, 2.0, 4.0])
    # The bucket was charged on every call although its answer never won.
    assert bucket.when("other") == pytest.approx(3.0)
    assert limiter.num_requeues("k") == 3
    limiter.forget("k")
    assert exp.num_requeues("k") == 0


def test_max_of_needs_a_child() -> None:
    with pytest.raises(ValueError, match="at least one limiter"):
        MaxOfRateLimiter[str]()


def test_default_controller_rate_limiter_matches_client_go() -> None:
    clock = FakeClock()
    limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=clock)
    # The first 100 failures across all keys fit in the burst; per key it is 5 ms doubling.
    delays = [limiter.when(f"k{i}") for i in range(100)]
    assert delays == pytest.approx([0.005] * 100)
    assert limiter.when("x") == pytest.approx(0.1)  # bucket: 10 qps once the burst is spent


def test_non_numbers_get_a_clear_error_not_a_type_error() -> None:
    with pytest.raises(ValueError, match="base must be a positive number, got '1'"):
        ItemExponentialFailureRateLimiter(base="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rate must be a positive number, got '5'"):
        TokenBucket(rate="5", burst=1)  # type: ignore[arg-type]
