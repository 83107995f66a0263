"""The TargetGroupBinding reconciler: converge a target group's targets to the binding's
Service endpoints.

One reconcile:
1. deletion → deregister what this controller owns (everything, or only the tracked targets of
   a multi-cluster binding), delete the tracking ConfigMap, drop the finalizer;
2. parse the spec, find the Service port and the target group (bad input → Warning Event,
   `Ready=False` condition, terminal error: no AWS call, not retried until the object changes);
3. compute the desired targets from the caches and the checkpoint over them; a match on a
   normal-priority reconcile makes no AWS call at all; a LOW-priority reconcile (the paced
   verification of a restart) always looks at AWS and repairs drift;
4. diff against DescribeTargetHealth; reset the checkpoint to "" before touching targets;
   deregister (multi-cluster: only tracked targets), record the tracked set, register;
   then write the new checkpoint and status.
"""

from __future__ import annotations

from typing import Any, Protocol

import structlog

from controller.apis import TARGETGROUPBINDING_FINALIZER, TARGETGROUPBINDINGS
from controller.apis.targetgroupbinding import InvalidSpec, TargetGroupBindingSpec, parse_spec
from controller.aws import AWSError
from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.multicluster import (
    TargetTracker,
    configmap_name,
    deregistrable,
)
from controller.targetgroupbinding.targetgroups import TargetGroupInfo, TargetGroups
from controller.targetgroupbinding.targets import (
    Endpoint,
    Target,
    find_service_port,
    instance_endpoints,
    ip_endpoints,
)
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.conditions import find_condition, set_condition
from runtime.controller import ReconcileError, Result, TerminalError, reconcile_priority
from runtime.errors import ApiError, NotFound
from runtime.handlers import EventKind, Request
from runtime.store import Store
from runtime.workqueue import LOW, NORMAL

Obj = dict[str, Any]
READY = "Ready"

SERVICE_INDEX = "service"  # TGB → "namespace/service name"
TARGET_TYPE_INDEX = "targetType"  # TGB → spec.targetType ("" when inferred)
SLICE_SERVICE_INDEX = "service"  # EndpointSlice → "namespace/service name"

log = structlog.get_logger("targetgroupbinding")


class Recorder(Protocol):
    def event(self, obj: Obj, type: str, reason: str, message: str) -> None: ...


def tgb_service_index(obj: Obj) -> list[str]:
    ref = ((obj.get("spec") or {}).get("serviceRef") or {}).get("name")
    ns = (obj.get("metadata") or {}).get("namespace")
    return [f"{ns}/{ref}"] if ref and ns else []


def tgb_target_type_index(obj: Obj) -> list[str]:
    return [str((obj.get("spec") or {}).get("targetType") or "")]


def slice_service_index(obj: Obj) -> list[str]:
    meta = obj.get("metadata") or {}
    svc = (meta.get("labels") or {}).get("kubernetes.io/service-name")
    return [f"{meta.get('namespace')}/{svc}"] if svc else []


class TargetGroupBindingReconciler:
    def __init__(self, *, client: KubeClient, bindings: Store, services: Store, slices: Store,
                 nodes: Store, target_groups: TargetGroups, tracker: TargetTracker,
                 recorder: Recorder, clock: Clock | None = None,
                 checkpoints: bool = True) -> None:
        self._client = client
        self._bindings = bindings
        self._services = services
        self._slices = slices
        self._nodes = nodes
        self._target_groups = target_groups
        self._tracker = tracker
        self._recorder = recorder
        self._clock = clock or RealClock()
        # Off: every reconcile looks at AWS and nothing is deferred (upstream before v2.9.1).
        self._checkpoints = checkpoints
        # resourceVersions our own writes produced during the running reconcile of a key, and,
        # once its checkpoint is written, that checkpoint with those versions. The reset patch
        # wakes the key again while it is in flight; if the cache still shows the reset state
        # when it runs, the checkpoint we wrote right after is the truth, not "".
        self._own_versions: dict[str, set[str]] = {}
        self._written: dict[str, tuple[str, frozenset[str]]] = {}

    # ---- event mapping (pure cache reads: handlers never do I/O) ---------------------------

    def bindings_for_service(self, obj: Obj) -> list[Request]:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        return [Request.for_object(b) for b in self._bindings.by_index(SERVICE_INDEX, key)]

    def bindings_for_slice(self, obj: Obj) -> list[Request]:
        return [Request.for_object(b) for key in slice_service_index(obj)
                for b in self._bindings.by_index(SERVICE_INDEX, key)]

    def bindings_for_node(self, obj: Obj) -> list[Request]:
        # Bindings whose type is inferred may be instance bindings too; they are few, and a
        # checkpoint match makes their reconcile free.
        return [Request.for_object(b)
                for value in ("instance", "")
                for b in self._bindings.by_index(TARGET_TYPE_INDEX, value)]

    def priority(self, obj: Obj, kind: EventKind, default: int) -> int:
        """Initial-list adds and resyncs whose checkpoint still matches wait in the paced LOW
        lane; anything that changed since the last successful reconcile goes first."""
        if not self._checkpoints:
            return NORMAL
        if kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            return default
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            # Being deleted: its targets must be deregistered now, not at its verification
            # turn, however unchanged its spec and endpoints are.
            return NORMAL
        stored = self._stored_checkpoint(obj)
        try:
            if stored and stored in self._checkpoints_from_cache(obj):
                return LOW
        except (InvalidSpec, KeyError):
            pass
        return NORMAL

    def _checkpoints_from_cache(self, obj: Obj) -> list[str]:
        """The checkpoint the caches give, or, when the target type is left to the target
        group (known only from AWS), the one each type would give. Then only non-empty
        endpoint sets count: an empty ip set and an empty node set digest alike, so they would
        match whichever type was really used."""
        spec = parse_spec(obj)
        if spec.target_type:
            return [checkpoint.compute(self._endpoints(obj, spec, spec.target_type),
                                       obj.get("spec") or {})]
        found = []
        for target_type in ("ip", "instance"):
            try:
                endpoints = self._endpoints(obj, spec, target_type)
            except InvalidSpec:
                continue  # e.g. instance targets of a ClusterIP Service
            if endpoints:
                found.append(checkpoint.compute(endpoints, obj.get("spec") or {}))
        return found

    # ---- reconcile ---------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        tgb = self._bindings.get(request.key)
        if tgb is None:
            self._written.pop(request.key, None)
            return Result()
        self._own_versions[request.key] = set()
        try:
            if (tgb.get("metadata") or {}).get("deletionTimestamp"):
                await self._finalize(tgb)
                return Result()
            tgb = await self._ensure_finalizer(tgb)
            await self._converge(tgb)
        except (ApiError, AWSError) as exc:
            self._recorder.event(tgb, "Warning", "FailedReconcile", str(exc))
            raise ReconcileError(str(exc)) from exc
        finally:
            self._own_versions.pop(request.key, None)
        return Result()

    async def _converge(self, tgb: Obj) -> None:
        try:
            spec = parse_spec(tgb)
            tg = await self._target_groups.resolve(arn=spec.target_group_arn,
                                                   name=spec.target_group_name)
            target_type = spec.target_type or tg.target_type
            if spec.target_type and spec.target_type != tg.target_type:
                raise InvalidSpec(f"targetType {spec.target_type} does not match target group "
                                  f"{tg.name or tg.arn} of type {tg.target_type}")
            if target_type not in ("ip", "instance"):
                raise InvalidSpec(f"target group {tg.name or tg.arn} has unsupported target "
                                  f"type {target_type}")
            endpoints = self._endpoints(tgb, spec, target_type)
        except InvalidSpec as exc:
            await self._set_status(tgb, ready=False, reason="InvalidSpec", message=str(exc))
            self._recorder.event(tgb, "Warning", "InvalidSpec", str(exc))
            raise TerminalError(str(exc)) from None
        if spec.networking:
            self._recorder.event(tgb, "Warning", "Unsupported",
                                 "spec.networking is not supported yet and is ignored")

        value = checkpoint.compute(endpoints, tgb.get("spec") or {})
        stored = self._stored_checkpoint(tgb)
        if self._checkpoints and value == stored and reconcile_priority() >= NORMAL:
            await self._set_status(tgb, ready=True, reason="Reconciled",
                                   message=_ready_message(endpoints))
            return
        changed = await self._sync_targets(tgb, spec, tg, endpoints)
        if value != stored or changed:
            await self._patch(tgb, checkpoint.patch(value, self._clock.wall()))
            key = _key(tgb)
            self._written[key] = (value, frozenset(self._own_versions.get(key, ())))
        await self._set_status(tgb, ready=True, reason="Reconciled",
                               message=_ready_message(endpoints))
        if changed:
            self._recorder.event(tgb, "Normal", "SuccessfullyReconciled",
                                 "Successfully reconciled")

    def _stored_checkpoint(self, tgb: Obj) -> str:
        written = self._written.get(_key(tgb))
        if written is not None and tgb["metadata"].get("resourceVersion") in written[1]:
            return written[0]
        return checkpoint.stored(tgb)

    def _endpoints(self, tgb: Obj, spec: TargetGroupBindingSpec,
                   target_type: str) -> list[Endpoint]:
        ns = str((tgb.get("metadata") or {}).get("namespace"))
        svc_key = f"{ns}/{spec.service_ref.name}"
        service = self._services.get(svc_key)
        port = find_service_port(service, spec.service_ref.port, service_key=svc_key)
        if target_type == "ip":
            return ip_endpoints(port, self._slices.by_index(SLICE_SERVICE_INDEX, svc_key),
                                ip_address_type=spec.ip_address_type or "ipv4")
        assert service is not None
        return instance_endpoints(service, port, self._nodes.list(),
                                  selector=spec.node_selector, service_key=svc_key)

    async def _sync_targets(self, tgb: Obj, spec: TargetGroupBindingSpec, tg: TargetGroupInfo,
                            endpoints: list[Endpoint]) -> bool:
        meta = tgb["metadata"]
        ns, name = str(meta["namespace"]), str(meta["name"])
        desired = {e.target for e in endpoints}
        current = await self._target_groups.current_targets(tg.arn)
        to_register = sorted(desired - current)
        extra = current - desired
        tracked: frozenset[str] | None = None
        if spec.multi_cluster_target_group:
            tracked = await self._tracker.tracked(ns, name)
            allowed = set(deregistrable((t.identifier for t in extra), tracked))
            to_deregister = sorted(t for t in extra if t.identifier in allowed)
            if tracked is None and extra and find_condition(tgb, READY) is not None:
                # Reconciled before, yet no record: the ConfigMap was deleted. Whatever this
                # cluster dropped since its last write can no longer be told from other
                # clusters' targets and stays registered.
                self._recorder.event(
                    tgb, "Warning", "TrackingMissing",
                    f"configmap {configmap_name(name)} not found; deregistering nothing this "
                    f"pass and recording the current {len(desired)} target(s); targets this "
                    "cluster dropped meanwhile must be deregistered by hand")
        else:
            to_deregister = sorted(extra)
        if to_register or to_deregister:
            # A crash from here until the new checkpoint is written must not leave a match.
            await self._patch(tgb, checkpoint.patch("", self._clock.wall()))
        if to_deregister:
            await self._target_groups.deregister(tg.arn, to_deregister)
        if spec.multi_cluster_target_group:
            # After deregistering, before registering, and on first sight (initial population).
            await self._tracker.write(ns, name, (t.identifier for t in desired),
                                      owner=_owner_reference(tgb))
        if to_register:
            await self._target_groups.register(tg.arn, to_register)
        if to_register or to_deregister:
            log.info("targets changed", binding=f"{ns}/{name}", registered=len(to_register),
                     deregistered=len(to_deregister), target_group=tg.arn)
        return bool(to_register or to_deregister)

    async def _finalize(self, tgb: Obj) -> None:
        meta = tgb["metadata"]
        if TARGETGROUPBINDING_FINALIZER not in (meta.get("finalizers") or []):
            return
        ns, name = str(meta["namespace"]), str(meta["name"])
        try:
            spec: TargetGroupBindingSpec | None = parse_spec(tgb)
        except InvalidSpec:
            spec = None  # nothing could have been registered for it
        if spec is not None:
            try:
                tg: TargetGroupInfo | None = await self._target_groups.resolve(
                    arn=spec.target_group_arn, name=spec.target_group_name)
            except InvalidSpec:
                tg = None
            if tg is not None:
                try:
                    current = await self._target_groups.current_targets(tg.arn)
                except InvalidSpec:
                    current = set()  # the target group is gone, and its targets with it
                if spec.multi_cluster_target_group:
                    tracked = await self._tracker.tracked(ns, name)
                    allowed = set(deregistrable((t.identifier for t in current), tracked))
                    owned: list[Target] = sorted(t for t in current if t.identifier in allowed)
                else:
                    owned = sorted(current)
                await self._target_groups.deregister(tg.arn, owned)
                self._target_groups.forget(tg.arn)
            if spec.multi_cluster_target_group:
                await self._tracker.cleanup(ns, name)
            else:
                self._tracker.forget(ns, name)
        finalizers = [f for f in meta.get("finalizers") or [] if f != TARGETGROUPBINDING_FINALIZER]
        try:
            await self._patch(tgb, {"metadata": {"finalizers": finalizers,
                                                 "resourceVersion": meta["resourceVersion"]}})
        except NotFound:
            return

    async def _ensure_finalizer(self, tgb: Obj) -> Obj:
        meta = tgb["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if TARGETGROUPBINDING_FINALIZER in finalizers:
            return tgb
        return await self._patch(tgb, {"metadata": {
            "finalizers": [*finalizers, TARGETGROUPBINDING_FINALIZER],
            "resourceVersion": meta["resourceVersion"]}})

    async def _patch(self, tgb: Obj, body: Obj) -> Obj:
        meta = tgb["metadata"]
        patched = await self._client.patch(TARGETGROUPBINDINGS, str(meta["name"]), body,
                                           str(meta["namespace"]))
        own = self._own_versions.get(_key(tgb))
        if own is not None:
            own.add(str(patched["metadata"]["resourceVersion"]))
        return patched

    async def _set_status(self, tgb: Obj, *, ready: bool, reason: str, message: str) -> None:
        generation = (tgb.get("metadata") or {}).get("generation")
        status = tgb.get("status") or {}
        current = find_condition(tgb, READY)
        wanted = "True" if ready else "False"
        if (status.get("observedGeneration") == generation and current is not None
                and current.get("status") == wanted and current.get("reason") == reason
                and current.get("message") == message):
            return
        conditions = set_condition(status.get("conditions"), type=READY, status=wanted,
                                   reason=reason, message=message,
                                   observed_generation=generation, now=self._clock.wall())
        meta = tgb["metadata"]
        try:
            await self._client.patch(
                TARGETGROUPBINDINGS, str(meta["name"]),
                {"status": {"observedGeneration": generation, "conditions": conditions}},
                str(meta["namespace"]), subresource="status")
        except NotFound:
            return


def _key(tgb: Obj) -> str:
    meta = tgb["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def _ready_message(endpoints: list[Endpoint]) -> str:
    return f"{len(endpoints)} target(s) registered"


def _owner_reference(tgb: Obj) -> Obj:
    meta = tgb["metadata"]
    return {"apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "name": meta["name"], "uid": meta.get("uid", ""), "controller": False,
            "blockOwnerDeletion": False}
