"""The Ingress group reconciler.

One reconcile of a group key:
1. load the group from the cache: active members (sorted) and Ingresses leaving it (they still
   carry its finalizer: deleted, moved to another group or class);
2. no active member → delete the stack's TargetGroupBindings, wait until they are gone (their
   finalizer deregisters targets), delete the AWS stack, drop the leavers' finalizers;
3. otherwise add the group finalizer to members and build the stack (pure stage; bad input →
   Warning Event on every member, terminal error, no AWS call). A normal-priority reconcile
   whose checkpoint matches on every member, with status, finalizers and bindings in place,
   stops here without AWS calls (a LOW-lane verification never does). Bindings the stack no
   longer wants are deleted and waited for; then the checkpoint is reset where it changes,
   the stack deployed, the wanted bindings applied, the load balancer hostname written to
   every member's status and the group checkpoint to every member, and the leavers'
   finalizers dropped (their rules are gone now).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import structlog

from controller import checkpoint
from controller.apis import (
    INGRESS_STACK_LABEL,
    INGRESS_STACK_NAME_LABEL,
    INGRESS_STACK_NAMESPACE_LABEL,
    INGRESSCLASSPARAMS,
)
from controller.aws import AWSClientPool, AWSError
from controller.deploy import DeployError, StackDeployer
from controller.ingress.caches import Caches, Obj, key_of, meta
from controller.ingress.groups import (
    CLASS_INDEX,
    Group,
    GroupLoader,
    request_of_key,
)
from controller.ingress.merge import BuildError
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group
from controller.model import LoadBalancer, Stack
from controller.service.bindings import BindingWriter, matches_model
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.controller import ReconcileError, Result, TerminalError, reconcile_priority
from runtime.errors import ApiError, Conflict, NotFound
from runtime.handlers import EventKind, Request
from runtime.resources import INGRESSES
from runtime.store import NAMESPACE_INDEX, Store
from runtime.workqueue import LOW, NORMAL

log = structlog.get_logger("ingress")

SERVICE_INDEX = "ingress-service"  # Ingress → namespace/name of every Service it names
SECRET_INDEX = "ingress-secret"  # Ingress → namespace/name of its OIDC Secret
BINDING_STACK_INDEX = "ingress-stack"  # managed TGB → Request.key of its group


class Recorder(Protocol):
    def event(self, obj: Obj, type: str, reason: str, message: str, *,
              resource: Any = None) -> None: ...


def binding_stack_index(obj: Obj) -> list[str]:
    labels = meta(obj).get("labels") or {}
    if labels.get(INGRESS_STACK_LABEL):
        return [str(labels[INGRESS_STACK_LABEL])]
    name = labels.get(INGRESS_STACK_NAME_LABEL)
    namespace = labels.get(INGRESS_STACK_NAMESPACE_LABEL)
    return [f"{namespace}/{name}"] if name and namespace else []


class IngressReconciler:
    def __init__(self, *, client: KubeClient, caches: Caches, bindings: Store,
                 loader: GroupLoader, deployer: StackDeployer, pool: AWSClientPool,
                 settings: BuilderSettings, recorder: Recorder,
                 clock: Clock | None = None, checkpoints: bool = True,
                 cleanup_poll: float = 1.0) -> None:
        self._client = client
        self._caches = caches
        self._bindings = bindings
        self._loader = loader
        self._deployer = deployer
        self._pool = pool
        self._settings = settings
        self._recorder = recorder
        self._clock = clock or RealClock()
        self._checkpoints = checkpoints
        # Replay decisions: request → (its members' resourceVersions, priority). A restart
        # replays every member and every backend Service of a group, each asking for the same
        # decision; computing it once per group keeps a 1,000-Ingress replay short. Any other
        # event (a change) drops them all.
        self._decisions: dict[Request, tuple[tuple[str, ...], int]] = {}
        self._cleanup_poll = cleanup_poll
        self._writer = BindingWriter(client)

    # ---- event mapping (cache reads only) ----------------------------------------------------

    def groups_for_ingress(self, obj: Obj) -> list[Request]:
        return self._loader.groups_of(obj)

    def _groups_of_ingresses(self, ingresses: Iterable[Obj]) -> list[Request]:
        found: dict[Request, None] = {}
        for ing in ingresses:
            found.update(dict.fromkeys(self._loader.groups_of(ing)))
        return list(found)

    def groups_for_service(self, obj: Obj) -> list[Request]:
        return self._groups_of_ingresses(
            self._caches.ingresses.by_index(SERVICE_INDEX, key_of(obj)))

    def groups_for_secret(self, obj: Obj) -> list[Request]:
        return self._groups_of_ingresses(
            self._caches.ingresses.by_index(SECRET_INDEX, key_of(obj)))

    def groups_for_class(self, obj: Obj) -> list[Request]:
        name = str(meta(obj).get("name") or "")
        # Ingresses naming no class may be taken by a default class.
        return self._groups_of_ingresses([
            *self._caches.ingresses.by_index(CLASS_INDEX, name),
            *self._caches.ingresses.by_index(CLASS_INDEX, "")])

    def groups_for_params(self, obj: Obj) -> list[Request]:
        name = meta(obj).get("name")
        found: list[Request] = []
        for cls in self._caches.classes.list():
            ref = (cls.get("spec") or {}).get("parameters") or {}
            if isinstance(ref, dict) and ref.get("kind") == INGRESSCLASSPARAMS.kind \
                    and ref.get("name") == name:
                found.extend(self.groups_for_class(cls))
        group = ((obj.get("spec") or {}).get("group") or {}).get("name")
        if isinstance(group, str) and group:
            found.append(Request("", group))
        return list(dict.fromkeys(found))

    def groups_for_namespace(self, obj: Obj) -> list[Request]:
        return self._groups_of_ingresses(self._caches.ingresses.by_index(
            NAMESPACE_INDEX, str(meta(obj).get("name") or "")))

    def group_for_binding(self, obj: Obj) -> list[Request]:
        return [request_of_key(k) for k in binding_stack_index(obj)]

    # ---- checkpoints -------------------------------------------------------------------------

    def computed_checkpoint(self, request: Request) -> str | None:
        group = self._loader.load(request)
        if not group.members:
            return None
        try:
            built = build_group(group, self._caches, self._settings)
        except BuildError:
            return None
        return checkpoint.compute(built.stack, version=BUILDER_VERSION)

    def priority(self, request: Request, kind: EventKind, default: int) -> int:
        """An initial-list add or resync of a group whose checkpoint matches on every member
        goes to the paced LOW lane; anything else keeps its default (NORMAL)."""
        if not self._checkpoints:
            return NORMAL
        if kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            self._decisions.clear()
            return default
        members = self._loader.load(request).members
        versions = tuple(str(meta(m.ingress).get("resourceVersion")) for m in members)
        known = self._decisions.get(request)
        if known is not None and known[0] == versions:
            return known[1]
        value = self.computed_checkpoint(request)
        decision = NORMAL
        if (value is not None and members
                and all(checkpoint.stored(m.ingress) == value for m in members)):
            decision = LOW
        self._decisions[request] = (versions, decision)
        return decision

    # ---- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        group = self._loader.load(request)
        try:
            if not group.members:
                return await self._cleanup(group)
            return await self._converge(group)
        except Conflict as exc:
            # A write raced a change we have not seen yet; the retry reads the new state.
            raise ReconcileError(str(exc)) from exc
        except (ApiError, AWSError, DeployError) as exc:
            for member in group.members:
                self._event(member.ingress, "Warning", "FailedDeployModel", str(exc))
            raise ReconcileError(str(exc)) from exc

    async def _converge(self, group: Group) -> Result:
        # No member carried the finalizer yet: nothing of this group can be in AWS.
        fresh = not any(group.finalizer in (meta(m.ingress).get("finalizers") or [])
                        for m in group.members)
        for member in group.members:
            await self._add_finalizer(member.ingress, group.finalizer)
        try:
            built = build_group(group, self._caches, self._settings)
        except BuildError as exc:
            for member in group.members:
                self._event(member.ingress, "Warning", "FailedBuildModel", str(exc))
            raise TerminalError(str(exc)) from None
        value = checkpoint.compute(built.stack, version=BUILDER_VERSION)
        current = {str(meta(b).get("name")): b
                   for b in self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)}
        if (self._checkpoints and reconcile_priority() >= NORMAL
                and self._converged_in_cache(group, built, value, current)):
            return Result()  # nothing the model reads changed since the last deploy
        wanted = {tgb.name for tgb in built.stack.target_group_bindings.values()}
        stale = [b for name, b in sorted(current.items()) if name not in wanted]
        if stale:
            # Bindings the model dropped go first, and are waited for: their finalizer
            # deregisters targets from target groups the deploy is about to delete. Their
            # deletion events wake the group; the poll is a safety net.
            await self._writer.delete(stale)
            return Result(requeue_after=self._cleanup_poll)
        # Write-only fields (OIDC client secrets) are written unless every member's checkpoint
        # says this very stack was deployed; a LOW verification of a match skips them.
        matched = all(checkpoint.stored(m.ingress) == value for m in group.members)
        for member in group.members:
            stored = checkpoint.stored(member.ingress)
            if self._checkpoints and stored and stored != value:
                # A crash during the deploy below must not leave a matching checkpoint.
                await self._patch(member.ingress, checkpoint.patch(
                    "", timestamp=self._clock.wall()))
        stack = await self._resolve_security_groups(built)
        result = await self._deployer.deploy(stack, fresh=fresh,
                                             rewrite_write_only=not matched)
        writes = await self._writer.apply(result.target_group_bindings.values(), current)
        hostname = result.load_balancer.dns_name if result.load_balancer else ""
        changed = result.mutating_calls > 0 or writes > 0
        for member in group.members:
            await self._set_status(member.ingress, hostname)
            if checkpoint.stored(member.ingress) != value:
                changed = True
                await self._patch(member.ingress, checkpoint.patch(
                    value, timestamp=self._clock.wall()))
        for ing in group.leaving:
            await self._remove_finalizer(ing, group.finalizer)
        if changed:
            for member in group.members:
                self._event(member.ingress, "Normal", "SuccessfullyReconciled",
                            "Successfully reconciled")
        log.info("group reconciled", group=group.request.key, calls=result.calls,
                 mutating_calls=result.mutating_calls, binding_writes=writes)
        return Result()

    def _converged_in_cache(self, group: Group, built: BuiltGroup, value: str,
                            bindings: dict[str, Obj]) -> bool:
        if group.leaving:
            return False
        for member in group.members:
            ing = member.ingress
            hostnames = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress")
            if (checkpoint.stored(ing) != value or not hostnames
                    or group.finalizer not in (meta(ing).get("finalizers") or [])):
                return False
        wanted = {res.name: res for res in built.stack.target_group_bindings.values()}
        return set(bindings) == set(wanted) and all(
            matches_model(bindings[name], res) for name, res in wanted.items())

    async def _cleanup(self, group: Group) -> Result:
        bindings = self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)
        if bindings:
            await self._writer.delete(bindings)
            # Their deletion events wake the group again; the poll is a safety net.
            return Result(requeue_after=self._cleanup_poll)
        await self._deployer.delete_stack(group.stack_id, "ingress")
        for ing in group.leaving:
            await self._remove_finalizer(ing, group.finalizer)
            if not meta(ing).get("deletionTimestamp"):
                await self._clear_status(ing)
        return Result()

    async def _resolve_security_groups(self, built: BuiltGroup) -> Stack:
        """Security group names → IDs in the VPC (IDs pass through)."""
        stack = built.stack
        vpc_id = stack.context.vpc_id
        lbs: dict[str, LoadBalancer] = dict(stack.load_balancers)
        for rid, lb in lbs.items():
            names = [sg for sg in lb.security_groups if not sg.startswith("sg-")]
            if not names:
                continue
            resp = await self._pool.call("ec2", "DescribeSecurityGroups", Filters=[
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "group-name", "Values": names}])
            by_name = {g["GroupName"]: g["GroupId"] for g in resp.get("SecurityGroups") or []}
            missing = sorted(set(names) - set(by_name))
            if missing:
                raise DeployError(f"security groups not found in VPC {vpc_id}: "
                                  + ", ".join(missing))
            ids = [sg if sg.startswith("sg-") else by_name[sg] for sg in lb.security_groups]
            lbs[rid] = lb.model_copy(update={"security_groups": tuple(sorted(set(ids)))})
        return stack.model_copy(update={"load_balancers": lbs})

    # ---- writes ------------------------------------------------------------------------------

    def _event(self, ing: Obj, type: str, reason: str, message: str) -> None:
        self._recorder.event(ing, type, reason, message, resource=INGRESSES)

    async def _patch(self, ing: Obj, body: Obj, *, subresource: str | None = None) -> None:
        m = meta(ing)
        try:
            await self._client.patch(INGRESSES, str(m["name"]), body, str(m["namespace"]),
                                     subresource=subresource)
        except NotFound:
            return

    async def _add_finalizer(self, ing: Obj, finalizer: str) -> None:
        m = meta(ing)
        finalizers = list(m.get("finalizers") or [])
        if finalizer in finalizers:
            return
        await self._patch(ing, {"metadata": {"finalizers": [*finalizers, finalizer],
                                             "resourceVersion": m["resourceVersion"]}})

    async def _remove_finalizer(self, ing: Obj, finalizer: str) -> None:
        m = meta(ing)
        finalizers = list(m.get("finalizers") or [])
        if finalizer not in finalizers:
            return
        try:
            await self._patch(ing, {"metadata": {
                "finalizers": [f for f in finalizers if f != finalizer],
                "resourceVersion": m["resourceVersion"]}})
        except Conflict as exc:
            raise ReconcileError(f"Ingress {key_of(ing)} changed; retrying") from exc

    async def _set_status(self, ing: Obj, hostname: str) -> None:
        wanted = [{"hostname": hostname}] if hostname else []
        current = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if current == wanted:
            return
        await self._patch(ing, {"status": {"loadBalancer": {"ingress": wanted}}},
                          subresource="status")

    async def _clear_status(self, ing: Obj) -> None:
        await self._set_status(ing, "")
        if checkpoint.stored(ing):
            await self._patch(ing, checkpoint.removal_patch())
