"""The Ingress group reconciler.

One reconcile of a group key, in the steps every controller takes:
1. read: the group from the cache — active members (sorted) and Ingresses leaving it (they
   still carry its finalizer: deleted, moved to another group or class);
2. qualify: no active member → delete the stack's TargetGroupBindings, wait until they are gone
   (their finalizer deregisters targets), delete the AWS stack, release the leavers (status and
   checkpoint cleared, finalizer dropped: one PATCH of metadata);
3. build (pure stage; bad input → Warning Event on every member, terminal error, no AWS call);
4. checkpoint: a NORMAL reconcile whose checkpoint matches on every member, with status,
   finalizers and bindings in place, stops here without AWS calls (a LOW verification never
   does);
5. finalizer on every member, in the same PATCH as the reset of an older checkpoint;
6. deploy: bindings the stack no longer wants are deleted and waited for; then the stack, and
   the wanted bindings;
7. status (the load balancer's hostname) and the group checkpoint on every member; the
   leavers' finalizers dropped (their rules are gone now).
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from controller import checkpoint
from controller.apis import CHECKPOINT_ANNOTATION
from controller.aws import AWSClientPool, AWSError
from controller.bindings import BindingWriter, matches_model
from controller.deploy import DeployError, StackDeployer
from controller.errors import InvalidInput
from controller.ingress.caches import Caches
from controller.ingress.groups import Group, GroupLoader
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group
from controller.ingress.watches import BINDING_STACK_INDEX
from controller.reconcilers import ObjectWriter, Recorder
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, Conflict, NotFound
from runtime.objects import Obj, has_finalizer, is_deleting, key_of, meta, name_of
from runtime.predicates import EventKind
from runtime.reconcile import (
    LOW,
    NORMAL,
    ReconcileError,
    Request,
    Result,
    TerminalError,
    reconcile_priority,
)
from runtime.resources import INGRESSES
from runtime.store import Store

log = structlog.get_logger("ingress")


class IngressReconciler:
    def __init__(self, *, client: KubeClient, caches: Caches, bindings: Store,
                 loader: GroupLoader, deployer: StackDeployer, pool: AWSClientPool,
                 settings: BuilderSettings, recorder: Recorder,
                 clock: Clock | None = None, checkpoints: bool = True,
                 cleanup_poll: float = 1.0) -> None:
        self._caches = caches
        self._bindings = bindings
        self._loader = loader
        self._deployer = deployer
        self._pool = pool
        self._settings = settings
        self._clock = clock or RealClock()
        self._checkpoints = checkpoints
        # Replay decisions: request → (its members' resourceVersions, priority). A restart
        # replays every member and every backend Service of a group, each asking for the same
        # decision; computing it once per group keeps a 1,000-Ingress replay short. Any other
        # event (a change) drops them all.
        self._decisions: dict[Request, tuple[tuple[str, ...], int]] = {}
        self._cleanup_poll = cleanup_poll
        self._writer = ObjectWriter(client, INGRESSES, recorder, self._clock)
        self._bindings_writer = BindingWriter(client)

    # ---- checkpoints -------------------------------------------------------------------------

    def computed_checkpoint(self, request: Request) -> str | None:
        group = self._loader.load(request)
        if not group.members:
            return None
        try:
            built = build_group(group, self._caches, self._settings)
        except InvalidInput:
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
                self._writer.event(member.ingress, "Warning", "FailedDeployModel", str(exc))
            raise ReconcileError(str(exc)) from exc

    async def _converge(self, group: Group) -> Result:
        # No member carried the finalizer yet: nothing of this group can be in AWS.
        fresh = not any(has_finalizer(m.ingress, group.finalizer) for m in group.members)
        try:  # 3. build
            built = build_group(group, self._caches, self._settings)
        except InvalidInput as exc:
            for member in group.members:
                self._writer.event(member.ingress, "Warning", "FailedBuildModel", str(exc))
            raise TerminalError(str(exc)) from None
        value = checkpoint.compute(built.stack, version=BUILDER_VERSION)  # 4. checkpoint
        current = {name_of(b): b
                   for b in self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)}
        if (self._checkpoints and reconcile_priority() >= NORMAL
                and self._converged_in_cache(group, built, value, current)):
            return Result()  # nothing the model reads changed since the last deploy
        # Write-only fields (OIDC client secrets) are written unless every member's checkpoint
        # says this very stack was deployed; a LOW verification of a match skips them.
        matched = all(checkpoint.stored(m.ingress) == value for m in group.members)
        members = []
        for member in group.members:  # 5. finalizer, with the reset of an older checkpoint
            stored = checkpoint.stored(member.ingress)
            reset = self._checkpoints and bool(stored) and stored != value
            members.append(await self._writer.patch_metadata(
                member.ingress, add_finalizer=group.finalizer,
                annotations={CHECKPOINT_ANNOTATION: ""} if reset else None))
        wanted = {tgb.name for tgb in built.stack.target_group_bindings.values()}
        stale = [b for name, b in sorted(current.items()) if name not in wanted]
        if stale:  # 6. deploy
            # Bindings the model dropped go first, and are waited for: their finalizer
            # deregisters targets from target groups the deploy is about to delete. Their
            # deletion events wake the group; the poll is a safety net.
            await self._bindings_writer.delete(stale)
            return Result(requeue_after=self._cleanup_poll)
        result = await self._deployer.deploy(built.stack, fresh=fresh,
                                             rewrite_write_only=not matched)
        writes = await self._bindings_writer.apply(result.target_group_bindings.values(),
                                                   current)
        hostname = result.load_balancer.dns_name if result.load_balancer else ""
        changed = result.mutating_calls > 0 or writes > 0
        for ing in members:  # 7. status, then the checkpoint
            await self._writer.patch_status(ing, _hostname_patch(ing, hostname))
            if checkpoint.stored(ing) != value:
                changed = True
                await self._writer.patch(ing, checkpoint.patch(
                    value, timestamp=self._clock.wall()))
        for ing in group.leaving:
            await self._release(ing, group.finalizer, clear=False)
        if changed:
            for ing in members:
                self._writer.event(ing, "Normal", "SuccessfullyReconciled",
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
            await self._bindings_writer.delete(bindings)
            # Their deletion events wake the group again; the poll is a safety net.
            return Result(requeue_after=self._cleanup_poll)
        await self._deployer.delete_stack(group.stack_id, "ingress",
                                          vpc_id=self._settings.vpc_id or None)
        for ing in group.leaving:
            await self._release(ing, group.finalizer, clear=True)
        return Result()

    # ---- writes ------------------------------------------------------------------------------

    async def _release(self, ing: Obj, finalizer: str, *, clear: bool) -> None:
        """An Ingress whose rules are gone from the group's stack: with `clear` its status and
        checkpoint cleared (unless it is being deleted), then the group's finalizer dropped."""
        try:
            annotations: Mapping[str, str | None] | None = None
            if clear and not is_deleting(ing):
                ing = await self._writer.patch_status(ing, _hostname_patch(ing, ""))
                annotations = checkpoint.removal_patch()["metadata"]["annotations"]
            await self._writer.patch_metadata(ing, remove_finalizer=finalizer,
                                              annotations=annotations)
        except NotFound:
            return
        except Conflict as exc:
            raise ReconcileError(f"Ingress {key_of(ing)} changed; retrying") from exc


def _hostname_patch(ing: Obj, hostname: str) -> Obj | None:
    wanted = [{"hostname": hostname}] if hostname else []
    status = ing.get("status") if isinstance(ing.get("status"), dict) else {}
    balancer = (status or {}).get("loadBalancer") or {}
    current = balancer.get("ingress") if isinstance(balancer, dict) else None
    if (current or []) == wanted:
        return None
    return {"status": {"loadBalancer": {"ingress": wanted}}}
