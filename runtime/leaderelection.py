"""Lease-based leader election (coordination.k8s.io/v1), client-go's algorithm.

Safety rests on three rules taken from client-go and controller-runtime:

* Lease timestamps are never compared with local time. A candidate only notices that the lease
  record *changed* and times its expiry on its own monotonic clock from that moment, so constant
  clock skew between replicas does not matter.
* Every request is bounded (`max(renew_deadline / 2, 1)` seconds) and the leader gives up when no
  renewal succeeded within `renew_deadline`, which is shorter than the `lease_duration` others
  wait: a leader cut off from the API server stops its guarded work before anyone else may
  start it (kubernetes#44887 was a renew that hung past the lease).
* The lease is released (empty holder) only after the guarded work has stopped.

There is no fencing: correctness depends on the timings above, as upstream.

A Manager uses `run(leading)`: `leading(stop)` starts the controllers and returns once `stop`
is set. Losing the lease cancels `leading` at once and raises `LeaderElectionLost` (exit
non-zero). `stop()` or cancelling `run` is the graceful path: `stop` is set, the lease keeps being
renewed while `leading` winds down, then the lease is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from runtime import metrics
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, Conflict, NotFound
from runtime.leaselock import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    LeaderElectionConfigError,
    LeaderElectionRecord,
    LeaseClient,
    default_identity,
    format_micro_time,
    new_lease,
    validate_settings,
)
from runtime.resources import LEASES

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LeaderElectionConfigError",
    "LeaderElectionLost",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseClient",
    "default_identity",
    "format_micro_time",
]

# controller-runtime's NewLeaderHealthzAdaptor timeout when the manager wires the check.
DEFAULT_HEALTHZ_TIMEOUT = 20.0

_T = TypeVar("_T")
log = structlog.get_logger("leaderelection")


class LeaderElectionLost(RuntimeError):
    """The lease could not be renewed within the renew deadline; the guarded work was stopped.
    The process should exit non-zero, as controller-runtime's manager does."""


class LeaderElector:
    """Competes for one Lease; see the module docstring for the lifecycle.

    `on_started_leading()` and `on_stopped_leading()` are called synchronously around the guarded
    work; `on_new_leader(identity)` whenever the observed holder changes (a coroutine result is
    scheduled as a task).
    """

    def __init__(
        self,
        client: LeaseClient,
        *,
        name: str,
        namespace: str,
        identity: str | None = None,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        renew_deadline: float = DEFAULT_RENEW_DEADLINE,
        retry_period: float = DEFAULT_RETRY_PERIOD,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        registry: CollectorRegistry | None = None,
        release_on_cancel: bool = True,
        on_started_leading: Callable[[], object] | None = None,
        on_stopped_leading: Callable[[], object] | None = None,
        on_new_leader: Callable[[str], object] | None = None,
    ) -> None:
        identity = default_identity() if identity is None else identity
        validate_settings(name=name, namespace=namespace, identity=identity,
                  lease_duration=lease_duration, renew_deadline=renew_deadline,
                  retry_period=retry_period)
        self._client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        # One hung request must not eat the whole renew deadline (controller-runtime's client
        # timeout for leader election).
        self.request_timeout = max(renew_deadline / 2, 1.0)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rng = rng if rng is not None else random.Random()
        self._release_on_cancel = release_on_cancel
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        registry = registry if registry is not None else metrics.default_registry()
        self._status = metrics.gauge(
            registry, "leader_election_master_status",
            "Gauge of if the reporter is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease. Please make "
            "sure to group by name.", ["name"]).labels(name=name)
        self._status.set(0)

        self._lease: dict[str, Any] | None = None     # last Lease seen or written
        self._observed: LeaderElectionRecord | None = None
        self._observed_time = 0.0                     # local monotonic time of the last change
        self._last_success_start = 0.0                # when the last successful attempt began
        self._is_leader = False
        self._reported_leader: str | None = None
        self._stop = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()

    # -- observation ---------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def leader_identity(self) -> str | None:
        """The holder this process last observed, or None when unknown or released."""
        if self._observed is None or not self._observed.holder_identity:
            return None
        return self._observed.holder_identity

    def check_health(self, *, timeout: float = DEFAULT_HEALTHZ_TIMEOUT) -> None:
        """Raise if this process believes it leads but has not renewed for longer than
        lease_duration + timeout: a stuck renew loop that would otherwise go unnoticed."""
        if not self._is_leader:
            return
        age = self._clock.now() - self._observed_time
        if age > self.lease_duration + timeout:
            raise RuntimeError(
                f"failed election to renew leadership on lease {self.namespace}/{self.name}")

    def healthz_check(self, *, timeout: float = DEFAULT_HEALTHZ_TIMEOUT) -> Callable[[], None]:
        """A check for `ProbeServer.add_healthz_check("leaderElection", ...)`."""
        def check() -> None:
            self.check_health(timeout=timeout)
        return check

    # -- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for a graceful stop: stop acquiring, or tell the guarded work to wind down and
        release the lease once it has returned."""
        self._stop.set()

    async def run(self, leading: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        """Acquire the lease, run `leading(stop)` while holding it, and return after a graceful
        stop (the lease released). Raises `LeaderElectionLost` if renewal failed; `leading` has
        then been cancelled and awaited. An exception from `leading` propagates after release."""
        try:
            acquired = await self._acquire()
        except asyncio.CancelledError:
            self._stop.set()
            raise
        if not acquired:
            return
        if self._stop.is_set():
            # Stopped while the winning request was in flight: hand the lease straight back.
            if self._release_on_cancel:
                await self._release()
            self._set_leader(False)
            return
        self._call(self._on_started_leading)
        leading_task: asyncio.Task[None] = asyncio.ensure_future(leading(self._stop))
        renew_task = asyncio.create_task(self._renew(), name=f"lease-renew-{self.name}")
        cancelled = False
        try:
            while True:
                try:
                    await asyncio.wait({leading_task, renew_task},
                                       return_when=asyncio.FIRST_COMPLETED)
                    break
                except asyncio.CancelledError:
                    # Graceful path: the work winds down while the lease is still renewed.
                    cancelled = True
                    self._stop.set()
            if renew_task.done():
                # Renewal failed: stop all guarded work at once, no grace period.
                if not leading_task.done():
                    leading_task.cancel()
                    await asyncio.wait({leading_task})
                self._set_leader(False)
                self._call(self._on_stopped_leading)
                cause = None if renew_task.cancelled() else renew_task.exception()
                raise LeaderElectionLost(
                    f"leader election lost: lease {self.namespace}/{self.name} was not renewed "
                    f"within {self.renew_deadline}s or was taken over") from cause
            renew_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renew_task
            if self._release_on_cancel:
                await self._release()
            self._set_leader(False)
            self._call(self._on_stopped_leading)
            if cancelled:
                raise asyncio.CancelledError
            leading_task.result()
        finally:
            if not renew_task.done():
                renew_task.cancel()

    # -- the algorithm -------------------------------------------------------------------------

    async def _acquire(self) -> bool:
        """Try every retry_period (jittered) until the lease is ours or a stop is requested."""
        log.info("attempting to acquire leader lease", lease=f"{self.namespace}/{self.name}",
                 identity=self.identity)
        while not self._stop.is_set():
            # A stop must not wait out an in-flight request (up to request_timeout).
            attempt = asyncio.ensure_future(self._try_acquire_or_renew())
            stopper = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({attempt, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopper.cancel()
                if not attempt.done():
                    attempt.cancel()
                    await asyncio.wait({attempt})
            if not attempt.cancelled() and attempt.result():
                log.info("successfully acquired lease", lease=f"{self.namespace}/{self.name}",
                         identity=self.identity)
                return True
            # client-go's wait.Jitter: retry_period plus up to JITTER_FACTOR times as much again.
            delay = self.retry_period * (1 + self._rng.random() * JITTER_FACTOR)
            if await self._sleep_or_stop(delay):
                break
        return False

    async def _renew(self) -> None:
        """Returns only when leadership is lost: no renewal succeeded within renew_deadline."""
        while True:
            # The deadline is anchored to when the last successful renewal was *sent*, so a late
            # wake-up of this task cannot stretch leadership past what others will wait.
            deadline = self._last_success_start + self.retry_period + self.renew_deadline
            await self._clock.sleep(self._last_success_start + self.retry_period
                                    - self._clock.now())
            while True:
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    log.warning("failed to renew lease", lease=f"{self.namespace}/{self.name}",
                                identity=self.identity)
                    self._set_leader(False)
                    return
                if await self._try_acquire_or_renew(budget=remaining):
                    break
                holder = self.leader_identity
                if holder is not None and holder != self.identity:
                    # Someone else holds a valid lease: it may already be acting, so waiting
                    # out the deadline (as client-go does) would only prolong two leaders.
                    log.warning("lease taken over by another holder", holder=holder,
                                lease=f"{self.namespace}/{self.name}")
                    self._set_leader(False)
                    return
                await self._clock.sleep(min(self.retry_period, deadline - self._clock.now()))

    async def _try_acquire_or_renew(self, *, budget: float | None = None) -> bool:
        start = self._clock.now()
        timeout = self.request_timeout if budget is None else min(self.request_timeout, budget)
        now_wall = format_micro_time(self._clock.wall())
        desired = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, math.ceil(self.lease_duration)),
            acquire_time=now_wall,
            renew_time=now_wall,
        )

        # Fast path: still leader and the lease locally valid → PUT from the cached copy.
        if (self._is_leader and self._lease is not None and self._observed is not None
                and self._lease_valid(start)):
            renewed = LeaderElectionRecord(
                holder_identity=self.identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=self._observed.acquire_time,
                renew_time=now_wall,
                lease_transitions=self._observed.lease_transitions,
            )
            try:
                await self._update(renewed, timeout=timeout, start=start)
                return True
            except (ApiError, TimeoutError) as err:
                log.debug("lease fast-path renew failed, falling back", error=str(err))

        try:
            lease = await self._bounded(
                self._client.get(LEASES, self.name, self.namespace, timeout=timeout),
                timeout - (self._clock.now() - start))
        except NotFound:
            try:
                lease = await self._bounded(
                    self._client.create(LEASES, new_lease(self.name, self.namespace, desired),
                                        self.namespace, timeout=timeout),
                    timeout - (self._clock.now() - start))
            except (ApiError, TimeoutError) as err:
                log.info("error initially creating leader election record", error=str(err))
                return False
            self._observe(lease, start)
            self._last_success_start = start
            self._set_leader(True)
            return True
        except (ApiError, TimeoutError) as err:
            log.info("error retrieving lease", lease=f"{self.namespace}/{self.name}",
                     error=str(err))
            return False

        self._observe(lease, self._clock.now())
        assert self._observed is not None
        observed = self._observed
        if (observed.holder_identity and observed.holder_identity != self.identity
                and self._lease_valid(self._clock.now())):
            self._set_leader(False)
            return False

        if observed.holder_identity == self.identity:
            record = LeaderElectionRecord(
                holder_identity=self.identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=observed.acquire_time or now_wall,
                renew_time=now_wall,
                lease_transitions=observed.lease_transitions,
            )
        else:
            record = LeaderElectionRecord(
                holder_identity=self.identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=now_wall,
                renew_time=now_wall,
                lease_transitions=observed.lease_transitions + 1,
            )
        try:
            await self._update(record, timeout=timeout - (self._clock.now() - start),
                               start=start)
        except (ApiError, TimeoutError) as err:
            log.info("failed to update lease", lease=f"{self.namespace}/{self.name}",
                     error=str(err))
            return False
        return True

    async def _update(self, record: LeaderElectionRecord, *, timeout: float,
                      start: float) -> None:
        """resourceVersion-guarded PUT from the cached Lease; a competing writer gets 409."""
        assert self._lease is not None
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.to_spec()}}
        updated = await self._bounded(self._client.update(LEASES, lease, timeout=timeout),
                                      timeout)
        self._observe(updated, self._clock.now())
        self._last_success_start = start
        self._set_leader(updated.get("spec", {}).get("holderIdentity") == self.identity)

    async def _release(self) -> None:
        """Hand the lease back (empty holder, 1 s duration) so a successor need not wait out the
        lease. Conflicts are retried against a fresh read within renew_deadline."""
        if not self._is_leader or self._lease is None or self._observed is None:
            return
        deadline = self._clock.now() + self.renew_deadline
        while True:
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                log.warning("giving up releasing lease", lease=f"{self.namespace}/{self.name}")
                return
            now_wall = format_micro_time(self._clock.wall())
            record = LeaderElectionRecord(
                holder_identity="", lease_duration_seconds=1, acquire_time=now_wall,
                renew_time=now_wall, lease_transitions=self._observed.lease_transitions)
            timeout = min(self.request_timeout, remaining)
            try:
                await self._update(record, timeout=timeout, start=self._clock.now())
                log.info("released lease", lease=f"{self.namespace}/{self.name}")
                return
            except Conflict:
                try:
                    lease = await self._bounded(
                        self._client.get(LEASES, self.name, self.namespace, timeout=timeout),
                        timeout)
                except (ApiError, TimeoutError) as err:
                    log.info("error retrieving lease for release", error=str(err))
                    await self._clock.sleep(min(self.retry_period, remaining))
                    continue
                self._observe(lease, self._clock.now())
                if self._observed.holder_identity != self.identity:
                    return  # someone else holds it now; nothing of ours to release
            except (ApiError, TimeoutError) as err:
                log.info("error releasing lease", error=str(err))
                await self._clock.sleep(min(self.retry_period, remaining))

    # -- internals -----------------------------------------------------------------------------

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        record = LeaderElectionRecord.from_lease(lease)
        self._lease = lease
        if record != self._observed:
            self._observed = record
            self._observed_time = now
        if record.holder_identity != self._reported_leader:
            self._reported_leader = record.holder_identity
            if record.holder_identity:
                log.info("new leader observed", leader=record.holder_identity,
                         lease=f"{self.namespace}/{self.name}")
                if self._on_new_leader is not None:
                    result = self._on_new_leader(record.holder_identity)
                    if inspect.isawaitable(result):
                        task = asyncio.ensure_future(result)
                        self._background.add(task)
                        task.add_done_callback(self._background.discard)

    def _lease_valid(self, now: float) -> bool:
        assert self._observed is not None
        duration = self._observed.lease_duration_seconds or self.lease_duration
        return self._observed_time + duration > now

    def _set_leader(self, leading: bool) -> None:
        self._is_leader = leading
        self._status.set(1 if leading else 0)

    async def _bounded(self, coro: Coroutine[Any, Any, _T], seconds: float) -> _T:
        """Await `coro` for at most `seconds` of the injected clock (TimeoutError after)."""
        task = asyncio.ensure_future(coro)
        if seconds <= 0:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise TimeoutError
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.cancelled():
            raise TimeoutError
        return task.result()

    async def _sleep_or_stop(self, seconds: float) -> bool:
        """Sleep on the injected clock; True if a stop was requested meanwhile."""
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        stopper = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            stopper.cancel()
        return self._stop.is_set()

    @staticmethod
    def _call(callback: Callable[[], object] | None) -> None:
        if callback is not None:
            callback()
