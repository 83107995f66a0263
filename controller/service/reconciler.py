"""The Service reconciler: one Network Load Balancer per qualifying Service.

One reconcile:
1. gone from the cache → nothing (the finalizer guaranteed cleanup first);
2. being deleted, or no longer qualifying (class or type changed) while carrying our finalizer
   → cleanup: delete the managed TargetGroupBindings, wait until they are gone (their own
   finalizer deregisters the targets), delete the stack in AWS, clear the status, drop the
   finalizer and the checkpoint;
3. pure stage: Service + annotations + settings → Stack. Bad input (an invalid annotation, a
   port instance targets cannot use) → Warning Event `FailedBuildModel`, condition False,
   terminal error: no AWS call, not retried until the Service changes;
4. checkpoint: a NORMAL reconcile whose checkpoint matches, with the Kubernetes side already
   converged in the caches (finalizer, address, ready condition, managed bindings), makes no
   call at all. It is how our own writes (finalizer, status, checkpoint, bindings and the TGB
   controller's updates to them) stay free. A LOW reconcile (the paced verification of a
   restart or a resync) always deploys: that is where drift in AWS gets repaired;
5. deploy (resolve stage included): reset the stored checkpoint to "" first when it holds an
   older model, so a crash mid-deploy cannot leave a false match; finalizer before the first
   AWS write; bindings the model no longer has are deleted and waited for (their finalizer
   deregisters targets from target groups the deploy would delete); then the deploy, the
   bindings, the status and the new checkpoint.
"""

from __future__ import annotations

from typing import Any, Protocol

import structlog

from controller import checkpoint
from controller.annotations import AnnotationError
from controller.apis import CHECKPOINT_TIMESTAMP_ANNOTATION, SERVICE_FINALIZER
from controller.aws import AWSError
from controller.deploy import DeployError, DeployResult, StackDeployer
from controller.model import InvalidStack, Stack
from controller.service.annotations import qualifies
from controller.service.bindings import SERVICE_STACK_INDEX, BindingWriter, matches_model
from controller.service.model import (
    MODEL_VERSION,
    InvalidService,
    ModelSettings,
    build_stack,
    checkpoint_of,
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
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.conditions import find_condition
from runtime.controller import ReconcileError, Result, TerminalError, reconcile_priority
from runtime.errors import ApiError, NotFound
from runtime.handlers import PriorityFn, Request
from runtime.resources import SERVICES, Resource
from runtime.store import Store
from runtime.workqueue import NORMAL

Obj = dict[str, Any]

READY_MESSAGE = "load balancer provisioned"

log = structlog.get_logger("service")


class Recorder(Protocol):
    def event(self, obj: Obj, type: str, reason: str, message: str, *,
              resource: Resource | None = None) -> None: ...


def _finalizers(obj: Obj) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or [])


def requests_for_service(obj: Obj, *, load_balancer_class: str) -> list[Request]:
    """Services we build for, or still hold a finalizer on; the rest never need us, so they
    are not even queued (most Services of a cluster are not load balancers)."""
    if (SERVICE_FINALIZER in _finalizers(obj)
            or qualifies(obj, load_balancer_class=load_balancer_class)):
        return [Request.for_object(obj)]
    return []


class ServiceReconciler:
    def __init__(self, *, client: KubeClient, services: Store, bindings: Store,
                 deployer: StackDeployer, recorder: Recorder, settings: ModelSettings,
                 checkpoints: bool = True, lane: bool = True, clock: Clock | None = None,
                 cleanup_poll: float = 5.0) -> None:
        self._client = client
        self._services = services
        self._bindings = bindings
        self._deployer = deployer
        self._recorder = recorder
        self._settings = settings
        self._checkpoints = checkpoints
        self._lane = lane
        self._clock: Clock = clock or RealClock()
        self._writer = BindingWriter(client)
        # Safety net only: a binding's deletion event wakes the Service anyway.
        self._cleanup_poll = cleanup_poll

    # ---- event mapping (cache reads only) --------------------------------------------------

    def requests_for_service(self, obj: Obj) -> list[Request]:
        return requests_for_service(obj, load_balancer_class=self._settings.load_balancer_class)

    def checkpoint_from_cache(self, obj: Obj) -> str | None:
        return checkpoint_of(obj, settings=self._settings)

    @property
    def priority(self) -> PriorityFn:
        """Checkpoint-matched restarts and resyncs go LOW; without the lane everything is
        NORMAL, and a matching checkpoint only makes the reconcile skip."""
        return checkpoint.priority_function(self.checkpoint_from_cache,
                                            enabled=self._checkpoints and self._lane)

    # ---- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        svc = self._services.get(request.key)
        if svc is None:
            return Result()
        meta = svc.get("metadata") or {}
        if meta.get("deletionTimestamp") or not qualifies(
                svc, load_balancer_class=self._settings.load_balancer_class):
            if SERVICE_FINALIZER not in _finalizers(svc):
                return Result()
            return await self._cleanup(svc)
        try:
            stack = build_stack(svc, settings=self._settings)
        except (AnnotationError, InvalidService, InvalidStack) as exc:
            await self._fail(svc, _build_reason(exc), "FailedBuildModel", str(exc))
            raise TerminalError(str(exc)) from None
        value = checkpoint.compute(stack, version=MODEL_VERSION)
        stored = checkpoint.stored(svc)
        if (self._checkpoints and reconcile_priority() >= NORMAL and value == stored
                and self._converged_in_cache(svc, stack)):
            return Result()
        return await self._deploy(svc, stack, value, stored)

    def _managed_bindings(self, svc: Obj) -> dict[str, Obj]:
        return {str(b["metadata"]["name"]): b
                for b in self._bindings.by_index(SERVICE_STACK_INDEX, stack_id(svc))}

    def _converged_in_cache(self, svc: Obj, stack: Stack) -> bool:
        cond = find_condition(svc, CONDITION_TYPE) or {}
        generation = (svc.get("metadata") or {}).get("generation")
        if (SERVICE_FINALIZER not in _finalizers(svc) or hostname_of(svc) is None
                or not is_ready(svc)
                or cond.get("observedGeneration") != generation):
            return False
        cached = self._managed_bindings(svc)
        wanted = {res.name: res for res in stack.target_group_bindings.values()}
        return set(cached) == set(wanted) and all(
            matches_model(cached[name], res) for name, res in wanted.items())

    async def _deploy(self, svc: Obj, stack: Stack, value: str, stored: str) -> Result:
        name, ns = str(svc["metadata"]["name"]), str(svc["metadata"]["namespace"])
        writes = 0
        fresh = SERVICE_FINALIZER not in _finalizers(svc)  # never deployed: nothing in AWS yet
        matched = stored == value  # write-only fields were written for exactly this stack
        if self._checkpoints and stored and stored != value:
            svc = await self._patch(svc, checkpoint.patch("", timestamp=self._clock.wall()))
            stored, writes = "", writes + 1
        if SERVICE_FINALIZER not in _finalizers(svc):
            svc = await self._patch(svc, {"metadata": {
                "finalizers": [*_finalizers(svc), SERVICE_FINALIZER],
                "resourceVersion": svc["metadata"]["resourceVersion"]}})
            writes += 1
        # Bindings the model dropped (a removed port, a replaced target group) go first, and
        # are waited for: their finalizer deregisters targets from a target group the deploy
        # is about to delete.
        wanted = {res.name for res in stack.target_group_bindings.values()}
        stale = [b for name, b in sorted(self._managed_bindings(svc).items())
                 if name not in wanted]
        if stale:
            await self._writer.delete(stale)
            return Result(requeue_after=self._cleanup_poll)
        try:
            result = await self._deployer.deploy(stack, fresh=fresh,
                                                 rewrite_write_only=not matched)
        except (DeployError, AWSError) as exc:
            await self._fail(svc, "FailedDeployModel", "FailedDeployModel", str(exc))
            raise ReconcileError(str(exc)) from exc
        writes += await self._apply_bindings(svc, result)
        hostname = result.load_balancer.dns_name if result.load_balancer else None
        body = status_patch(svc, ready=True, reason=REASON_RECONCILED, message=READY_MESSAGE,
                            now=self._clock.wall(), hostname=hostname or None)
        if body is not None:
            await self._client.patch(SERVICES, name, body, ns, subresource="status")
            writes += 1
        if self._checkpoints and stored != value:
            await self._patch(svc, checkpoint.patch(value, timestamp=self._clock.wall()))
            writes += 1
        if result.mutating_calls or writes:
            log.info("service reconciled", service=f"{ns}/{name}",
                     aws_mutations=result.mutating_calls, kubernetes_writes=writes)
            self._recorder.event(svc, "Normal", "SuccessfullyReconciled",
                                 "Successfully reconciled", resource=SERVICES)
        return Result()

    async def _apply_bindings(self, svc: Obj, result: DeployResult) -> int:
        cached = self._managed_bindings(svc)
        wanted = list(result.target_group_bindings.values())
        writes = await self._writer.apply(wanted, cached)
        names = {binding.spec.name for binding in wanted}
        return writes + await self._writer.delete(
            b for name, b in sorted(cached.items()) if name not in names)

    async def _cleanup(self, svc: Obj) -> Result:
        key = stack_id(svc)
        try:
            bindings = list(self._managed_bindings(svc).values())
            if bindings:
                await self._writer.delete(bindings)
                return Result(requeue_after=self._cleanup_poll)
            await self._deployer.delete_stack(key, "service")
            body = clear_patch(svc)
            if body is not None:
                meta = svc["metadata"]
                svc = await self._client.patch(SERVICES, str(meta["name"]), body,
                                               str(meta["namespace"]), subresource="status")
            meta = svc["metadata"]
            update: Obj = {"finalizers": [f for f in _finalizers(svc) if f != SERVICE_FINALIZER],
                           "resourceVersion": meta["resourceVersion"]}
            if checkpoint.stored(svc) or CHECKPOINT_TIMESTAMP_ANNOTATION in (
                    meta.get("annotations") or {}):
                update["annotations"] = checkpoint.removal_patch()["metadata"]["annotations"]
            await self._patch(svc, {"metadata": update})
        except NotFound:
            return Result()
        except (DeployError, AWSError, ApiError) as exc:
            self._recorder.event(svc, "Warning", "FailedCleanup", str(exc), resource=SERVICES)
            raise ReconcileError(str(exc)) from exc
        log.info("load balancer deleted", service=key)
        if not (svc.get("metadata") or {}).get("deletionTimestamp"):
            self._recorder.event(svc, "Normal", "DeletedLoadBalancer",
                                 "Service no longer asks for a load balancer from this "
                                 "controller; its resources were deleted", resource=SERVICES)
        return Result()

    async def _fail(self, svc: Obj, reason: str, event_reason: str, message: str) -> None:
        self._recorder.event(svc, "Warning", event_reason, message, resource=SERVICES)
        body = status_patch(svc, ready=False, reason=reason, message=message,
                            now=self._clock.wall())
        if body is None:
            return
        meta = svc["metadata"]
        try:
            await self._client.patch(SERVICES, str(meta["name"]), body, str(meta["namespace"]),
                                     subresource="status")
        except ApiError as exc:
            # The Event already carries the message; a failed status write must not hide it.
            log.warning("could not write the service condition", error=str(exc))

    async def _patch(self, svc: Obj, body: Obj) -> Obj:
        meta = svc["metadata"]
        return await self._client.patch(SERVICES, str(meta["name"]), body,
                                        str(meta["namespace"]))


def _build_reason(exc: Exception) -> str:
    if isinstance(exc, AnnotationError):
        return "InvalidAnnotation"
    if isinstance(exc, InvalidService):
        return "InvalidService"
    return "InvalidModel"


__all__ = ["SERVICE_FINALIZER", "ServiceReconciler", "requests_for_service"]
