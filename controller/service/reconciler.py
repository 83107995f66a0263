"""The Service reconciler: one Network Load Balancer per qualifying Service.

One reconcile, in the steps every controller takes:
1. read: the Service from the cache; gone → nothing (the finalizer guaranteed cleanup first);
2. qualify: being deleted, or no longer qualifying (class or type changed) while carrying our
   finalizer → cleanup: delete the managed TargetGroupBindings, wait until they are gone (their
   own finalizer deregisters the targets), delete the stack in AWS, clear the status, drop the
   finalizer and the checkpoint (one PATCH). Except a Service upstream serves and this
   controller does not (another type than LoadBalancer asking for an NLB by annotation): left
   alone with a Warning, its load balancer untouched;
3. build (pure stage): Service + annotations + settings → Stack; then every target group a
   listener forwards to by ARN (`actions.<PROTOCOL>-<port>`) is checked as the Ingress's are
   (`controller.targetgroupaccess`: same VPC, not another cluster's or namespace's, not filled
   by another namespace's binding). Bad input (`InvalidInput`,
   a key that narrows access and cannot be honoured included) → Warning Event
   `FailedBuildModel`, condition False, terminal error: no AWS call, not retried until the
   Service changes. Keys under our prefixes that are not acted on get a Warning each
   (`UnsupportedAnnotation`, `UnknownAnnotation`) once: the ready condition's message lists
   them, and this process remembers what it told (`FindingLog`), so neither a verification, a
   retry nor a restart tells it again;
4. checkpoint: a NORMAL reconcile whose checkpoint matches, with the Kubernetes side already
   converged in the caches (finalizer, address, ready condition, managed bindings), makes no
   call at all. A LOW reconcile (the paced verification of a restart or a resync) always
   deploys: that is where drift in AWS gets repaired;
5.-7. the tail every load-balancer reconcile shares (controller/stackapply.py): the finalizer
   (with the reset of a stored checkpoint of an older model), deploy (resolve stage included),
   the managed bindings, status (address and ready condition), then the new checkpoint (not
   while old bindings or their target groups remain). A deploy failure is reported as a Warning
   Event and the ready condition False, and retried.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from controller import checkpoint, gates, targetgroupaccess
from controller.annotationreview import Finding, FindingLog, summarized
from controller.aws import AWSError
from controller.bindings import BindingWriter, matches_model
from controller.defaults import DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL
from controller.deploy import DeployError, StackDeployer
from controller.errors import InvalidInput
from controller.lbcmetrics import stage
from controller.model import Stack
from controller.reconcilers import ObjectWriter, Recorder
from controller.service.actions import other_target_group_arns, parse_listener_actions
from controller.service.annotations import (
    annotation_findings,
    qualifies,
    served_by_upstream_only,
)
from controller.service.model import (
    MODEL_VERSION,
    ModelSettings,
    build_stack,
    checkpoint_input,
    stack_id,
)
from controller.service.status import (
    CONDITION_TYPE,
    REASON_RECONCILED,
    clear_patch,
    hostname_of,
    is_ready,
    status_patch,
)
from controller.service.watches import SERVICE_STACK_INDEX
from controller.stackapply import StackApplier
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, NotFound
from runtime.handlers import PriorityFn
from runtime.objects import Obj, has_finalizer, is_deleting, meta, name_of
from runtime.reconcile import (
    NORMAL,
    ReconcileError,
    Request,
    Result,
    TerminalError,
    reconcile_priority,
)
from runtime.resources import SERVICES
from runtime.statusconditions import find_condition
from runtime.store import Store

READY_MESSAGE = "load balancer provisioned"


def ready_message(findings: Sequence[Finding]) -> str:
    """The ready condition's message: provisioned, and what was not acted on."""
    return "; ".join([READY_MESSAGE, *(f.message for f in summarized(findings))])

log = structlog.get_logger("service")


class ServiceReconciler:
    def __init__(self, *, client: KubeClient, services: Store, bindings: Store,
                 deployer: StackDeployer, recorder: Recorder, settings: ModelSettings,
                 checkpoints: bool = True, lane: bool = True, clock: Clock | None = None,
                 cleanup_poll: float = 5.0,
                 stabilization_interval: float = DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL,
                 target_groups: targetgroupaccess.TargetGroupLookup | None = None) -> None:
        self._services = services
        self._bindings = bindings
        self._deployer = deployer
        self._settings = settings
        self._checkpoints = checkpoints
        self._lane = lane
        self._clock: Clock = clock or RealClock()
        self._told = FindingLog()
        self._writer = ObjectWriter(client, SERVICES, recorder, self._clock)
        self._bindings_writer = BindingWriter(client)
        self._apply = StackApplier(deployer=deployer, writer=self._writer,
                                   bindings=self._bindings_writer, clock=self._clock)
        self._target_groups = target_groups
        # Safety net only: a binding's deletion event wakes the Service anyway.
        self._cleanup_poll = cleanup_poll
        # A new load balancer still provisioning: its capacity reservation waits this long.
        self._stabilization_interval = stabilization_interval

    # ---- priority (cache reads only) --------------------------------------------------------

    def checkpoint_from_cache(self, obj: Obj) -> str | None:
        """The checkpoint to compare with the stored one, or None (no match possible) when the
        Kubernetes side of the last deploy is no longer what the cache holds: a managed binding
        deleted by hand while the controller was down (one without its finalizer yet leaves no
        deletion event to replay), the finalizer, address or ready condition gone. A LOW
        verification would repair those too, but only at the lane's pace."""
        stack = checkpoint_input(obj, settings=self._settings, services=self._services.get)
        if stack is None or not self._converged_in_cache(obj, stack):
            return None
        return checkpoint.compute(stack, version=MODEL_VERSION)

    @property
    def priority(self) -> PriorityFn:
        """Restarts and resyncs of Services deployed as they are (checkpoint matched, the
        Kubernetes side intact) go LOW; without the lane everything is NORMAL, and a matching
        checkpoint only makes the reconcile skip."""
        return checkpoint.priority_function(self.checkpoint_from_cache,
                                            enabled=self._checkpoints and self._lane)

    # ---- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        svc = self._services.get(request.key)  # 1. read
        if svc is None:
            return Result()
        if is_deleting(svc) or not qualifies(  # 2. qualify
                svc, load_balancer_class=self._settings.load_balancer_class,
                load_balancer_only=self._settings.load_balancer_only,
                by_annotation=self._settings.by_annotation):
            if not has_finalizer(svc, self._settings.finalizer):
                return Result()
            if not is_deleting(svc) and served_by_upstream_only(
                    svc, load_balancer_class=self._settings.load_balancer_class,
                    load_balancer_only=self._settings.load_balancer_only,
                    by_annotation=self._settings.by_annotation):
                self._leave_alone(svc)
                return Result()
            with stage("cleanup_load_balancer"):
                return await self._cleanup(svc)
        try:  # 3. build
            with stage("build_model"):
                stack = build_stack(svc, settings=self._settings, services=self._services.get)
            findings = self._findings(svc)
            await self._check_forwards(svc)
        except InvalidInput as exc:
            await self._fail(svc, "FailedBuildModel", exc.condition_reason, str(exc))
            raise TerminalError(str(exc)) from None
        self._tell(svc, findings)
        value = checkpoint.compute(stack, version=MODEL_VERSION)  # 4. checkpoint
        if (self._checkpoints and reconcile_priority() >= NORMAL
                and value == checkpoint.stored(svc) and self._converged_in_cache(svc, stack)):
            return Result()
        return await self._deploy(svc, stack, value, ready_message(findings))

    def _findings(self, svc: Obj) -> tuple[Finding, ...]:
        return annotation_findings(
            svc, advanced_health_check=self._settings.advanced_health_check,
            capacity_reservation=gates.enabled(self._settings.gates, "LBCapacityReservation"))

    async def _check_forwards(self, svc: Obj) -> None:
        """Raises a `NotOwned` (or `TargetGroupMissing`) for a target group the Service's
        listeners may not forward to; the facts are cached (`TargetGroupLookup`), so this
        costs a lookup per target group every few minutes, and nothing without such keys."""
        arns = other_target_group_arns(parse_listener_actions(svc))
        if not arns or self._target_groups is None:
            return
        namespace = str(meta(svc).get("namespace") or "")
        for arn in arns:
            try:
                facts = await self._target_groups.facts(arn)
                targetgroupaccess.check_target_group(
                    facts, namespace=namespace, vpc_id=self._settings.cluster.vpc_id,
                    cluster_name=self._settings.cluster.name)
                targetgroupaccess.check_forward(facts, namespace=namespace,
                                                bindings=targetgroupaccess.bindings_of(
                                                    self._bindings.by_index, facts))
            except InvalidInput as exc:
                raise type(exc)(f"service {stack_id(svc)}: forward to {arn}: {exc}") from None

    def _tell(self, svc: Obj, findings: Sequence[Finding]) -> None:
        """One Warning per finding the Service has not been told about: not by this process,
        and not in its ready condition (what an earlier process told it)."""
        told = str((find_condition(svc, CONDITION_TYPE) or {}).get("message") or "")
        uid = str(meta(svc).get("uid") or stack_id(svc))
        for finding in self._told.new(uid, summarized(findings)):
            if finding.message not in told:
                self._writer.event(svc, "Warning", finding.reason, finding.message)

    def _managed_bindings(self, svc: Obj) -> dict[str, Obj]:
        return {name_of(b): b
                for b in self._bindings.by_index(SERVICE_STACK_INDEX, stack_id(svc))}

    def _converged_in_cache(self, svc: Obj, stack: Stack) -> bool:
        cond = find_condition(svc, CONDITION_TYPE) or {}
        if (not has_finalizer(svc, self._settings.finalizer) or hostname_of(svc) is None
                or not is_ready(svc)
                or cond.get("observedGeneration") != meta(svc).get("generation")
                or cond.get("message") != ready_message(self._findings(svc))):
            return False
        return matches_model(self._managed_bindings(svc).values(),
                             stack.target_group_bindings.values())

    async def _deploy(self, svc: Obj, stack: Stack, value: str, message: str) -> Result:
        """5.-7.: the shared tail (controller/stackapply.py) for this one Service."""
        def status(obj: Obj, hostname: str) -> Obj | None:
            return status_patch(obj, ready=True, reason=REASON_RECONCILED,
                                message=message, now=self._clock.wall(),
                                hostname=hostname or None)

        try:
            applied = await self._apply.apply(
                stack, value=value, owners=[svc], finalizer=self._settings.finalizer,
                current=list(self._managed_bindings(svc).values()), status=status)
        except (DeployError, AWSError) as exc:
            await self._fail(svc, "FailedDeployModel", "FailedDeployModel", str(exc))
            raise ReconcileError(str(exc)) from exc
        if applied.capacity_pending:
            return Result(requeue_after=self._stabilization_interval)
        if applied.unfinished:
            return Result(requeue_after=self._cleanup_poll)
        if applied.changed:
            log.info("service reconciled", service=stack_id(svc),
                     aws_mutations=applied.result.mutating_calls,
                     binding_writes=applied.binding_writes)
        return Result()

    async def _cleanup(self, svc: Obj) -> Result:
        key = stack_id(svc)
        try:
            bindings = list(self._managed_bindings(svc).values())
            if bindings:
                await self._bindings_writer.delete(bindings)
                return Result(requeue_after=self._cleanup_poll)
            await self._deployer.delete_stack(key, "service",
                                              vpc_id=self._settings.cluster.vpc_id)
            svc = await self._writer.patch_status(svc, clear_patch(svc))
            await self._writer.patch_metadata(
                svc, remove_finalizer=self._settings.finalizer,
                annotations=checkpoint.removal_patch()["metadata"]["annotations"])
        except NotFound:
            return Result()
        except (DeployError, AWSError, ApiError) as exc:
            self._writer.event(svc, "Warning", "FailedCleanup", str(exc))
            raise ReconcileError(str(exc)) from exc
        log.info("load balancer deleted", service=key)
        if not is_deleting(svc):
            self._writer.event(svc, "Normal", "DeletedLoadBalancer",
                               "Service no longer asks for a load balancer from this "
                               "controller; its resources were deleted")
        return Result()

    def _leave_alone(self, svc: Obj) -> None:
        """A Service upstream provisioned and this controller would not: not ours to build, and
        not ours to clean up either (its load balancer is still serving)."""
        kind = (svc.get("spec") or {}).get("type") or "ClusterIP"
        self._writer.event(
            svc, "Warning", "NotServed",
            f"type {kind} asks for a load balancer by annotation, which this controller "
            f"provisions for type LoadBalancer only; the existing load balancer and the "
            f"{self._settings.finalizer} finalizer are left as they are (make the Service type "
            "LoadBalancer to manage it, or delete it to delete the load balancer)")

    async def _fail(self, svc: Obj, event_reason: str, reason: str, message: str) -> None:
        await self._writer.report_failure(
            svc, event_reason=event_reason, message=message,
            condition=lambda obj, stable: status_patch(obj, ready=False, reason=reason,
                                                       message=stable,
                                                       now=self._clock.wall()))


__all__ = ["ServiceReconciler"]
