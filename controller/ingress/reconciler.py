"""The Ingress group reconciler.

One reconcile of a group key, in the steps every controller takes:
1. read: the group from the cache — active members (sorted) and Ingresses leaving it (they
   still carry its finalizer: deleted, moved to another group or class); wait (briefly) for
   the OIDC Secrets its members reference to be read;
2. qualify: settle the group (`exclusions.py`): newcomers that may not join or cannot be built
   are left out with their own Warning, a problem with an established member holds the group;
   a member that vanished while carrying the finalizer (`vanished.py`) holds it too: nothing
   is deployed or deleted, Warnings say why. No active member → only a finalizer-gated
   deletion deletes anything: with Ingresses leaving, delete the stack's TargetGroupBindings,
   wait until they are gone (their finalizer deregisters targets), delete the AWS stack,
   release the leavers (status and checkpoint cleared, finalizer dropped: one PATCH of
   metadata); with none, nothing happens. An Ingress that carries the group's finalizer but
   that the group was never deployed with (`groups.deployed_with`) only has it released;
3. build (pure stage, part of settling; bad input → Warning Event, terminal error, no AWS
   call);
4. checkpoint: a NORMAL reconcile whose checkpoint matches on every member, with status,
   finalizers and bindings in place, stops here without AWS calls (a LOW verification never
   does);
5. ownership, then the finalizer: every target group a member forwards to by ARN is checked
   (`controller.ownership`; a newcomer forwarding where it may not is left out, an
   established member holds the group); then the finalizer on every member, in the same
   PATCH as the reset of an older checkpoint;
6. deploy, keeping target groups a binding still points at; then the wanted bindings (matched
   by target group ARN, never renamed), and only then the deletion of the ones the stack no
   longer wants (the listeners point elsewhere by now; their target groups go on a later pass);
7. status (the load balancer's hostname), the group checkpoint (not while old bindings or
   their target groups remain) and, for a named group, the record of its members
   (`vanished.record`; one PATCH) on every member; then the leavers' finalizers dropped (their
   rules are gone now, and no record names them any more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NoReturn

import structlog

from controller import checkpoint, ownership
from controller.annotations import AnnotationError
from controller.apis import CHECKPOINT_ANNOTATION, GROUP_MEMBERS_ANNOTATION
from controller.aws import AWSClientPool, AWSError
from controller.bindings import BindingWriter, matches_model, retained_arns
from controller.deploy import DeployError, StackDeployer
from controller.errors import InvalidInput
from controller.ingress.annotations import parse_ingress
from controller.ingress.caches import Caches
from controller.ingress.exclusions import GroupNamespaces, Settled, settle
from controller.ingress.groups import Group, GroupLoader, Member, finalizer_of, is_explicit
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group
from controller.ingress.secrets import ReferencedSecrets, ingress_secrets
from controller.ingress.vanished import (
    VanishedMembers,
    record,
    recorded_members,
    recorded_unknown,
)
from controller.ingress.watches import BINDING_STACK_INDEX, ingress_service_index
from controller.reconcilers import ObjectWriter, Recorder
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, Conflict, NotFound
from runtime.handlers import Deferred
from runtime.objects import Obj, has_finalizer, is_deleting, key_of, meta, namespace_of
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

SECRET_WAIT = 5.0  # how long a reconcile waits for a just-referenced Secret to be read


class IngressReconciler:
    def __init__(self, *, client: KubeClient, caches: Caches, bindings: Store,
                 loader: GroupLoader, deployer: StackDeployer, pool: AWSClientPool,
                 settings: BuilderSettings, recorder: Recorder,
                 clock: Clock | None = None, checkpoints: bool = True,
                 cleanup_poll: float = 1.0, group_namespaces: GroupNamespaces = "params",
                 secrets: ReferencedSecrets | None = None,
                 vanished: VanishedMembers | None = None,
                 target_groups: ownership.TargetGroupLookup | None = None) -> None:
        self._caches = caches
        self._policy: GroupNamespaces = group_namespaces
        self._secrets = secrets
        self._vanished = vanished or VanishedMembers(registry=None)
        self._target_groups = target_groups or ownership.TargetGroupLookup(pool, clock=clock)
        self._bindings = bindings
        self._loader = loader
        self._deployer = deployer
        self._pool = pool
        self._settings = settings
        self._clock = clock or RealClock()
        self._checkpoints = checkpoints
        # Replay decisions: request → (its candidate members' versions, priority). A restart
        # replays every member and every backend Service of a group, each asking for the same
        # decision; computing it once per group keeps a 1,000-Ingress replay short. Any other
        # event (a change) drops them all.
        self._decisions: dict[Request, tuple[tuple[tuple[str, str], ...], int | Deferred]] = {}
        self._cleanup_poll = cleanup_poll
        self._writer = ObjectWriter(client, INGRESSES, recorder, self._clock)
        self._bindings_writer = BindingWriter(client)

    # ---- checkpoints -------------------------------------------------------------------------

    def _settle(self, group: Group) -> Settled[BuiltGroup]:
        return settle(group, caches=self._caches, policy=self._policy,
                      build=lambda g: build_group(g, self._caches, self._settings),
                      unknown=self._vanished.unknown(
                          group.request, recorded_unknown(group, self._exists)))

    def _exists(self, key: str) -> bool:
        return self._caches.ingresses.get(key) is not None

    def computed_checkpoint(self, request: Request) -> str | None:
        return self._checkpoint_of(self._loader.load(request))

    def _checkpoint_of(self, group: Group) -> str | None:
        settled = self._settle(group)
        if settled.built is None or settled.group.unknown:
            return None
        return checkpoint.compute(settled.built.stack, version=BUILDER_VERSION)

    def _deployed_checkpoint(self, group: Group) -> str | None:
        """The group's checkpoint when the Kubernetes side of its last deploy is still what the
        cache holds, else None: a managed binding deleted by hand while the controller was down
        (one without its finalizer yet leaves no deletion event to replay), a member's
        finalizer, address or member record gone, is a real change, not for the paced lane."""
        settled = self._settle(group)
        if settled.built is None or settled.group.unknown:
            return None
        value = checkpoint.compute(settled.built.stack, version=BUILDER_VERSION)
        bindings = list(self._bindings.by_index(BINDING_STACK_INDEX, group.request.key))
        if not self._converged_in_cache(settled.group, settled.built, value, bindings):
            return None
        return value

    def priority(self, request: Request, kind: EventKind, default: int) -> int | Deferred:
        """An initial-list add or resync of a group whose checkpoint matches on every member,
        with the Kubernetes side of its last deploy intact, goes to the paced LOW lane; anything
        else keeps its default (NORMAL). A group whose members carry one checkpoint between them
        needs its model built to tell: that is decided off the event path (Deferred); any other
        is NORMAL at once."""
        if not self._checkpoints:
            return NORMAL
        if kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            self._decisions.clear()
            return default
        # Each of a group's members, its Services, bindings and class ask at start-up: the
        # group is built once, and the others find the decision by the candidates' versions.
        versions = self._loader.versions(request)
        known = self._decisions.get(request)
        if known is not None and known[0] == versions:
            return known[1]  # the others of the group ask for the same (deferred) decision
        members = self._loader.load(request).members
        stored = {checkpoint.stored(m.ingress) for m in members}
        decision: int | Deferred = NORMAL
        if len(stored) == 1 and next(iter(stored)):
            decision = Deferred(lambda: self._decide(request))
        # Else no member, a member without a checkpoint, or members that disagree: a change.
        self._decisions[request] = (versions, decision)
        return decision

    def _decide(self, request: Request) -> int:
        """The deferred half of `priority`, on the caches as they are by then."""
        versions = self._loader.versions(request)
        known = self._decisions.get(request)
        if known is not None and known[0] == versions and not isinstance(known[1], Deferred):
            return known[1]
        group = self._loader.load(request)
        members = group.members
        value = self._deployed_checkpoint(group)
        decision = NORMAL
        if (value is not None and members
                and all(checkpoint.stored(m.ingress) == value for m in members)):
            decision = LOW
        self._decisions[request] = (versions, decision)
        return decision

    # ---- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        group = self._loader.load(request)  # 1. read, wait for Secrets; 2. qualify
        try:
            await self._read_secrets(group)
            settled = self._settle(group)
            group = settled.group
            self._report_excluded(group)
            for ing in group.strays:  # never deployed with them: only their finalizer goes
                await self._release(ing, group.request, clear=False)
            if group.unknown:
                return self._hold_unknown(group)
            if group.held is not None:
                self._report_held(group, group.held)
            if not group.members:
                return await self._cleanup(group) if group.leaving else Result()
            return await self._converge(group, settled)
        except Conflict as exc:
            # A write raced a change we have not seen yet; the retry reads the new state.
            raise ReconcileError(str(exc)) from exc
        except (ApiError, AWSError, DeployError) as exc:
            for member in group.members:
                self._writer.event(member.ingress, "Warning", "FailedDeployModel", str(exc))
            raise ReconcileError(str(exc)) from exc

    def _report_held(self, group: Group, message: str) -> NoReturn:
        for member in group.members:
            self._writer.event(member.ingress, "Warning", "FailedBuildModel", message)
        raise TerminalError(message)

    async def _read_secrets(self, group: Group) -> None:
        """Wait for the OIDC Secrets the members reference to be read; one that cannot be is
        reported on the members naming it (their build then fails, and is attributed)."""
        if self._secrets is None:
            return
        wanted: dict[str, list[Obj]] = {}
        for member in group.members:
            ing = member.ingress
            for key in ingress_secrets(ing, self._caches.services, ingress_service_index(ing)):
                wanted.setdefault(key, []).append(ing)
        if not wanted:
            return
        for key in await self._secrets.wait(set(wanted), timeout=SECRET_WAIT):
            reason = await self._secrets.unreadable(key)
            for ing in wanted[key]:
                self._writer.event(ing, "Warning", "SecretUnreadable", reason)

    def _report_excluded(self, group: Group) -> None:
        for ing, reason in group.excluded:
            self._writer.event(ing, "Warning", "ExcludedFromGroup",
                               f"not part of group {group.request.key}: {reason}")

    def _hold_unknown(self, group: Group) -> Result:
        names = ", ".join(key_of(ing) for ing in group.unknown)
        message = (f"group {group.request.key}: Ingress(es) {names} vanished without their "
                   "finalizer being released; nothing of the group is deployed or deleted "
                   "until an Ingress of that name exists again (re-create it; delete it from "
                   "there to remove its resources)")
        for ing in [*(m.ingress for m in group.members), *group.unknown]:
            self._writer.event(ing, "Warning", "UnknownGroupMember", message)
        log.warning("group held: members vanished", group=group.request.key, vanished=names)
        return Result()

    async def _forwarding_refused(self, group: Group) -> list[tuple[Obj, str]]:
        """Members forwarding by ARN to a target group they may not forward to."""
        refused: list[tuple[Obj, str]] = []
        for member in group.members:
            namespace = namespace_of(member.ingress)
            for arn in _forwarded_arns(member):
                try:
                    facts = await self._target_groups.facts(arn)
                    ownership.check_target_group(facts, namespace=namespace,
                                                 vpc_id=self._settings.cluster.vpc_id,
                                                 cluster_name=self._settings.cluster.name)
                    ownership.check_forward(
                        facts, namespace=namespace,
                        bindings=ownership.bindings_of(self._bindings.by_index, facts))
                except InvalidInput as exc:
                    refused.append((member.ingress, f"forward to {arn}: {exc}"))
                    break
        return refused

    async def _without_refused(self, group: Group, settled: Settled[BuiltGroup]
                               ) -> tuple[Group, BuiltGroup]:
        """The group and its build once members forwarding where they may not are out."""
        refused = await self._forwarding_refused(group)
        for ing, reason in refused:
            if group.established(ing):
                self._report_held(group, f"Ingress {key_of(ing)}: {reason}; the group keeps "
                                         "what is deployed until this is fixed")
        if refused:
            for ing, reason in refused:
                self._writer.event(ing, "Warning", "TargetGroupNotOwned",
                                   f"not part of group {group.request.key}: {reason}")
            out = {key_of(ing) for ing, _ in refused}
            settled = self._settle(dataclasses.replace(
                group, members=tuple(m for m in group.members if m.key not in out),
                excluded=(), held=None))
            group = settled.group
            self._report_excluded(group)
            if group.held is not None:
                self._report_held(group, group.held)
        if settled.built is None or not group.members:
            raise TerminalError(f"group {group.request.key}: no member left to deploy")
        return group, settled.built

    async def _converge(self, group: Group, settled: Settled[BuiltGroup]) -> Result:
        assert settled.built is not None
        current = list(self._bindings.by_index(BINDING_STACK_INDEX, group.request.key))
        value = checkpoint.compute(settled.built.stack, version=BUILDER_VERSION)
        if (self._checkpoints and reconcile_priority() >= NORMAL
                and self._converged_in_cache(group, settled.built, value, current)):
            return Result()  # nothing the model reads changed since the last deploy
        # 5. About to write: first every forward to a target group named by ARN.
        group, built = await self._without_refused(group, settled)
        value = checkpoint.compute(built.stack, version=BUILDER_VERSION)
        # No member carried the finalizer yet: nothing of this group can be in AWS.
        fresh = not any(has_finalizer(m.ingress, group.finalizer) for m in group.members)
        # Write-only fields (OIDC client secrets) are written unless every member's checkpoint
        # says this very stack was deployed; a LOW verification of a match skips them.
        matched = all(checkpoint.stored(m.ingress) == value for m in group.members)
        members = []
        for member in group.members:  # the finalizer, with the reset of an older checkpoint
            stored = checkpoint.stored(member.ingress)
            reset = self._checkpoints and bool(stored) and stored != value
            members.append(await self._writer.patch_metadata(
                member.ingress, add_finalizer=group.finalizer,
                annotations={CHECKPOINT_ANNOTATION: ""} if reset else None))
        # 6. deploy, keeping target groups a binding still points at; then the bindings,
        # matched by target group ARN. Bindings the model dropped are deleted only now that the
        # listeners point elsewhere, and their target groups on a later pass, once they are
        # gone (their deletion events wake the group; the poll is a safety net).
        result = await self._deployer.deploy(built.stack, fresh=fresh,
                                             rewrite_write_only=not matched,
                                             retain=retained_arns(current))
        applied = await self._bindings_writer.apply(result.target_group_bindings.values(),
                                                    current)
        writes = applied.writes
        for name in applied.taken:
            for member in group.members:
                self._writer.event(member.ingress, "Warning", "BindingNameTaken",
                                   f"TargetGroupBinding {name} exists and points at another "
                                   "target group; not replaced")
        unfinished = bool(result.retained_target_groups or applied.blocked)
        hostname = result.load_balancer.dns_name if result.load_balancer else ""
        changed = result.mutating_calls > 0 or writes > 0
        wanted_record = _record_of(group.request, members)
        for ing in members:  # 7. status, then the checkpoint (none while unfinished) with the
            # record of the members
            await self._writer.patch_status(ing, _hostname_patch(ing, hostname))
            annotations: dict[str, str | None] = {}
            if not unfinished and checkpoint.stored(ing) != value:
                changed = True
                annotations.update(checkpoint.patch(
                    value, timestamp=self._clock.wall())["metadata"]["annotations"])
            if wanted_record is not None:
                annotations[GROUP_MEMBERS_ANNOTATION] = wanted_record
            await self._writer.patch_metadata(ing, annotations=annotations)
        for ing in group.leaving:
            await self._release(ing, group.request, clear=False)
        if changed:
            for ing in members:
                self._writer.event(ing, "Normal", "SuccessfullyReconciled",
                                   "Successfully reconciled")
        log.info("group reconciled", group=group.request.key, calls=result.calls,
                 mutating_calls=result.mutating_calls, binding_writes=writes)
        return Result(requeue_after=self._cleanup_poll) if unfinished else Result()

    def _converged_in_cache(self, group: Group, built: BuiltGroup, value: str,
                            bindings: list[Obj]) -> bool:
        if group.leaving:
            return False
        wanted_record = _record_of(group.request, [m.ingress for m in group.members])
        for member in group.members:
            ing = member.ingress
            hostnames = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress")
            if (checkpoint.stored(ing) != value or not hostnames
                    or (wanted_record is not None and _stored_record(ing) != wanted_record)
                    or group.finalizer not in (meta(ing).get("finalizers") or [])):
                return False
        return matches_model(bindings, built.stack.target_group_bindings.values())

    async def _cleanup(self, group: Group) -> Result:
        bindings = self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)
        if bindings:
            await self._bindings_writer.delete(bindings)
            # Their deletion events wake the group again; the poll is a safety net.
            return Result(requeue_after=self._cleanup_poll)
        await self._deployer.delete_stack(group.stack_id, "ingress",
                                          vpc_id=self._settings.cluster.vpc_id or None)
        for ing in group.leaving:
            await self._release(ing, group.request, clear=True)
        return Result()

    # ---- writes ------------------------------------------------------------------------------

    async def _release(self, ing: Obj, group: Request, *, clear: bool) -> None:
        """An Ingress whose rules are gone from the group's stack: with `clear` its status and
        checkpoint cleared (unless it is being deleted), then the group's finalizer dropped."""
        try:
            annotations: dict[str, str | None] = {}
            if clear and not is_deleting(ing):
                ing = await self._writer.patch_status(ing, _hostname_patch(ing, ""))
                annotations.update(checkpoint.removal_patch()["metadata"]["annotations"])
            if recorded_members(ing, group):
                # Its record of this group goes with the finalizer; one of a group it has
                # joined since stays.
                annotations[GROUP_MEMBERS_ANNOTATION] = None
            await self._writer.patch_metadata(ing, remove_finalizer=finalizer_of(group),
                                              annotations=annotations)
            self._vanished.released(ing)
        except NotFound:
            return
        except Conflict as exc:
            raise ReconcileError(f"Ingress {key_of(ing)} changed; retrying") from exc


def _record_of(request: Request, members: Sequence[Obj]) -> str | None:
    return record(request, (key_of(ing) for ing in members)) if is_explicit(request) else None


def _stored_record(ing: Obj) -> str | None:
    annotations = meta(ing).get("annotations")
    value = annotations.get(GROUP_MEMBERS_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else None


def _forwarded_arns(member: Member) -> list[str]:
    """Target group ARNs the member's `actions.*` annotations forward to."""
    try:
        actions = parse_ingress(member.ingress).actions
    except AnnotationError:
        return []  # the build reports it
    found: list[str] = []
    for spec in actions.values():
        if spec.target_group_arn:
            found.append(spec.target_group_arn)
        if spec.forward_config is not None:
            found.extend(t.target_group_arn for t in spec.forward_config.target_groups
                         if t.target_group_arn)
    return sorted(set(found))


def _hostname_patch(ing: Obj, hostname: str) -> Obj | None:
    wanted = [{"hostname": hostname}] if hostname else []
    status = ing.get("status") if isinstance(ing.get("status"), dict) else {}
    balancer = (status or {}).get("loadBalancer") or {}
    current = balancer.get("ingress") if isinstance(balancer, dict) else None
    if (current or []) == wanted:
        return None
    return {"status": {"loadBalancer": {"ingress": wanted}}}
