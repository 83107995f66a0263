"""The Ingress group reconciler.

One reconcile of a group key, in the steps every controller takes:
1. read: the group from the cache — active members (sorted) and Ingresses leaving it (they
   still carry its finalizer: deleted, moved to another group or class); wait (briefly) for
   the OIDC Secrets its members reference to be read;
2. qualify (`qualify.py`, `exclusions.py`): newcomers that may not join, forward to a target
   group they may not use, or cannot be built are left out with their own Warning; a problem
   with an established member holds the group; a member that vanished while carrying the
   finalizer (`vanished.py`) holds it too: nothing is deployed or deleted, Warnings say why. No
   active member → only a finalizer-gated deletion deletes anything: with Ingresses leaving,
   delete the stack's TargetGroupBindings, wait until they are gone (their finalizer
   deregisters targets), delete the AWS stack, release the leavers (status and checkpoint
   cleared, finalizer dropped: one PATCH of metadata); with none, nothing happens. An Ingress
   that carries the group's finalizer but that the group was never deployed with
   (`groups.deployed_with`) only has it released;
3. build (pure stage, once, as part of qualifying; bad input → Warning Event, terminal error,
   no AWS call; a key that narrows access and cannot be honoured is bad input). Keys under
   our prefixes that a member or its backend Services carry and that are not acted on get a
   Warning each on that member (`UnsupportedAnnotation`, `UnknownAnnotation`), once per
   process (`FindingLog`): an Ingress has no condition to record them in, so a restarted
   controller tells them once more; what builds but admits no one → a Warning Event when
   deployed; the dry-run plan (`plan.py`, IngressPlanAnnotation) written on the first member
   and removed from the others, before anything else is written;
4. checkpoint: a NORMAL reconcile whose checkpoint matches on every member, with status,
   finalizers and bindings in place, stops here without AWS calls (a LOW verification never
   does);
5.-7. the tail every load-balancer reconcile shares (controller/stackapply.py), for every
   member: the finalizer (with the reset of an older checkpoint), deploy, the managed bindings,
   status (the load balancer's hostname), the group checkpoint (not while old bindings or their
   target groups remain) with, for a named group, the record of its members (`vanished.record`;
   one PATCH); then the leavers' finalizers dropped (their rules are gone now, and no record
   names them any more).
"""

from __future__ import annotations

from typing import NoReturn

import structlog

from controller import checkpoint
from controller.annotationreview import FindingLog, summarized
from controller.apis import GROUP_MEMBERS_ANNOTATION
from controller.aws import AWSError
from controller.bindings import BindingWriter
from controller.defaults import DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL
from controller.deploy import DeployError, StackDeployer
from controller.ingress.caches import Caches
from controller.ingress.groups import Group, GroupLoader, finalizer_of
from controller.ingress.model import BUILDER_VERSION, BuiltGroup
from controller.ingress.plan import DRY_RUN_PLAN, planned
from controller.ingress.qualify import Qualifier
from controller.ingress.secrets import ReferencedSecrets, ingress_secrets
from controller.ingress.status import converged_in_cache, hostname_patch, record_of
from controller.ingress.vanished import VanishedMembers, recorded_members
from controller.ingress.watches import BINDING_STACK_INDEX, ingress_service_index
from controller.lbcmetrics import stage
from controller.reconcilers import ObjectWriter, Recorder
from controller.stackapply import StackApplier
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, Conflict, NotFound
from runtime.objects import Obj, annotations_of, is_deleting, key_of, meta
from runtime.reconcile import (
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
                 loader: GroupLoader, qualifier: Qualifier, deployer: StackDeployer,
                 vpc_id: str, recorder: Recorder, clock: Clock | None = None,
                 checkpoints: bool = True, cleanup_poll: float = 1.0,
                 stabilization_interval: float = DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL,
                 secrets: ReferencedSecrets | None = None,
                 vanished: VanishedMembers | None = None, plan: bool = False) -> None:
        self._caches = caches
        self._secrets = secrets
        self._vanished = vanished or VanishedMembers(registry=None)
        self._bindings = bindings
        self._loader = loader
        self._qualifier = qualifier
        self._deployer = deployer
        self._vpc_id = vpc_id  # of the backend security group a deleted stack releases
        self._clock = clock or RealClock()
        self._checkpoints = checkpoints
        self._plan = plan  # the IngressPlanAnnotation gate (plan.py)
        self._cleanup_poll = cleanup_poll
        self._stabilization_interval = stabilization_interval
        self._told = FindingLog()
        self._writer = ObjectWriter(client, INGRESSES, recorder, self._clock)
        self._bindings_writer = BindingWriter(client)
        self._apply = StackApplier(deployer=deployer, writer=self._writer,
                                   bindings=self._bindings_writer, clock=self._clock)

    async def reconcile(self, request: Request) -> Result:
        group = self._loader.load(request)  # 1. read
        try:
            await self._read_secrets(group)
            with stage("build_model"):
                settled = await self._qualifier.qualify(group)  # 2. qualify, 3. build
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
            assert settled.built is not None  # members, not held: it built
            self._tell(group, settled.built)
            return await self._converge(group, settled.built)
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
            for key in ingress_secrets(ing, self._caches.services, ingress_service_index(ing),
                                       tls=self._secrets.tls):
                wanted.setdefault(key, []).append(ing)
        if not wanted:
            return
        for key in await self._secrets.wait(set(wanted), timeout=SECRET_WAIT):
            reason = await self._secrets.unreadable(key)
            for ing in wanted[key]:
                self._writer.event(ing, "Warning", "SecretUnreadable", reason)

    def _tell(self, group: Group, built: BuiltGroup) -> None:
        """One Warning per finding a member has not been told about by this process."""
        for member in group.members:
            findings = summarized(built.findings.get(member.key, ()))
            uid = str(meta(member.ingress).get("uid") or member.key)
            for finding in self._told.new(uid, findings):
                self._writer.event(member.ingress, "Warning", finding.reason, finding.message)

    def _report_excluded(self, group: Group) -> None:
        for ing, reason in group.excluded:
            self._writer.event(ing, "Warning", "ExcludedFromGroup",
                               f"not part of group {group.request.key}: {reason}")
        for ing, reason in group.refused:
            self._writer.event(ing, "Warning", "TargetGroupNotOwned",
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

    async def _converge(self, group: Group, built: BuiltGroup) -> Result:
        current = list(self._bindings.by_index(BINDING_STACK_INDEX, group.request.key))
        members = await self._write_plan([m.ingress for m in group.members], built)
        value = checkpoint.compute(built.stack, version=BUILDER_VERSION)
        if (self._checkpoints and reconcile_priority() >= NORMAL  # 4. checkpoint
                and converged_in_cache(group, built, value, current)):
            return Result()  # nothing the model reads changed since the last deploy
        for warning in built.warnings:  # it builds, but not what the members meant
            for ing in members:
                self._writer.event(ing, "Warning", "InboundCIDRsAdmitNoOne", warning)
        for m in group.members:
            if m.key in built.http_unauthenticated:
                self._writer.event(m.ingress, "Warning", "AuthenticationOnHTTPSOnly",
                                   built.http_unauthenticated[m.key])
        for m in group.members:
            if m.key in built.frontend_nlb_unused:
                self._writer.event(m.ingress, "Warning", "FrontendNLBNotEnabled",
                                   built.frontend_nlb_unused[m.key])
        for member in group.members:  # tolerated as upstream: a 503 rule, and a Warning
            for message in built.missing.get(member.key, ()):
                self._writer.event(member.ingress, "Warning", "BackendNotFound", message)
        wanted_record = record_of(group.request, members)
        applied = await self._apply.apply(  # 5.-7.
            built.stack, value=value, owners=members, finalizer=group.finalizer,
            current=current, status=hostname_patch, frontend_status=hostname_patch,
            annotations=None if wanted_record is None
            else lambda ing: {GROUP_MEMBERS_ANNOTATION: wanted_record})
        for ing in group.leaving:
            await self._release(ing, group.request, clear=False)
        log.info("group reconciled", group=group.request.key, calls=applied.result.calls,
                 mutating_calls=applied.result.mutating_calls,
                 binding_writes=applied.binding_writes)
        if applied.capacity_pending:
            return Result(requeue_after=self._stabilization_interval)
        return Result(requeue_after=self._cleanup_poll) if applied.unfinished else Result()

    async def _write_plan(self, members: list[Obj], built: BuiltGroup) -> list[Obj]:
        """The dry-run plan on the first member, on no other (plan.py); the members as
        written. A refused write is logged, as upstream: it holds nothing back."""
        written = {id(ing): ing for ing in members}
        for ing, plan in planned(members, built.stack, enabled=self._plan):
            try:
                written[id(ing)] = await self._writer.patch_metadata(
                    ing, annotations={DRY_RUN_PLAN: plan})
            except (Conflict, NotFound):
                raise
            except ApiError as exc:
                log.warning("dry-run plan not written", ingress=key_of(ing), error=str(exc))
        return [written[id(ing)] for ing in members]

    async def _cleanup(self, group: Group) -> Result:
        bindings = self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)
        if bindings:
            await self._bindings_writer.delete(bindings)
            # Their deletion events wake the group again; the poll is a safety net.
            return Result(requeue_after=self._cleanup_poll)
        await self._deployer.delete_stack(group.stack_id, "ingress",
                                          vpc_id=self._vpc_id or None)
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
                ing = await self._writer.patch_status(ing, hostname_patch(ing, ""))
                annotations.update(checkpoint.removal_patch()["metadata"]["annotations"])
            if DRY_RUN_PLAN in annotations_of(ing):
                annotations[DRY_RUN_PLAN] = None  # no longer a member: no plan of the group
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
