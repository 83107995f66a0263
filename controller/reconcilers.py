"""The reconcile toolkit every controller uses, so that the three take the same steps the same
way: read -> qualify -> build (pure stage) -> checkpoint/priority -> finalizer -> deploy ->
status -> checkpoint.

- `LaneSettings`: how unchanged objects are told apart and verified after a restart, and
  `Workers`: how many reconciles run at once and how failures back off; both nested in each
  controller's settings; `controller_options` turns them into the controller's options (a
  paced LOW lane gated on the AWS pool's verification budget).
- `ObjectWriter`: the writes a reconciler makes to its own kind — merge patches (several parts
  for one object in one PATCH), finalizers added or removed only when that changes anything,
  Events, and the status condition with which a failure is reported.
- `report_failure`: a failure as one Warning Event (the full text, request ids included) and one
  status condition whose message is stable (request ids and timestamps removed), so that a
  retry that fails the same way writes nothing and wakes nobody.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from controller.defaults import DEFAULT_MAX_BACKOFF, DEFAULT_MAX_CONCURRENT_RECONCILES
from runtime.client import KubeClient
from runtime.clock import Clock
from runtime.controller import ControllerOptions
from runtime.errors import NotFound
from runtime.objects import Obj, finalizers, meta, name_of, namespace_of
from runtime.resources import Resource
from runtime.statusconditions import find_condition, set_condition
from runtime.workqueue import LaneGate, LowLaneOptions, QueueOptions

log = structlog.get_logger("reconcilers")


@dataclass(frozen=True, slots=True, kw_only=True)
class LaneSettings:
    """`checkpoints`: tell unchanged objects apart at all (False: every replayed object is
    reconciled at full speed, as upstream does). `lane`: put them in the paced LOW lane (False:
    a matching checkpoint only makes the reconcile skip, every event NORMAL, one FIFO — upstream's
    unmerged prototype, kept to measure what the lane adds). `verify_qps`/`verify_burst`: the
    lane's pace (qps None: unpaced); `verify_max_wait`: a verification never waits longer (None:
    no limit)."""

    checkpoints: bool = True
    lane: bool = True
    verify_qps: float | None = 2.0
    verify_burst: int = 5
    verify_max_wait: float | None = 600.0

    @property
    def low_lane_qps(self) -> float | None:
        """The pace of the queue's LOW lane; None (unpaced) when nothing is ever LOW."""
        return self.verify_qps if self.checkpoints and self.lane else None

    @property
    def prioritised(self) -> bool:
        """Whether the event handlers send matching objects to the LOW lane."""
        return self.checkpoints and self.lane


# More workers than this is a typing slip, not a tuning choice: each one is a task.
MAX_CONCURRENT_RECONCILES = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Workers:
    """`max_concurrent_reconciles`: the controller's workers (`--<kind>-max-concurrent-
    reconciles`); `max_backoff`: the longest wait before a failed object is retried."""

    max_concurrent_reconciles: int = DEFAULT_MAX_CONCURRENT_RECONCILES
    max_backoff: float = DEFAULT_MAX_BACKOFF


def controller_options(lanes: LaneSettings, workers: Workers, *,
                       gate: LaneGate | None = None) -> ControllerOptions:
    """A paced LOW lane also waits for `gate` (the AWS pool's verification budget, shared by
    every controller) and never holds more than all workers but one, so a real change always
    finds a worker even while verifications wait for the budget."""
    qps = lanes.low_lane_qps
    paced = qps is not None
    max_wait = lanes.verify_max_wait
    max_concurrent_reconciles = workers.max_concurrent_reconciles
    return ControllerOptions(
        max_concurrent_reconciles=max_concurrent_reconciles,
        queue=QueueOptions(max_backoff=workers.max_backoff, low_lane=LowLaneOptions(
            qps=qps, burst=lanes.verify_burst,
            max_wait=math.inf if max_wait is None else max_wait,
            gate=gate if paced else None,
            max_in_flight=max(1, max_concurrent_reconciles - 1) if paced else None)))


class Recorder(Protocol):
    def event(self, obj: Obj, type: str, reason: str, message: str, *,
              resource: Resource | None = None) -> None: ...


# Request ids (AWS and Kubernetes), ISO timestamps and hex ids of 16+ digits: what makes the
# text of one failure differ from the text of the same failure a moment later.
_VOLATILE = re.compile(
    r"(request id:?\s*[0-9a-f-]{8,}|RequestId:?\s*[0-9a-f-]{8,}"
    r"|\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z?\b"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)", re.IGNORECASE)


def stable_message(message: str) -> str:
    """`message` without what changes from one occurrence to the next (request ids, times)."""
    return " ".join(_VOLATILE.sub("…", message).split())


def condition_patch(obj: Mapping[str, Any], *, type: str, ready: bool, reason: str,
                    message: str, now: float, observed_generation_in_status: bool = False
                    ) -> Obj | None:
    """Merge patch for the status subresource setting condition `type`, or None when the
    object already says exactly that."""
    wanted = "True" if ready else "False"
    generation = meta(obj).get("generation")
    raw_status = obj.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    current = find_condition(dict(obj), type)
    same = (current is not None and current.get("status") == wanted
            and current.get("reason") == reason and current.get("message") == message
            and current.get("observedGeneration") == generation)
    if same and (not observed_generation_in_status
                 or status.get("observedGeneration") == generation):
        return None
    body: Obj = {"conditions": set_condition(
        status.get("conditions"), type=type, status=wanted, reason=reason, message=message,
        observed_generation=generation if isinstance(generation, int) else None, now=now)}
    if observed_generation_in_status:
        body["observedGeneration"] = generation
    return {"status": body}


class ObjectWriter:
    """Writes to objects of one kind, as one reconciler makes them."""

    def __init__(self, client: KubeClient, resource: Resource, recorder: Recorder,
                 clock: Clock) -> None:
        self.client = client
        self.resource = resource
        self.recorder = recorder
        self.clock = clock

    async def patch(self, obj: Obj, body: Obj, *, subresource: str | None = None) -> Obj:
        """Merge patch; returns the object as the API server answered it."""
        return await self.client.patch(
            self.resource, name_of(obj), body,
            namespace_of(obj) if self.resource.namespaced else None, subresource=subresource)

    async def patch_metadata(self, obj: Obj, *, add_finalizer: str | None = None,
                             remove_finalizer: str | None = None,
                             annotations: Mapping[str, str | None] | None = None) -> Obj:
        """One PATCH for everything a pass changes in the object's metadata: a finalizer added
        or removed (guarded by the resourceVersion, as controllerutil does) and annotations.
        Nothing is written when nothing would change."""
        current = finalizers(obj)
        wanted = list(current)
        if add_finalizer is not None and add_finalizer not in wanted:
            wanted.append(add_finalizer)
        if remove_finalizer is not None:
            wanted = [f for f in wanted if f != remove_finalizer]
        have = meta(obj).get("annotations")
        have = have if isinstance(have, dict) else {}
        changes = {k: v for k, v in (annotations or {}).items() if have.get(k) != v}
        body: Obj = {}
        if wanted != current:
            body["finalizers"] = wanted
            body["resourceVersion"] = meta(obj).get("resourceVersion")
        if changes:
            body["annotations"] = changes
        if not body:
            return obj
        return await self.patch(obj, {"metadata": body})

    async def patch_status(self, obj: Obj, body: Obj | None) -> Obj:
        if body is None:
            return obj
        return await self.patch(obj, body, subresource="status")

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.recorder.event(obj, type, reason, message, resource=self.resource)

    async def report_failure(self, obj: Obj, *, event_reason: str, message: str,
                             condition: Callable[[Obj, str], Obj | None] | None) -> None:
        """One Warning Event with the full `message`; the condition (built by `condition(obj,
        stable message)`) with its stable form. A failed status write is logged, never raised:
        the Event already carries the message."""
        self.event(obj, "Warning", event_reason, message)
        if condition is None:
            return
        body = condition(obj, stable_message(message))
        if body is None:
            return
        try:
            await self.patch_status(obj, body)
        except NotFound:
            return
        except Exception as exc:
            log.warning("could not write the status condition", error=str(exc),
                        resource=self.resource.plural, name=name_of(obj))


__all__ = [
    "MAX_CONCURRENT_RECONCILES",
    "LaneSettings",
    "ObjectWriter",
    "Recorder",
    "Workers",
    "condition_patch",
    "controller_options",
    "stable_message",
]
