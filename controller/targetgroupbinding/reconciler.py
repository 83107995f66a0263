"""The TargetGroupBinding reconciler: converge a target group's targets to the binding's
Service endpoints.

One reconcile, in the steps every controller takes:
1. read: the binding from the cache; gone → nothing (the finalizer guaranteed cleanup first);
2. qualify: being deleted → deregister what this controller registered, from the target group
   it recorded (everything, or only the tracked targets while a tracking ConfigMap exists),
   delete the tracking ConfigMap, drop the finalizer; deleted because the CRD is being deleted
   (`crdguard.py`) → drop the finalizer only, with a Warning, no AWS call;
3. build: parse the spec, find the target group (as the binding's `iamRoleArnToAssume`, in
   that role's account, when it names one; STS refusing the role is `AssumeRoleRefused`) and
   check that this binding may act on it (`checks.py`: VPC, cluster, namespace, other
   bindings, IP family),
   find the Service port, compute the desired targets from the caches, check `spec.networking`
   against the networking policy (networking.py) (bad input or a refusal → Warning Event,
   `Ready=False` condition, terminal error: no AWS write but the revocation of rules it held,
   not retried until the object changes);
4. checkpoint: a NORMAL reconcile whose checkpoint matches makes no register or deregister
   call; a LOW one (the paced verification of a restart, a takeover or a resync) reads the
   target group (shared reads), compares the registered targets with AWS unless this process
   did so within `targets_trusted_for` (half the sync period in `aiolbc run`), and takes a
   full look (networking rules too, drift repaired, the checkpoint-timestamp rewritten) when
   they differ or the last full look is older than that (`verification.py`);
5. a target group other than the recorded one: drain the recorded one first (what this
   binding registered there is deregistered, unless another binding took it over); then the
   finalizer and the new record in one PATCH, before the first registration;
6. deploy: the rules `spec.networking` asks for on the targets' security groups (networking.py);
   diff against DescribeTargetHealth; reset the checkpoint to "" before touching
   targets; deregister (only tracked targets while a tracking ConfigMap exists: always for a
   multi-cluster binding, and after multi-cluster was turned off, until the ConfigMap is
   deleted), record the tracked set, register;
7. readiness gates (ip targets, `readiness.py`): each gated pod's condition from its target's
   health; while any is not True the binding is looked at again after the requeue duration;
8. status, then the new checkpoint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Iterator
from typing import Any, NoReturn

import structlog
from prometheus_client import Gauge, Histogram

from controller import checkpoint as stack_checkpoint
from controller import targetgroupaccess
from controller.apis import (
    DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME,
    QUIC_ENABLED_CONTAINERS_ANNOTATION,
    QUIC_PROTOCOLS,
    REGISTERED_TARGET_GROUP_ANNOTATION,
    TARGETGROUPBINDING_FINALIZER,
    TARGETGROUPBINDINGS,
    target_health_condition,
)
from controller.apis.targetgroupbinding import InvalidSpec, TargetGroupBindingSpec, parse_spec
from controller.aws import AssumeRoleFailed, AWSError
from controller.aws.metrics import target_group_dimension
from controller.errors import InvalidInput
from controller.lbcmetrics import QuicMissingServerIds, stage
from controller.networking.enis import NetworkingError, PodAddress
from controller.reconcilers import ObjectWriter, Recorder, condition_patch, stable_message
from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.checks import (
    AssumeRoleRefused,
    Scope,
    check_recorded,
    check_role_target_type,
    check_target_group,
    check_target_type,
    role_of,
)
from controller.targetgroupbinding.crdguard import CRD_NAME, CRDGuard
from controller.targetgroupbinding.endpointsets import EndpointSet, SliceMemo
from controller.targetgroupbinding.multicluster import (
    TargetTracker,
    configmap_name,
    deregistrable,
)
from controller.targetgroupbinding.networking import BindingNetworking, pod_address
from controller.targetgroupbinding.pods import GATE_INDEX, pending_endpoints, pod_endpoints
from controller.targetgroupbinding.quic import server_id_for
from controller.targetgroupbinding.readiness import ReadinessGates
from controller.targetgroupbinding.slicecache import (
    SlicesNotCached,
    fetch_slices,
    is_index_entry,
)
from controller.targetgroupbinding.targetgroups import (
    TargetGroupInfo,
    TargetGroupNotFound,
    TargetGroups,
)
from controller.targetgroupbinding.targets import (
    Target,
    find_service_port,
    instance_endpoints,
    instance_id,
)
from controller.targetgroupbinding.verification import Verifications
from controller.targetgroupbinding.watches import SERVICE_INDEX, SLICE_SERVICE_INDEX
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, NotFound
from runtime.handlers import PriorityFn
from runtime.objects import (
    Obj,
    annotations_of,
    dig,
    has_finalizer,
    is_deleting,
    key_of,
    meta,
    name_of,
    namespace_of,
    owner_reference,
)
from runtime.reconcile import (
    NORMAL,
    ReconcileError,
    Request,
    Result,
    TerminalError,
    reconcile_priority,
)
from runtime.statusconditions import find_condition
from runtime.store import Store

READY = "Ready"

log = structlog.get_logger("targetgroupbinding")


class TargetGroupBindingReconciler:
    def __init__(self, *, client: KubeClient, bindings: Store, services: Store, slices: Store,
                 nodes: Store, target_groups: TargetGroups, tracker: TargetTracker,
                 recorder: Recorder, scope: Scope, clock: Clock | None = None,
                 checkpoints: bool = True, pods: Store | None = None,
                 requeue_duration: float = 15.0,
                 networking: BindingNetworking | None = None,
                 targets_trusted_for: float | None = None,
                 max_targets_per_target_group: int = 0,
                 endpoints_fail_open: bool = True,
                 target_group_info: Gauge | None = None,
                 readiness_gate_ready: Histogram | None = None,
                 quic_missing_server_ids: QuicMissingServerIds | None = None,
                 crd: CRDGuard | None = None,
                 quic_env: str = DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME) -> None:
        self._client = client
        # None: every deletion deregisters (no CRD watch; unit tests).
        self._crd = crd
        self._bindings = bindings
        self._scope = scope
        self._services = services
        self._slices = slices
        self._nodes = nodes
        self._target_groups = target_groups
        self._tracker = tracker
        self._clock = clock or RealClock()
        self._writer = ObjectWriter(client, TARGETGROUPBINDINGS, recorder, self._clock)
        # Pod readiness gates (ip targets); without a pod cache, pods only count once ready.
        self._pods = pods
        self._quic_env = quic_env  # --quic-environment-variable-name
        self._quic_missing = quic_missing_server_ids
        self._gates = (ReadinessGates(client, pods, self._clock,
                                      ready_seconds=readiness_gate_ready)
                       if pods is not None else None)
        self._requeue = requeue_duration
        # --max-targets-per-target-group: 0 is no limit.
        self._max_targets = max_targets_per_target_group
        self._fail_open = endpoints_fail_open  # the EndpointsFailOpen gate
        # aws_target_group_info, upstream's: 1 per binding's target group while it is served;
        # the label set each binding has there, so that a change of target group moves it.
        self._tg_info = target_group_info
        self._tg_info_labels: dict[str, tuple[str, str, str]] = {}
        # Off: every reconcile looks at AWS and nothing is deferred (upstream before v2.9.1).
        self._checkpoints = checkpoints
        # None: `spec.networking` is not acted on (no cluster and VPC to act in).
        self._networking = networking
        self._verifications = Verifications(target_groups=target_groups, clock=self._clock,
                                            trusted_for=targets_trusted_for)
        # resourceVersions our own writes produced during the running reconcile of a key, and,
        # once its checkpoint is written, that checkpoint with those versions. A reconcile that
        # runs while the cache still shows the reset state takes the checkpoint we wrote right
        # after as the truth, not "".
        self._own_versions: dict[str, set[str]] = {}
        self._written: dict[str, tuple[str, frozenset[str]]] = {}
        # ip endpoints per Service, parsed once per EndpointSlice version.
        self._slice_memo = SliceMemo(in_use=self._services_in_use)

    # ---- priority (cache reads only) --------------------------------------------------------

    @property
    def priority(self) -> PriorityFn:
        """Initial-list adds and resyncs whose checkpoint still matches wait in the paced LOW
        lane; anything that changed since the last successful reconcile goes first."""
        return stack_checkpoint.priority_function(
            self._checkpoints_from_cache, enabled=self._checkpoints,
            current=self._stored_checkpoint)

    def _checkpoints_from_cache(self, obj: Obj) -> list[str]:
        """The checkpoint the caches give, or, when the target type is left to the target
        group (known only from AWS), the one each type would give. Then only non-empty
        endpoint sets count: an empty ip set and an empty node set digest alike, so they would
        match whichever type was really used."""
        spec = parse_spec(obj)
        raw_spec = self._checkpoint_spec(obj)
        known = self._groups(spec).cached(arn=spec.target_group_arn,
                                          name=spec.target_group_name)
        family = spec.ip_address_type or (known.ip_address_type if known else "ipv4")
        try:
            if spec.target_type:
                return [checkpoint.compute(self._endpoints(obj, spec, spec.target_type, family),
                                           raw_spec)]
        except SlicesNotCached:
            return []  # a Service no binding used until now: nothing to compare with yet
        found = []
        for target_type in ("ip", "instance"):
            try:
                endpoints = self._endpoints(obj, spec, target_type, family)
            except SlicesNotCached:
                return []
            except InvalidSpec:
                continue  # e.g. instance targets of a ClusterIP Service
            if endpoints:
                found.append(checkpoint.compute(endpoints, raw_spec))
        return found

    # ---- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        tgb = self._bindings.get(request.key)  # 1. read
        if tgb is None:
            self._written.pop(request.key, None)
            self._verifications.forget(request.key)
            self._slice_memo.retain(self._services_in_use())
            return Result()
        self._own_versions[request.key] = set()
        try:
            if is_deleting(tgb):  # 2. qualify
                await self._finalize(tgb)
                return Result()
            with stage("reconcile_targetgroupbinding"):
                result = await self._converge(tgb)
        except AssumeRoleFailed as exc:
            self._target_groups.drop_role(exc.role)
            if is_deleting(tgb):  # retried: its targets may still be registered there
                self._writer.event(tgb, "Warning", "FailedReconcile", str(exc))
                raise ReconcileError(str(exc)) from exc
            await self._invalid(tgb, AssumeRoleRefused.of(exc))
        except (ApiError, AWSError) as exc:
            self._writer.event(tgb, "Warning", "FailedReconcile", str(exc))
            raise ReconcileError(str(exc)) from exc
        finally:
            self._own_versions.pop(request.key, None)
        return result

    async def _converge(self, tgb: Obj) -> Result:
        try:  # 3. build
            spec = parse_spec(tgb)
            groups = self._groups(spec)
            tg = await groups.resolve(arn=spec.target_group_arn, name=spec.target_group_name,
                                      read_ahead=True)
            family = check_target_group(tgb, spec, tg, scope=self._scope,
                                        bindings=self._bindings)
            target_type = check_target_type(spec, tg)
            check_role_target_type(spec, target_type)
            if tg.protocol in QUIC_PROTOCOLS and target_type != "ip":
                raise InvalidSpec(f"target group {tg.arn} is {tg.protocol}: its targets are "
                                  "registered with their pods' QUIC server IDs, so it needs "
                                  f"targetType ip, not {target_type}")
            endpoints = await self._fetched_endpoints(tgb, spec, target_type, family)
            server_ids = (await self._quic_server_ids(tgb, spec, family)
                          if tg.protocol in QUIC_PROTOCOLS else None)
            await self._check_networking(tgb, spec, tg, target_type, endpoints)
        except InvalidInput as exc:
            await self._invalid(tgb, exc)
        if spec.networking and self._networking is None:
            self._writer.event(tgb, "Warning", "Unsupported",
                               "spec.networking is ignored: the controller runs without a "
                               "cluster and VPC to manage rules in")

        value = checkpoint.compute(endpoints, self._checkpoint_spec(tgb))  # 4. checkpoint
        stored = self._stored_checkpoint(tgb)
        recorded = registered_target_group(tgb)
        verifying = reconcile_priority() < NORMAL
        if (self._checkpoints and value == stored
                and has_finalizer(tgb, TARGETGROUPBINDING_FINALIZER)
                and recorded in (None, tg.arn)
                and not self._gates_pending(tgb, spec, target_type, family, endpoints)
                and (not verifying or await self._verified(tgb, tg, endpoints))):
            # A verification gets here having read the target group (exists, the same, ours
            # to act on: shared reads, targetgroups.py) and compared its targets.
            if recorded is None:
                # Reconciled before the record existed: the checkpoint says it registered
                # into this very target group, so that is what gets recorded.
                tgb = await self._own(self._writer.patch_metadata(
                    tgb, annotations={REGISTERED_TARGET_GROUP_ANNOTATION: tg.arn}))
            await self._set_ready(tgb, endpoints)
            return Result()
        if recorded is not None and recorded != tg.arn:  # 5. the recorded group first
            await self._drain(tgb, recorded)
        tgb = await self._own(self._writer.patch_metadata(  # then the finalizer and the record
            tgb, add_finalizer=TARGETGROUPBINDING_FINALIZER,
            annotations={REGISTERED_TARGET_GROUP_ANNOTATION: tg.arn}))
        try:  # 6. deploy
            await self._reconcile_networking(tgb, spec, target_type, endpoints)
            changed = await self._sync_targets(tgb, spec, tg, endpoints, server_ids)
        except TargetGroupNotFound as exc:
            # Deleted behind our back since it was resolved: as if the spec named a missing
            # one (a managed binding gets a new ARN when its Service's stack is deployed).
            await self._invalid(tgb, exc)
        waiting = await self._update_gates(tgb, spec, target_type, family, tg,  # 7. gates
                                           endpoints)
        await self._set_ready(tgb, endpoints)  # 8. status, checkpoint
        self._verifications.compared(key_of(tgb), tg.arn)
        # A verification's full look is recorded too (the timestamp), so that the next one
        # within the trusted time takes none.
        if value != stored or changed or (verifying
                                          and self._verifications.trusted_for is not None):
            await self._own(self._writer.patch(tgb, checkpoint.patch(value, self._clock.wall())))
            key = key_of(tgb)
            self._written[key] = (value, frozenset(self._own_versions.get(key, ())))
        if changed:
            self._writer.event(tgb, "Normal", "SuccessfullyReconciled", "Successfully reconciled")
        # Target health moves at AWS with no event: look again while a gate waits for it.
        return Result(requeue_after=self._requeue) if waiting else Result()

    async def _verified(self, tgb: Obj, tg: TargetGroupInfo, endpoints: EndpointSet) -> bool:
        """A verification of an unchanged binding may stop here (`verification.py`)."""
        try:
            return await self._verifications.may_stop(key_of(tgb), tgb, tg.arn,
                                                       endpoints.targets,
                                                       groups=self._groups_of(tgb))
        except TargetGroupNotFound as exc:
            await self._invalid(tgb, exc)

    def _checkpoint_spec(self, tgb: Obj) -> dict[str, Any]:
        spec: dict[str, Any] = tgb.get("spec") or {}
        if self._networking is None:
            return spec
        return self._networking.checkpoint_spec(spec, namespace=namespace_of(tgb))

    async def _check_networking(self, tgb: Obj, spec: TargetGroupBindingSpec,
                                tg: TargetGroupInfo, target_type: str,
                                endpoints: EndpointSet) -> None:
        """The networking policy, before anything is written (raises NetworkingNotAllowed)."""
        if self._networking is None or spec.networking is None:
            return
        svc_key = f"{namespace_of(tgb)}/{spec.service_ref.name}"
        try:
            service_port: Obj | None = find_service_port(
                self._services.get(svc_key), spec.service_ref.port, service_key=svc_key)
        except InvalidInput:
            service_port = None

        await self._networking.check(tgb, spec, tg, target_type, endpoints, service_port,
                                     reread=lambda: self._groups(spec).reread(tg.arn))

    async def _reconcile_networking(self, tgb: Obj, spec: TargetGroupBindingSpec,
                                    target_type: str, endpoints: EndpointSet) -> None:
        if self._networking is None:
            return
        try:
            await self._networking.reconcile(
                tgb, spec, target_type, list(endpoints),
                other_pods=lambda: self._pods_with_networking(key_of(tgb)),
                other_instances=self._nodes_with_networking)
        except InvalidSpec as exc:
            await self._invalid(tgb, exc)
        except NetworkingError as exc:
            reason = exc.condition_reason
            await self._writer.report_failure(
                tgb, event_reason=reason, message=str(exc),
                condition=lambda obj, message: self._ready(obj, False, reason, message))
            raise ReconcileError(str(exc)) from None

    def _pods_with_networking(self, skip: str) -> Iterator[PodAddress]:
        """Pods of the other ip bindings with networking: looked up in the same call."""
        for other in self._bindings.list():
            if key_of(other) == skip or not (other.get("spec") or {}).get("networking"):
                continue
            try:
                other_spec = parse_spec(other)
                if other_spec.target_type != "ip":
                    continue
                family = other_spec.ip_address_type or "ipv4"
                yield from (pod_address(e)
                            for e in self._endpoints(other, other_spec, "ip", family))
            except (InvalidSpec, SlicesNotCached):
                continue  # only a fill-up of the lookup: its own reconcile asks for it

    def _nodes_with_networking(self) -> Iterator[str]:
        for node in self._nodes.list():
            found = instance_id(node)
            if found is not None:
                yield found

    async def _invalid(self, tgb: Obj, exc: InvalidInput) -> NoReturn:
        if self._networking is not None:
            # A binding that cannot be acted on needs no rule: what it had goes.
            await self._networking.refused(tgb)
        reason = exc.condition_reason
        await self._writer.report_failure(
            tgb, event_reason=reason, message=str(exc),
            condition=lambda obj, message: self._ready(obj, False, reason, message))
        if self._gates is not None:
            # Its waiting pods are held back by this refusal: they say why.
            await self._gates.refused(tgb, reason, stable_message(str(exc)))
        raise TerminalError(str(exc)) from None

    def _stored_checkpoint(self, tgb: Obj) -> str:
        written = self._written.get(key_of(tgb))
        if written is not None and meta(tgb).get("resourceVersion") in written[1]:
            return written[0]
        return checkpoint.stored(tgb)

    def _endpoints(self, tgb: Obj, spec: TargetGroupBindingSpec, target_type: str,
                   family: str, *, slices: list[Obj] | None = None) -> EndpointSet:
        """From the caches (or from `slices`, fetched); SlicesNotCached when the cache holds
        only index entries of the Service's slices (slicecache.py)."""
        ns = str(meta(tgb).get("namespace"))
        svc_key = f"{ns}/{spec.service_ref.name}"
        service = self._services.get(svc_key)
        port = find_service_port(service, spec.service_ref.port, service_key=svc_key)
        if target_type == "ip":
            if slices is None:
                slices = self._slices.by_index(SLICE_SERVICE_INDEX, svc_key)
            ready = self._slice_memo.ip_endpoints(svc_key, port, slices, ip_address_type=family)
            if not self._has_gated_pods(tgb):
                return ready
            if any(is_index_entry(s) for s in slices):
                # Which endpoints wait for their gates is read from the slices themselves.
                raise SlicesNotCached(svc_key)
            assert self._pods is not None
            gated = pending_endpoints(port, slices, self._pods.get,
                                      condition=target_health_condition(name_of(tgb)),
                                      ip_address_type=family)
            if not gated:
                return ready
            return EndpointSet(tuple({e.target: e for e in [*gated, *ready]}.values()))
        assert service is not None
        return EndpointSet(instance_endpoints(service, port, self._nodes.list(),
                                              selector=spec.node_selector, service_key=svc_key,
                                              fail_open=self._fail_open))

    async def _fetched_endpoints(self, tgb: Obj, spec: TargetGroupBindingSpec,
                                 target_type: str, family: str) -> EndpointSet:
        """`_endpoints`, listing the Service's slices from the API server when the cache kept
        only their index entries (once per slice version: the memo keeps what was parsed)."""
        try:
            return self._endpoints(tgb, spec, target_type, family)
        except SlicesNotCached as missing:
            slices = await fetch_slices(self._client, missing.service_key)
            return self._endpoints(tgb, spec, target_type, family, slices=slices)

    def _services_in_use(self) -> set[str]:
        return set(self._bindings.list_index_values(SERVICE_INDEX))

    async def _quic_server_ids(self, tgb: Obj, spec: TargetGroupBindingSpec,
                               family: str) -> dict[Target, str]:
        """Each pod endpoint's QUIC server ID, from the pod cache (quic.py); an endpoint
        whose pod has none is left out."""
        svc_key = f"{namespace_of(tgb)}/{spec.service_ref.name}"
        port = find_service_port(self._services.get(svc_key), spec.service_ref.port,
                                 service_key=svc_key)
        slices = self._slices.by_index(SLICE_SERVICE_INDEX, svc_key)
        if any(is_index_entry(s) for s in slices):
            slices = await fetch_slices(self._client, svc_key)
        found: dict[Target, str] = {}
        for target, endpoint, pod_key in pod_endpoints(port, slices, ip_address_type=family):
            pod = self._pods.get(pod_key) if self._pods is not None else None
            if pod is None or (endpoint.uid and dig(pod, "metadata", "uid") != endpoint.uid):
                continue
            server_id = server_id_for(pod, target.port, self._quic_env)
            if server_id is not None:
                found[target] = server_id
        return found

    async def _sync_targets(self, tgb: Obj, spec: TargetGroupBindingSpec, tg: TargetGroupInfo,
                            endpoints: EndpointSet,
                            server_ids: dict[Target, str] | None = None) -> bool:
        ns, name = str(meta(tgb)["namespace"]), str(meta(tgb)["name"])
        desired = endpoints.targets
        groups = self._groups(spec)
        current = await groups.current_targets(tg.arn)
        changed_ids: set[Target] = set()
        if server_ids is not None:
            # A QUIC target is registered with its server ID or not at all (upstream drops it
            # with a log line; here the binding is told).
            missing = sorted(t for t in desired if t not in server_ids)
            if missing:
                if self._quic_missing is not None:
                    self._quic_missing.add(ns, name, len(missing))
                self._writer.event(
                    tgb, "Warning", "QUICServerIDMissing",
                    f"{len(missing)} target(s) of {tg.protocol} target group {tg.name or tg.arn}"
                    f" have no QUIC server ID and are not registered (first: "
                    f"{missing[0].identifier}); their pods need the annotation "
                    f"{QUIC_ENABLED_CONTAINERS_ANNOTATION} naming a container with "
                    f"{self._quic_env}, injected by the pod webhook")
            desired = frozenset(t for t in desired if t in server_ids)
            # A new pod on a former pod's address carries another ID: registered anew.
            registered_ids = groups.server_ids(tg.arn)
            changed_ids = {t for t in desired & current
                           if registered_ids.get(t) != server_ids[t]}
        to_register = sorted((desired - current) | changed_ids)
        extra = (current - desired) | changed_ids
        # A multi-cluster binding always goes by its tracking record; one that was switched
        # off keeps going by it while the ConfigMap exists: without it, the targets other
        # clusters registered could not be told from ours.
        tracked = None
        if spec.multi_cluster_target_group or extra or to_register:
            tracked = await self._tracker.tracked(
                ns, name, recheck=not spec.multi_cluster_target_group)
        tracking = spec.multi_cluster_target_group or tracked is not None
        if tracking:
            allowed = set(deregistrable((t.identifier for t in extra), tracked))
            to_deregister = sorted(t for t in extra if t.identifier in allowed)
            kept = len(extra) - len(to_deregister)
            if not spec.multi_cluster_target_group and kept:
                self._writer.event(
                    tgb, "Warning", "TrackingRecordKept",
                    f"multiClusterTargetGroup is off, but configmap {configmap_name(name)} "
                    f"still records this cluster's targets: {kept} target(s) it did not "
                    "register stay in the target group; delete the configmap to let this "
                    "binding own the target group alone")
            if (spec.multi_cluster_target_group and tracked is None and extra
                    and find_condition(tgb, READY) is not None):
                # Reconciled before, yet no record: the ConfigMap was deleted. Whatever this
                # cluster dropped since its last write can no longer be told from other
                # clusters' targets and stays registered.
                self._writer.event(
                    tgb, "Warning", "TrackingMissing",
                    f"configmap {configmap_name(name)} not found; deregistering nothing this "
                    f"pass and recording the current {len(desired)} target(s); targets this "
                    "cluster dropped meanwhile must be deregistered by hand")
        else:
            to_deregister = sorted(extra)
        if self._max_targets and to_register:
            room = max(0, self._max_targets - (len(current) - len(to_deregister)))
            if len(to_register) > room:
                # Upstream's limit: a target group at its quota must not block deregistrations
                # and the rest of the reconcile; the targets left out wait for room.
                self._writer.event(
                    tgb, "Warning", "TargetLimitReached",
                    f"--max-targets-per-target-group={self._max_targets}: registering "
                    f"{room} of {len(to_register)} new target(s)")
                to_register = to_register[:room]
        if to_register or to_deregister:
            # A crash from here until the new checkpoint is written must not leave a match.
            await self._own(self._writer.patch(tgb, checkpoint.patch("", self._clock.wall())))
        if to_deregister:
            await groups.deregister(tg.arn, to_deregister)
        if tracking:
            # After deregistering, before registering, and on first sight (initial population).
            await self._tracker.write(ns, name, (t.identifier for t in desired),
                                      owner=owner_reference(tgb, TARGETGROUPBINDINGS))
        if to_register:
            await groups.register(tg.arn, to_register, server_ids)
        if to_register or to_deregister:
            log.info("targets changed", binding=f"{ns}/{name}", registered=len(to_register),
                     deregistered=len(to_deregister), target_group=tg.arn)
        return bool(to_register or to_deregister)

    async def _ours_in(self, tgb: Obj, arn: str) -> list[Target] | None:
        """The targets this binding registered into `arn`, None when that is not for this
        binding to say: the target group is gone, not one it may act on (the record was
        written by hand), or another binding registered there since (what is left there is
        that binding's to converge)."""
        ns, name = str(meta(tgb)["namespace"]), str(meta(tgb)["name"])
        groups = self._groups_of(tgb)
        try:
            info = await groups.resolve(arn=arn, name=None)
            current = await groups.current_targets(info.arn)
        except InvalidSpec:
            return None  # gone, and its targets with it
        try:
            check_recorded(tgb, info, scope=self._scope)
        except targetgroupaccess.NotOwned as exc:
            self._writer.event(
                tgb, "Warning", "RecordedTargetGroupNotOwned",
                f"the target group recorded in {REGISTERED_TARGET_GROUP_ANNOTATION} is not "
                f"this binding's: {exc}; nothing is deregistered from it")
            return None
        others = [b for b in targetgroupaccess.bindings_of(self._bindings.by_index, info.facts)
                  if key_of(b) != key_of(tgb) and targetgroupaccess.holds(b, info.arn)
                  and not targetgroupaccess.may_share(tgb, b)]
        if others:
            self._writer.event(
                tgb, "Warning", "TargetGroupTakenOver",
                f"target group {info.name or arn}, which this binding registered into, is now "
                f"used by TargetGroupBinding {key_of(others[0])}; its targets are left to it")
            return None
        multi_cluster = targetgroupaccess.is_multi_cluster(tgb)
        tracked = await self._tracker.tracked(ns, name, recheck=not multi_cluster)
        if tracked is None:
            # Without a record a multi-cluster binding cannot tell its targets from other
            # clusters': it deregisters none. A binding that owns its target group, all.
            return [] if multi_cluster else sorted(current)
        allowed = set(deregistrable((t.identifier for t in current), tracked))
        return sorted(t for t in current if t.identifier in allowed)

    async def _drain(self, tgb: Obj, previous: str) -> None:
        """The spec names another target group than the one this binding registered into:
        take our targets out of that one first. The record keeps naming it until this
        succeeded, so a crash in between drains it again on the next pass."""
        ours = await self._ours_in(tgb, previous)
        if ours:
            groups = self._groups_of(tgb)
            try:
                await groups.deregister(previous, ours)
            except TargetGroupNotFound:
                return  # gone since, and our targets with it
            groups.forget(previous)
            self._writer.event(tgb, "Normal", "TargetGroupChanged",
                               f"deregistered {len(ours)} target(s) from the previous target "
                               f"group {previous}")

    async def _finalize(self, tgb: Obj) -> None:
        self._info(tgb, None)
        if not has_finalizer(tgb, TARGETGROUPBINDING_FINALIZER):
            return
        if self._crd is not None and await self._crd.deleting():
            await self._release_in_cascade(tgb)
            return
        ns, name = str(meta(tgb)["namespace"]), str(meta(tgb)["name"])
        arn = registered_target_group(tgb) or await self._legacy_target_group(tgb)
        if arn is not None:
            ours = await self._ours_in(tgb, arn)
            groups = self._groups_of(tgb)
            if ours:
                with contextlib.suppress(TargetGroupNotFound):  # gone, and its targets too
                    await groups.deregister(arn, ours)
            groups.forget(arn)
        if await self._tracker.tracked(ns, name) is None:
            self._tracker.forget(ns, name)
        else:
            await self._tracker.cleanup(ns, name)
        if self._networking is not None:
            # Its rules go (unless another binding needs them) before the finalizer does.
            await self._networking.release(tgb)
        if self._gates is not None:
            await self._gates.release(tgb)
        try:
            await self._writer.patch_metadata(tgb, remove_finalizer=TARGETGROUPBINDING_FINALIZER)
        except NotFound:
            return

    async def _release_in_cascade(self, tgb: Obj) -> None:
        """The CRD is going and takes this binding with it: nobody asked for its targets to go,
        so they stay registered (and its rules and tracking ConfigMap stay with them); only the
        finalizer goes, so that the CRD's deletion can finish."""
        self._writer.event(tgb, "Warning", "CRDDeleting",
                           f"the {CRD_NAME} CRD is being deleted: this binding is released "
                           "without deregistering its targets, which stay registered")
        log.warning("binding released without deregistering: the CRD is being deleted",
                    binding=key_of(tgb), target_group=registered_target_group(tgb))
        try:
            await self._writer.patch_metadata(tgb, remove_finalizer=TARGETGROUPBINDING_FINALIZER)
        except NotFound:
            return

    async def _legacy_target_group(self, tgb: Obj) -> str | None:
        """A binding finalized before it recorded its target group: the spec's, if this binding
        may act on it (otherwise nothing of it is touched)."""
        try:
            spec = parse_spec(tgb)
            tg = await self._groups(spec).resolve(arn=spec.target_group_arn,
                                                  name=spec.target_group_name)
            check_target_group(tgb, spec, tg, scope=self._scope, bindings=self._bindings)
        except InvalidInput as exc:
            self._writer.event(tgb, "Warning", "FinalizedWithoutDeregistering",
                               f"no target deregistered: {exc}")
            return None
        return tg.arn

    # ---- readiness gates (readiness.py) ------------------------------------------------------

    def _ip_backend(self, tgb: Obj, spec: TargetGroupBindingSpec
                    ) -> tuple[str, Obj, list[Obj]]:
        svc_key = f"{meta(tgb).get('namespace')}/{spec.service_ref.name}"
        port = find_service_port(self._services.get(svc_key), spec.service_ref.port,
                                 service_key=svc_key)
        return svc_key, port, self._slices.by_index(SLICE_SERVICE_INDEX, svc_key)

    def _has_gated_pods(self, tgb: Obj) -> bool:
        """Some cached pod carries this binding's gate (the gate index says so at no cost, so
        that a binding without gated pods never walks its Service's endpoints for them)."""
        return self._pods is not None and self._pods.indexed(GATE_INDEX, key_of(tgb))

    def _gates_pending(self, tgb: Obj, spec: TargetGroupBindingSpec, target_type: str,
                       family: str, endpoints: EndpointSet) -> bool:
        if self._gates is None or target_type != "ip" or not self._has_gated_pods(tgb):
            return False
        _, port, slices = self._ip_backend(tgb, spec)
        if any(is_index_entry(s) for s in slices):
            return True  # only the slices themselves can tell: the full pass reads them
        return self._gates.pending(tgb, port, slices, endpoints.targets, family)

    async def _update_gates(self, tgb: Obj, spec: TargetGroupBindingSpec, target_type: str,
                            family: str, tg: TargetGroupInfo, endpoints: EndpointSet
                            ) -> bool:
        if self._gates is None or target_type != "ip" or not self._has_gated_pods(tgb):
            return False
        svc_key, port, slices = self._ip_backend(tgb, spec)
        if any(is_index_entry(s) for s in slices):
            slices = await fetch_slices(self._client, svc_key)
        return await self._gates.update(tgb, port, slices, endpoints.targets,
                                        self._groups(spec).health(tg.arn), family)

    def _groups(self, spec: TargetGroupBindingSpec) -> TargetGroups:
        """The target groups as the binding's calls see them: as its role, in the role's
        account, or the controller's own."""
        return self._target_groups.for_role(role_of(spec))

    def _groups_of(self, tgb: Obj) -> TargetGroups:
        """`_groups` of a binding whose spec may no longer parse (its finalizer, a recorded
        target group): the controller's own then, where the record's ARN of another account
        is not found, so nothing of it is touched."""
        try:
            return self._groups(parse_spec(tgb))
        except InvalidSpec:
            return self._target_groups

    async def _own(self, write: Awaitable[Obj]) -> Obj:
        """Await one of our writes and remember the resourceVersion it produced."""
        patched = await write
        own = self._own_versions.get(key_of(patched))
        if own is not None:
            own.add(str(meta(patched).get("resourceVersion")))
        return patched

    def _ready(self, tgb: Obj, ready: bool, reason: str, message: str) -> Obj | None:
        return condition_patch(tgb, type=READY, ready=ready, reason=reason, message=message,
                               now=self._clock.wall(), observed_generation_in_status=True)

    def _info(self, tgb: Obj, arn: str | None) -> None:
        """aws_target_group_info for this binding: its target group now (None: none)."""
        if self._tg_info is None:
            return
        key = key_of(tgb)
        service = dig(tgb, "spec", "serviceRef", "name")
        labels = (namespace_of(tgb) or "", service if isinstance(service, str) else "",
                  target_group_dimension(arn)) if arn else None
        old = self._tg_info_labels.pop(key, None)
        if old is not None and old != labels:
            with contextlib.suppress(KeyError):
                self._tg_info.remove(*old)
        if labels is not None:
            self._tg_info.labels(*labels).set(1)
            self._tg_info_labels[key] = labels

    async def _set_ready(self, tgb: Obj, endpoints: EndpointSet) -> None:
        self._info(tgb, registered_target_group(tgb))
        try:
            await self._writer.patch_status(tgb, self._ready(
                tgb, True, "Reconciled", f"{len(endpoints)} target(s) registered"))
        except NotFound:
            return


def registered_target_group(tgb: Obj) -> str | None:
    return annotations_of(tgb).get(REGISTERED_TARGET_GROUP_ANNOTATION) or None


__all__ = ["READY", "TargetGroupBindingReconciler", "registered_target_group"]
