"""Leader election on fake time, against a small in-memory Lease store that speaks the client's
get/create/update contract (resourceVersion-guarded updates, typed errors)."""

from __future__ import annotations

import asyncio
import copy
import random
import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.clock import FakeClock
from runtime.errors import AlreadyExists, Conflict, NotFound
from runtime.leaderelection import (
    LeaderElectionConfigError,
    LeaderElectionLost,
    LeaderElector,
    format_micro_time,
)
from runtime.resources import LEASES, Resource

NS = "kube-system"
LEASE = "aiolbc-leader"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class LeaseStore:
    """Leases by (namespace, name) with a resourceVersion counter, like the API server."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.writes: list[tuple[str, str, str]] = []  # (client, verb, holderIdentity)
        self.last_write: dict[str, float] = {}  # client → fake time of its last accepted write

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj
        return copy.deepcopy(obj)

    def holder(self) -> str:
        return str(self.objects[(NS, LEASE)]["spec"]["holderIdentity"])


class StoreClient:
    """One process's connection to the store; `cut_off` makes every request hang, like a
    network partition."""

    def __init__(self, store: LeaseStore, who: str) -> None:
        self.store = store
        self.who = who
        self.cut_off = False
        self.conflict_next_updates = 0
        self.timeouts: list[float | None] = []

    async def _gate(self, timeout: float | None) -> None:
        self.timeouts.append(timeout)
        await asyncio.sleep(0)
        if self.cut_off:
            await asyncio.Event().wait()

    async def get(self, res: Resource, name: str, namespace: str | None = None, *,
                  timeout: float | None = None) -> dict[str, Any]:
        assert res == LEASES
        await self._gate(timeout)
        obj = self.store.objects.get((namespace or "", name))
        if obj is None:
            raise NotFound(f'leases.coordination.k8s.io "{name}" not found')
        return copy.deepcopy(obj)

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None, *,
                     timeout: float | None = None) -> dict[str, Any]:
        await self._gate(timeout)
        key = (namespace or "", obj["metadata"]["name"])
        if key in self.store.objects:
            raise AlreadyExists("already exists")
        obj = copy.deepcopy(obj)
        obj["metadata"]["namespace"] = key[0]
        self.store.writes.append((self.who, "create", obj["spec"]["holderIdentity"]))
        self.store.last_write[self.who] = self.store.clock.now()
        return self.store.put(obj)

    async def update(self, res: Resource, obj: dict[str, Any], *,
                     timeout: float | None = None) -> dict[str, Any]:
        await self._gate(timeout)
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        current = self.store.objects.get(key)
        if current is None:
            raise NotFound("not found")
        if self.conflict_next_updates:
            self.conflict_next_updates -= 1
            raise Conflict("the object has been modified")
        if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict("the object has been modified; please apply your changes to the "
                           "latest version and try again")
        self.store.writes.append((self.who, "update", obj["spec"]["holderIdentity"]))
        self.store.last_write[self.who] = self.store.clock.now()
        return self.store.put(obj)


async def settle(rounds: int = 50) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def run_for(clock: FakeClock, seconds: float, *, step: float = 0.05) -> None:
    """Advance fake time in small steps, letting every woken task reach its next sleep."""
    end = clock.now() + seconds
    while clock.now() < end - 1e-9:
        await clock.advance(min(step, end - clock.now()))
        await settle()


class Leading:
    """A guarded workload that records when it started and stopped (on fake time)."""

    def __init__(self, clock: FakeClock, who: str,
                 intervals: list[tuple[str, float, float]]) -> None:
        self.clock = clock
        self.who = who
        self.intervals = intervals
        self.started: float | None = None
        self.cancelled = False

    async def __call__(self, stop: asyncio.Event) -> None:
        self.started = self.clock.now()
        try:
            await stop.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.intervals.append((self.who, self.started, self.clock.now()))


def elector(client: StoreClient, clock: FakeClock, registry: CollectorRegistry,
            **kwargs: Any) -> LeaderElector:
    return LeaderElector(client, name=LEASE, namespace=NS, identity=client.who, clock=clock,
                         registry=registry, rng=random.Random(client.who), **kwargs)


def status(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("leader_election_master_status", {"name": LEASE})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock: FakeClock) -> LeaseStore:
    return LeaseStore(clock)


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"lease_duration": 10.0, "renew_deadline": 10.0},
     "lease duration (10.0s) must be greater than renew deadline (10.0s)"),
    ({"renew_deadline": 2.4, "retry_period": 2.0},
     "renew deadline (2.4s) must be greater than 1.2 x retry period (2.4s)"),
    ({"retry_period": 0.0}, "retry period must be greater than zero"),
    ({"identity": ""}, "the identity must not be empty"),
    ({"name": ""}, "the lease name must not be empty"),
])
def test_invalid_settings_are_rejected_with_one_clear_message(
        kwargs: dict[str, Any], fragment: str, store: LeaseStore) -> None:
    options: dict[str, Any] = {"name": LEASE, "namespace": NS, "identity": "a",
                               "registry": CollectorRegistry()}
    options.update(kwargs)
    with pytest.raises(LeaderElectionConfigError) as info:
        LeaderElector(StoreClient(store, "a"), **options)
    assert fragment in str(info.value)
    assert str(info.value).startswith("invalid leader election settings: ")


def test_defaults_identity_and_request_timeout(store: LeaseStore) -> None:
    e = LeaderElector(StoreClient(store, "a"), name=LEASE, namespace=NS,
                      registry=CollectorRegistry())
    assert (e.lease_duration, e.renew_deadline, e.retry_period) == (15.0, 10.0, 2.0)
    assert e.request_timeout == 5.0
    assert re.fullmatch(r".+_[0-9a-f-]{36}", e.identity)
    short = LeaderElector(StoreClient(store, "a"), name=LEASE, namespace=NS, identity="a",
                          lease_duration=1.5, renew_deadline=1.0, retry_period=0.2,
                          registry=CollectorRegistry())
    assert short.request_timeout == 1.0


def test_micro_time_format() -> None:
    assert format_micro_time(1_700_000_000.123456) == "2023-11-14T22:13:20.123456Z"


async def test_single_candidate_creates_the_lease_and_leads(
        clock: FakeClock, store: LeaseStore) -> None:
    registry = CollectorRegistry()
    client = StoreClient(store, "a")
    started: list[str] = []
    new_leaders: list[str] = []
    e = elector(client, clock, registry, on_started_leading=lambda: started.append("a"),
                on_new_leader=new_leaders.append)
    assert status(registry) == 0
    intervals: list[tuple[str, float, float]] = []
    task = asyncio.create_task(e.run(Leading(clock, "a", intervals)))
    await settle()
    assert e.is_leader
    assert e.leader_identity == "a"
    assert started == ["a"]
    assert new_leaders == ["a"]
    assert status(registry) == 1
    spec = store.objects[(NS, LEASE)]["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"])
    assert MICRO_TIME.match(spec["renewTime"])
    assert set(client.timeouts) == {5.0}

    first_renew = spec["renewTime"]
    await run_for(clock, 2.1)
    spec = store.objects[(NS, LEASE)]["spec"]
    assert spec["renewTime"] != first_renew, "renewed after one retry period"
    assert spec["acquireTime"] == store.objects[(NS, LEASE)]["spec"]["acquireTime"]
    assert spec["leaseTransitions"] == 0
    e.stop()
    await asyncio.wait_for(task, 5)


async def test_two_candidates_exactly_one_leads(clock: FakeClock, store: LeaseStore) -> None:
    registry = CollectorRegistry()
    a = elector(StoreClient(store, "a"), clock, registry)
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry())
    intervals: list[tuple[str, float, float]] = []
    ta = asyncio.create_task(a.run(Leading(clock, "a", intervals)))
    await settle()
    tb = asyncio.create_task(b.run(Leading(clock, "b", intervals)))
    for _ in range(12):
        await run_for(clock, 5.0, step=0.25)
        assert (a.is_leader, b.is_leader) == (True, False)
        assert b.leader_identity == "a"
    assert status(registry) == 1
    assert all(who == "a" for who, _, holder in store.writes if _ == "update")
    a.stop()
    b.stop()
    await asyncio.wait_for(asyncio.gather(ta, tb), 5)


async def test_expiry_is_timed_on_the_local_clock_from_the_observed_change(
        clock: FakeClock, store: LeaseStore) -> None:
    # A lease held by a dead process, with a renewTime decades in the past: a candidate must
    # not trust that timestamp, but wait a full leaseDurationSeconds after first seeing it.
    store.put({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": LEASE, "namespace": NS},
               "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 15,
                        "acquireTime": "2000-01-01T00:00:00.000000Z",
                        "renewTime": "2000-01-01T00:00:00.000000Z", "leaseTransitions": 4}})
    seen: list[str] = []
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry(), on_new_leader=seen.append)
    intervals: list[tuple[str, float, float]] = []
    t0 = clock.now()
    task = asyncio.create_task(b.run(Leading(clock, "b", intervals)))
    await run_for(clock, 14.9)
    assert b.leader_identity == "ghost"
    assert seen == ["ghost"]
    await run_for(clock, 0.1 + 2.0 * 2.2 + 0.1)
    assert b.is_leader
    assert seen == ["ghost", "b"]
    spec = store.objects[(NS, LEASE)]["spec"]
    assert spec["leaseTransitions"] == 5
    assert spec["acquireTime"] != "2000-01-01T00:00:00.000000Z"
    b.stop()
    await asyncio.wait_for(task, 5)
    start_b = next(start for who, start, _ in intervals if who == "b")
    assert t0 + 15.0 <= start_b <= t0 + 15.0 + 2.0 * 2.2 + 0.1


async def test_dead_leader_is_replaced_after_the_lease_duration(
        clock: FakeClock, store: LeaseStore) -> None:
    a = elector(StoreClient(store, "a"), clock, CollectorRegistry(), release_on_cancel=False)
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry())
    intervals: list[tuple[str, float, float]] = []
    ta = asyncio.create_task(a.run(Leading(clock, "a", intervals)))
    await settle()
    tb = asyncio.create_task(b.run(Leading(clock, "b", intervals)))
    await run_for(clock, 3.0)
    last_renew = store.last_write["a"]
    ta.cancel()  # no release: b must wait out the lease
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(ta, 5)
    assert store.holder() == "a"
    await run_for(clock, 30.0, step=0.1)
    assert b.is_leader
    b.stop()
    await asyncio.wait_for(tb, 5)
    b_start = next(start for who, start, _ in intervals if who == "b")
    # b first sees a's last renewal at its next poll (≤ 4.4 s later), waits the full 15 s from
    # then on its own clock, and acquires at the poll after that.
    assert last_renew + 15.0 <= b_start <= last_renew + 15.0 + 2 * (2.0 * 2.2) + 0.2


async def test_graceful_stop_releases_after_the_work_stopped_and_successor_takes_over(
        clock: FakeClock, store: LeaseStore) -> None:
    events: list[str] = []
    registry = CollectorRegistry()
    a = elector(StoreClient(store, "a"), clock, registry,
                on_stopped_leading=lambda: events.append("stopped-leading"))
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry())

    async def slow_wind_down(stop: asyncio.Event) -> None:
        await stop.wait()
        await clock.sleep(3.0)  # draining workers keeps the lease renewed meanwhile
        events.append(f"work-stopped holder={store.holder()}")

    ta = asyncio.create_task(a.run(slow_wind_down))
    await settle()
    intervals: list[tuple[str, float, float]] = []
    tb = asyncio.create_task(b.run(Leading(clock, "b", intervals)))
    await run_for(clock, 4.0)
    a.stop()
    await run_for(clock, 3.1)
    await asyncio.wait_for(ta, 5)
    assert events == ["work-stopped holder=a", "stopped-leading"]
    spec = store.objects[(NS, LEASE)]["spec"]
    assert b.is_leader or (spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1)
    assert status(registry) == 0
    assert not a.is_leader
    released_at = clock.now()
    await run_for(clock, 2.0 * 2.2 + 0.1)
    assert b.is_leader
    b.stop()
    await asyncio.wait_for(tb, 5)
    start_b = next(start for who, start, _ in intervals if who == "b")
    assert start_b <= released_at + 2.0 * 2.2 + 0.1
    assert ("a", "update", "") in store.writes


async def test_cancelling_run_is_a_graceful_stop_with_release(
        clock: FakeClock, store: LeaseStore) -> None:
    a = elector(StoreClient(store, "a"), clock, CollectorRegistry())
    intervals: list[tuple[str, float, float]] = []
    leading = Leading(clock, "a", intervals)
    task = asyncio.create_task(a.run(leading))
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert not leading.cancelled, "the work was asked to stop, not killed"
    assert store.holder() == ""
    assert store.objects[(NS, LEASE)]["spec"]["leaseDurationSeconds"] == 1


async def test_release_on_cancel_false_keeps_the_holder(
        clock: FakeClock, store: LeaseStore) -> None:
    a = elector(StoreClient(store, "a"), clock, CollectorRegistry(), release_on_cancel=False)
    task = asyncio.create_task(a.run(Leading(clock, "a", [])))
    await settle()
    a.stop()
    await asyncio.wait_for(task, 5)
    assert store.holder() == "a"


async def test_cut_off_leader_stops_before_anyone_else_can_lead(
        clock: FakeClock, store: LeaseStore) -> None:
    registry = CollectorRegistry()
    client_a = StoreClient(store, "a")
    a = elector(client_a, clock, registry)
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry())
    intervals: list[tuple[str, float, float]] = []
    leading_a = Leading(clock, "a", intervals)
    ta = asyncio.create_task(a.run(leading_a))
    await settle()
    tb = asyncio.create_task(b.run(Leading(clock, "b", intervals)))
    await run_for(clock, 5.0)
    last_renew = store.last_write["a"]
    client_a.cut_off = True
    await run_for(clock, 13.0)
    assert ta.done()
    with pytest.raises(LeaderElectionLost, match="leader election lost"):
        await asyncio.wait_for(ta, 5)
    assert leading_a.cancelled
    assert status(registry) == 0
    assert not a.is_leader
    end_a = next(end for who, _, end in intervals if who == "a")
    assert end_a <= last_renew + 2.0 + 10.0 + 0.1
    await run_for(clock, 10.0, step=0.1)
    assert b.is_leader
    b.stop()
    await asyncio.wait_for(tb, 5)
    start_b = next(start for who, start, _ in intervals if who == "b")
    assert end_a < start_b, f"leaders overlapped: {intervals}"
    assert max(t for t in client_a.timeouts if t is not None) <= 5.0


async def test_a_hung_request_is_bounded_by_the_request_timeout(
        clock: FakeClock, store: LeaseStore) -> None:
    client = StoreClient(store, "a")
    client.cut_off = True
    a = elector(client, clock, CollectorRegistry())
    task = asyncio.create_task(a.run(Leading(clock, "a", [])))
    await settle()
    await run_for(clock, 4.9)
    assert len(client.timeouts) == 1, "still waiting on the first GET"
    await run_for(clock, 0.2 + 2.0 * 2.2)
    assert len(client.timeouts) == 2, "first GET timed out at 5 s, retried after the period"
    a.stop()
    await run_for(clock, 0.1)
    await asyncio.wait_for(task, 5)


async def test_conflicting_writer_wins_and_the_loser_steps_down(
        clock: FakeClock, store: LeaseStore) -> None:
    registry = CollectorRegistry()
    a = elector(StoreClient(store, "a"), clock, registry)
    intervals: list[tuple[str, float, float]] = []
    leading = Leading(clock, "a", intervals)
    task = asyncio.create_task(a.run(leading))
    await settle()
    # Another writer takes the lease; a's cached resourceVersion is now stale.
    lease = copy.deepcopy(store.objects[(NS, LEASE)])
    lease["spec"]["holderIdentity"] = "intruder"
    store.put(lease)
    intruded = clock.now()
    for _ in range(7):
        await run_for(clock, 2.0)
        # Keep the intruder's lease fresh so a never sees it expire.
        lease = copy.deepcopy(store.objects[(NS, LEASE)])
        lease["spec"]["renewTime"] = format_micro_time(clock.wall())
        store.put(lease)
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(task, 5)
    assert leading.cancelled
    # It stepped down at its first renewal after the takeover, not at the renew deadline.
    (_, _, end), = intervals
    assert end <= intruded + 2.0 + 0.1
    assert store.holder() == "intruder"
    assert not any(w == ("a", "update", "a") for w in store.writes[1:])
    assert status(registry) == 0


async def test_a_single_conflict_is_retried_and_leadership_kept(
        clock: FakeClock, store: LeaseStore) -> None:
    client = StoreClient(store, "a")
    a = elector(client, clock, CollectorRegistry())
    task = asyncio.create_task(a.run(Leading(clock, "a", [])))
    await settle()
    client.conflict_next_updates = 1
    await run_for(clock, 2.1)
    assert a.is_leader
    assert client.conflict_next_updates == 0
    assert sum(1 for w in store.writes if w == ("a", "update", "a")) == 1
    a.stop()
    await asyncio.wait_for(task, 5)


async def test_leading_exception_propagates_after_release(
        clock: FakeClock, store: LeaseStore) -> None:
    a = elector(StoreClient(store, "a"), clock, CollectorRegistry())

    async def broken(stop: asyncio.Event) -> None:
        raise RuntimeError("controller failed to start")

    with pytest.raises(RuntimeError, match="controller failed to start"):
        await a.run(broken)
    assert store.holder() == ""


async def test_stop_before_acquiring_returns_without_leading(
        clock: FakeClock, store: LeaseStore) -> None:
    other = StoreClient(store, "other")
    await other.create(LEASES, {"metadata": {"name": LEASE}, "spec": {
        "holderIdentity": "other", "leaseDurationSeconds": 15}}, NS)
    calls: list[str] = []

    async def never(stop: asyncio.Event) -> None:
        calls.append("leading")

    b = elector(StoreClient(store, "b"), clock, CollectorRegistry())
    task = asyncio.create_task(b.run(never))
    await run_for(clock, 3.0)
    b.stop()
    await settle()
    assert task.done()
    assert task.result() is None
    assert calls == []
    assert store.holder() == "other"


class StalledClock(FakeClock):
    """Time passes but sleepers never wake: a renew loop stuck behind a blocked event loop."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()

    def jump(self, seconds: float) -> None:
        self._now += seconds


async def test_healthz_fails_when_the_leader_stopped_renewing(store: LeaseStore) -> None:
    clock = StalledClock()
    a = elector(StoreClient(store, "a"), clock, CollectorRegistry())
    check = a.healthz_check(timeout=20.0)
    check()  # not leading: healthy
    task = asyncio.create_task(a.run(Leading(clock, "a", [])))
    await settle()
    assert a.is_leader
    clock.jump(34.0)
    check()
    clock.jump(2.0)
    with pytest.raises(RuntimeError, match=f"failed election to renew leadership on lease "
                                           f"{NS}/{LEASE}"):
        check()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_callbacks_and_metric_follow_leadership(
        clock: FakeClock, store: LeaseStore) -> None:
    registry = CollectorRegistry()
    transitions: list[str] = []
    observed: list[str] = []

    async def record_new_leader(identity: str) -> None:
        observed.append(identity)

    client_a = StoreClient(store, "a")
    a = elector(client_a, clock, registry, on_started_leading=lambda: transitions.append("up"),
                on_stopped_leading=lambda: transitions.append("down"))
    b = elector(StoreClient(store, "b"), clock, CollectorRegistry(),
                on_new_leader=record_new_leader)
    ta = asyncio.create_task(a.run(Leading(clock, "a", [])))
    await settle()
    tb = asyncio.create_task(b.run(Leading(clock, "b", [])))
    await run_for(clock, 1.0)
    assert status(registry) == 1
    assert transitions == ["up"]
    client_a.cut_off = True
    await run_for(clock, 13.0)
    assert transitions == ["up", "down"]
    assert status(registry) == 0
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(ta, 5)
    await run_for(clock, 10.0, step=0.1)
    assert observed == ["a", "b"]
    b.stop()
    await asyncio.wait_for(tb, 5)
