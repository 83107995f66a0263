"""The stack deployer: make AWS equal the model, in the order (imported certificates,) target
groups → load balancer → listeners → rules → the load balancer's addons (WAFv2, WAF Classic,
Shield) → its capacity reservation once it is active, then delete what the model no longer
has (in reverse). A deleted load balancer takes its
web ACL associations with it (AWS drops them); nothing else is called for them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

from controller.aws import (
    AfterMutation,
    AWSClientPool,
    AWSError,
    BatchingReader,
    BeforeMutation,
    CallCounts,
    Caller,
    DescribeBatcher,
    DirectReader,
    Reader,
    RegionSnapshot,
    SnapshotReader,
    SnapshotStale,
)
from controller.deploy.capacity import converge_capacity
from controller.deploy.certificates import StackCertificates
from controller.deploy.concurrency import run_all
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError
from controller.deploy.identity import find_load_balancers, follow_existing, match_target_groups
from controller.deploy.lbtargets import converge_load_balancer_targets
from controller.deploy.listenerrules import converge_rules
from controller.deploy.listeners import (
    ObservedListeners,
    converge_listener,
    delete_listener,
    observe_listeners,
)
from controller.deploy.loadbalancer import converge_load_balancer
from controller.deploy.ownedarns import OwnedArns, StackArns, StackKey
from controller.deploy.resolve import ResolverSettings, StackResolver
from controller.deploy.result import DeployResult, LoadBalancerStatus, ResolvedTargetGroupBinding
from controller.deploy.securitygroups import (
    PreparedGroups,
    SecurityGroupSettings,
    StackSecurityGroups,
)
from controller.deploy.shield import converge_shield
from controller.deploy.tags import Tracking
from controller.deploy.targetgroups import converge_target_group
from controller.deploy.wafregional import converge_waf_regional
from controller.deploy.wafv2 import converge_wafv2
from controller.model import TARGET_GROUP, Stack, StackKind
from controller.networking.backend import BackendSecurityGroup
from runtime.clock import Clock, RealClock


@dataclass(frozen=True, kw_only=True)
class DeployerSettings:
    """How the deployer works, never what it deploys: that comes from the Stack alone (its
    context names the cluster, region and VPC), so a stack's checkpoint covers all of it.
    `cluster_name` scopes the one-time region scan and must equal every stack's."""

    cluster_name: str
    # A target group still attached to something being deleted: retry this many times.
    in_use_retries: int = 5
    in_use_backoff: float = 0.2
    # A security group AWS still finds in use (a deleted load balancer's interfaces linger):
    # retry this many times, then leave it to the next reconcile.
    security_group_retries: int = 3
    security_group_backoff: float = 1.0
    # Whether stacks may own ACM certificates (imported from Secrets): only then are they
    # looked for, in particular once per process across the region (`StackCertificates`).
    manage_certificates: bool = False
    # The EnableRGTAPI feature gate: the one-time scan for what the cluster's stacks own asks
    # the Resource Groups Tagging API (ownedarns.py).
    rgt_api: bool = False


class StackDeployer:
    def __init__(self, pool: AWSClientPool, settings: DeployerSettings, *,
                 resolver: StackResolver | None = None, clock: Clock | None = None,
                 before_mutation: BeforeMutation | None = None,
                 after_mutation: AfterMutation | None = None,
                 backend: BackendSecurityGroup | None = None,
                 snapshot: RegionSnapshot | None = None) -> None:
        """`backend`: the shared backend security group, when several deployers share it (the
        Service and Ingress controllers of one process); by default this deployer's own.
        `snapshot`: the region snapshot verifications read, shared likewise (and with the
        TargetGroupBinding controller); by default this deployer's own."""
        self._pool = pool
        self._settings = settings
        self._clock: Clock = clock or RealClock()
        self._resolver = resolver or StackResolver(ResolverSettings(), clock=self._clock)
        self._owned = OwnedArns(cluster=settings.cluster_name, rgt_api=settings.rgt_api)
        self._batcher = DescribeBatcher(pool.verification_budget, clock=self._clock)
        self._snapshot = snapshot if snapshot is not None else RegionSnapshot(clock=self._clock)
        self._groups = StackSecurityGroups(
            cluster=settings.cluster_name, backend=backend, clock=self._clock,
            settings=SecurityGroupSettings(delete_retries=settings.security_group_retries,
                                           delete_backoff=settings.security_group_backoff))
        self._certificates = StackCertificates(cluster=settings.cluster_name)
        # Test seams: see `controller.aws.BeforeMutation`.
        self.before_mutation = before_mutation
        self.after_mutation = after_mutation

    @property
    def owned(self) -> OwnedArns:
        return self._owned

    @property
    def backend(self) -> BackendSecurityGroup:
        return self._groups.backend

    @property
    def snapshot(self) -> RegionSnapshot:
        return self._snapshot

    def _reader(self, *, snapshot: bool = False, counts: CallCounts | None = None) -> Reader:
        """A deploy's reader, over a caller of its own (its counts, the test hooks): lookups
        shared with other verifications, and for a verification's first run (`snapshot`)
        answered from the region snapshot."""
        caller = Caller(self._pool, counts=counts, before_mutation=self.before_mutation,
                        after_mutation=self.after_mutation)
        reader: Reader = BatchingReader(DirectReader(caller), self._batcher)
        return SnapshotReader(reader, self._snapshot) if snapshot else reader

    def _tracking(self, kind: StackKind, stack_id: str,
                  external_managed_tags: Sequence[str] = ()) -> Tracking:
        return Tracking(cluster=self._settings.cluster_name, kind=kind, stack_id=stack_id,
                        external_managed_tags=frozenset(external_managed_tags))

    async def deploy(self, stack: Stack, *, fresh: bool = False,
                     rewrite_write_only: bool = True,
                     retain: Set[str] = frozenset()) -> DeployResult:
        """Converge AWS to `stack`. `fresh` says the caller knows no earlier deploy of this
        stack can have written to AWS (its object never carried our finalizer, which is added
        before the first write): then no predecessor can exist under an older name, and the
        one-time region scan that looks for one is skipped. After a restart with many stacks
        that scan is the costliest thing a first deploy could do, and a new object should not
        wait for it.

        `rewrite_write_only=False` is for a stack whose checkpoint matched the object's: its
        write-only fields (OIDC client secrets, which AWS never returns) were written by the
        deploy that recorded that checkpoint. Otherwise they are written again.

        `retain`: target group ARNs a TargetGroupBinding still points at. One the model no
        longer has is kept (and reported in `retained_target_groups`) until its binding is
        gone, so that the binding is deleted only after the listeners point elsewhere, and the
        target group only after its binding."""
        if stack.context.cluster_name != self._settings.cluster_name:
            raise DeployError(f"stack {stack.id} is for cluster {stack.context.cluster_name}, "
                              f"this deployer for {self._settings.cluster_name}")
        region = self._pool.settings.region
        if stack.context.region != region:
            raise DeployError(f"stack {stack.id} is for region {stack.context.region}, the "
                              f"AWS clients for {region}")
        counts = CallCounts()
        try:
            # A verification reads from the region snapshot; if it finds anything to change,
            # it is run again on fresh reads before changing it (controller/aws/snapshot.py).
            return await self._deploy_once(stack, self._reader(snapshot=True, counts=counts),
                                           fresh=fresh, rewrite_write_only=rewrite_write_only,
                                           retain=retain)
        except SnapshotStale:
            return await self._deploy_once(stack, self._reader(counts=counts), fresh=fresh,
                                           rewrite_write_only=rewrite_write_only,
                                           retain=retain)

    async def _deploy_once(self, stack: Stack, reader: Reader, *, fresh: bool,
                           rewrite_write_only: bool, retain: Set[str]) -> DeployResult:
        key: StackKey = (stack.kind, stack.id)
        cold = not self._owned.known(key)
        owned = self._owned.get(key)
        run = DeployRun(stack=stack, reader=reader,
                        tracking=self._tracking(stack.kind, stack.id,
                                                stack.context.external_managed_tags),
                        rewrite_write_only=rewrite_write_only)
        # The security-group step, started once the stack is resolved; stopped here if the
        # deploy ends before it does.
        started: list[asyncio.Future[PreparedGroups]] = []
        try:
            return await self._deploy(run, key, owned, started, cold=cold and not fresh,
                                      fresh=fresh, retain=retain)
        except BaseException:
            # Half-learnt records of a stack never seen before are dropped (the next run finds
            # everything by name and tags again), unless the one-time scan filled them: that
            # scan is not repeated, so what it found is kept.
            if cold and not self._owned.scanned:
                self._owned.forget(key)
            raise
        finally:
            for step in started:
                if not step.done():
                    step.cancel()
            await asyncio.gather(*started, return_exceptions=True)

    async def _deploy(self, run: DeployRun, key: StackKey, owned: StackArns,
                      started: list[asyncio.Future[PreparedGroups]], *, cold: bool,
                      fresh: bool, retain: Set[str]) -> DeployResult:
        calls, reader = run.calls, run.reader
        if run.stack.certificates and not self._settings.manage_certificates:
            raise DeployError(f"stack {run.stack.id} has certificates to import, and this "
                              "deployer does not manage certificates")

        # Identify: the stack's load balancers by their tags (identity.py); a stack this
        # process has not seen, about to create one, first looks for it under older names.
        models = dict(run.stack.load_balancers)
        lbs = await find_load_balancers(reader, run.tracking, owned, models)
        if any(rid not in lbs.current for rid in models) and cold:
            await self._owned.ensure_scanned(reader)
            lbs = await find_load_balancers(reader, run.tracking, owned, models)
        followed = {rid: follow_existing(model, lbs.current.get(rid), vpc_id=run.vpc_id)
                    for rid, model in models.items()}
        if any(followed[rid] is not models[rid] for rid in models):
            run.stack = run.stack.model_copy(update={"load_balancers": followed})
        run.stack = stack = await self._resolver.resolve(run.stack, calls)
        lb_arns = {rid: d["LoadBalancerArn"] for rid, d in lbs.current.items()}
        # Security groups concurrently with the target groups, before the load balancer, which
        # is created carrying them; only once the stack resolved (a ResolveError changes nothing).
        # User-given groups are checked before anything of the stack is created or changed.
        named = await self._groups.resolve_named(run)
        groups_step = asyncio.ensure_future(self._groups.prepare(run, key, fresh=fresh,
                                                                 named=named))
        started.append(groups_step)

        # Observe target groups, listeners and rules concurrently, then all their tags at once.
        order = sorted(lb_arns)
        (tgs, in_use), *observed_each = await asyncio.gather(
            self._observe_target_groups(run, owned, [lb_arns[rid] for rid in order]),
            *(observe_listeners(run, lb_arns[rid]) for rid in order))
        observed = dict(zip(order, observed_each, strict=True))
        tags = await reader.tags([*tgs, *(a for o in observed.values()
                                          for a in o.arns(tagged=run.tags_listeners))])
        tags.update(lbs.tags)
        matched = match_target_groups(
            run.tracking, stack.target_groups, tgs, tags, in_use=in_use,
            advanced_health_check=stack.context.nlb_health_check_advanced_config)
        if matched.unmatched:
            # About to create: first by the model's names (a crashed run's creation, or a
            # name someone else holds), then, for a stack this process has not seen, by the
            # one-time scan (an older model may have left one, unattached, under another name).
            found = await reader.target_groups(names=sorted(
                stack.target_groups[rid].name for rid in matched.unmatched))
            if cold and not self._owned.scanned:
                await self._owned.ensure_scanned(reader)
                found += await reader.target_groups(arns=sorted(
                    owned.target_groups - set(tgs) - {d["TargetGroupArn"] for d in found}))
            new = {d["TargetGroupArn"]: d for d in found if d["TargetGroupArn"] not in tgs}
            if new:
                tgs.update(new)
                tags.update(await reader.tags(new))
                matched = match_target_groups(
                    run.tracking, stack.target_groups, tgs, tags, in_use=in_use,
                    advanced_health_check=stack.context.nlb_health_check_advanced_config)
        owned.load_balancers = {a for a in lbs.tags if run.tracking.owns(lbs.tags[a])}
        owned.target_groups = {a for a in tgs if run.tracking.owns(tags.get(a, {}))}

        # The stack's own certificates, before any listener points at them.
        if self._settings.manage_certificates:
            await self._certificates.converge(run, key)

        # Converge target groups.
        async def one_tg(rid: str) -> None:
            desc = matched.current.get(rid)
            arn = await converge_target_group(
                run, rid, stack.target_groups[rid], desc,
                tags.get(desc["TargetGroupArn"], {}) if desc else {})
            owned.target_groups.add(arn)

        await run_all(one_tg(rid) for rid in sorted(stack.target_groups))

        groups = await groups_step

        # A load balancer replaced under its own name (a frontend NLB whose scheme changed)
        # goes first, as upstream deletes it: its name must be free for the new one.
        names = {lb.name for lb in stack.load_balancers.values() if lb.replaced_under_same_name}
        for arn in list(lbs.orphans):
            if names and (await reader.load_balancers(arns=[arn]) or [{}])[0].get(
                    "LoadBalancerName") in names:
                await _delete_load_balancer(calls, arn)
                owned.load_balancers.discard(arn)
                lbs.orphans.remove(arn)

        # Converge each load balancer, its listeners and rules: an application load balancer
        # first, since a frontend NLB's target groups register it (on a port it listens on).
        statuses: dict[str, LoadBalancerStatus] = {}
        capacity_pending = False
        listener_arns: dict[str, str] = {}
        rule_arns: dict[str, str] = {}
        for lb_id in sorted(stack.load_balancers,
                            key=lambda rid: (stack.load_balancers[rid].type != "application",
                                             rid)):
            lb_model = stack.load_balancers[lb_id]
            current_lb = lbs.current.get(lb_id)
            try:
                lb_desc = await converge_load_balancer(
                    run, lb_id, self._groups.load_balancer(run, lb_model, groups), current_lb,
                    tags.get(current_lb["LoadBalancerArn"], {}) if current_lb else {},
                    dropped_groups=frozenset(groups.orphans))
            except AWSError as exc:
                if exc.code in ("InvalidSecurityGroup", "InvalidGroup.NotFound"):
                    self._groups.backend_gone(run.vpc_id)
                raise
            lb_arn = lb_desc["LoadBalancerArn"]
            lb_arns[lb_id] = lb_arn
            owned.load_balancers.add(lb_arn)
            statuses[lb_id] = LoadBalancerStatus(
                resource_id=lb_id, arn=lb_arn, dns_name=lb_desc.get("DNSName", ""),
                canonical_hosted_zone_id=lb_desc.get("CanonicalHostedZoneId", ""),
                state=(lb_desc.get("State") or {}).get("Code", ""))
            arns, rules = await self._listeners(
                run, lb_id, lb_arn, observed.get(lb_id, ObservedListeners()), tags)
            listener_arns.update(arns)
            rule_arns.update(rules)
            # Addons last, as upstream; only on this stack's own load balancer (created or
            # found by its tags above), never on one we did not create.
            await converge_wafv2(run, lb_arn, lb_model.wafv2)
            await converge_waf_regional(run, lb_arn, lb_model.waf_regional)
            await converge_shield(run, lb_arn, lb_model.shield)
            # The capacity reservation once the load balancer is active (upstream's
            # PostSynthesize): still provisioning, the caller comes back later.
            if await converge_capacity(run, lb_arn, lb_model.capacity_units,
                                       statuses[lb_id].state):
                capacity_pending = True
        # A frontend NLB's target groups: the stack's ALB, now that it listens.
        await converge_load_balancer_targets(run, lb_arns)

        # Delete what the model no longer has, now that nothing of the stack forwards to it:
        # load balancers first, then target groups no binding points at any more.
        for arn in lbs.orphans:
            await _delete_load_balancer(calls, arn)
            owned.load_balancers.discard(arn)
        retained = [arn for arn in matched.orphans if arn in retain]
        deleting = [arn for arn in matched.orphans if arn not in retain]
        await self._delete_target_groups(calls, deleting)
        owned.target_groups -= set(deleting)
        await self._groups.finish(run, key, groups)
        if self._settings.manage_certificates:
            await self._certificates.finish(run, key)

        bindings = {
            rid: ResolvedTargetGroupBinding(
                rid, tgb, run.resolve(tgb.target_group_arn),
                networking=self._groups.networking(run, tgb.networking, groups))
            for rid, tgb in stack.target_group_bindings.items()
        }
        primary = next((st for rid, st in statuses.items()
                        if stack.load_balancers[rid].type == "application"),
                       next(iter(statuses.values()), None))
        return DeployResult(
            stack_id=stack.id, load_balancer=primary, load_balancers=statuses,
            target_groups={rid: run.status[(TARGET_GROUP, rid, "targetGroupARN")]
                           for rid in stack.target_groups},
            listeners=listener_arns, rules=rule_arns, target_group_bindings=bindings,
            retained_target_groups=tuple(retained), capacity_pending=capacity_pending,
            calls=calls.counts.calls, mutating_calls=calls.counts.mutating,
            warnings=tuple(run.warnings))

    async def _observe_target_groups(self, run: DeployRun, owned: StackArns,
                                     lb_arns: Sequence[str]
                                     ) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """Target groups attached to the load balancers (also returned on their own: the live
        path) and the ones we know of."""
        reader = run.reader
        tgs: dict[str, dict[str, Any]] = {}
        for lb_arn in lb_arns:
            for d in await reader.target_groups_of_load_balancer(lb_arn):
                tgs[d["TargetGroupArn"]] = d
        attached = set(tgs)
        for d in await reader.target_groups(arns=sorted(owned.target_groups - set(tgs))):
            tgs[d["TargetGroupArn"]] = d
        return tgs, attached

    async def _listeners(self, run: DeployRun, lb_id: str, lb_arn: str,
                         observed: ObservedListeners, tags: dict[str, dict[str, str]]
                         ) -> tuple[dict[str, str], dict[str, str]]:
        stack = run.stack
        rules_by_listener = observed.rules
        by_port = {int(d["Port"]): d for d in observed.listeners}
        mine = sorted(lid for lid, lis in stack.listeners.items()
                      if lis.load_balancer_arn.target[1] == lb_id)
        wanted_ports = {stack.listeners[lid].port for lid in mine}
        listener_arns: dict[str, str] = {}
        rule_arns: dict[str, str] = {}

        async def one(lid: str) -> None:
            model = stack.listeners[lid]
            desc = by_port.get(model.port)
            arn = await converge_listener(
                run, lid, model, lb_arn, desc,
                tags.get(desc["ListenerArn"], {}) if desc else {})
            listener_arns[lid] = arn
            wanted = {rid: r for rid, r in stack.listener_rules.items()
                      if r.listener_arn.target[1] == lid}
            rule_arns.update(await converge_rules(
                run, arn, wanted, rules_by_listener.get(arn, []), tags))

        await run_all(one(lid) for lid in mine)
        # Listeners on ports the model does not have (deleting one deletes its rules).
        for port, desc in sorted(by_port.items()):
            if port not in wanted_ports:
                await delete_listener(run, desc["ListenerArn"])
        return listener_arns, rule_arns

    async def _delete_target_groups(self, calls: Caller, arns: list[str]) -> None:
        pending = list(arns)
        for attempt in range(self._settings.in_use_retries + 1):
            still: list[str] = []
            for arn in pending:
                try:
                    await calls.call("DeleteTargetGroup", TargetGroupArn=arn)
                except AWSError as exc:
                    if exc.is_not_found:
                        continue
                    if exc.code != "ResourceInUse":
                        raise
                    still.append(arn)
            pending = still
            if not pending:
                return
            if attempt < self._settings.in_use_retries:
                await self._clock.sleep(self._settings.in_use_backoff * 2 ** attempt)
        raise DeployError(f"target groups still in use, not deleted: {', '.join(pending)}")

    async def delete_stack(self, stack_id: str, kind: StackKind, *,
                           vpc_id: str | None = None) -> DeployResult:
        """Delete every load balancer, target group and security group tagged with this stack
        (listeners and rules go with their load balancer), then release the backend security
        group of `vpc_id`. Idempotent: NotFound counts as deleted."""
        reader = self._reader()
        calls = reader.caller
        key: StackKey = (kind, stack_id)
        if not self._owned.known(key):
            await self._owned.ensure_scanned(reader)
            await self._groups.ensure_scanned(calls)
        owned = self._owned.get(key)
        tracking = self._tracking(kind, stack_id)
        arns = sorted(owned.load_balancers | owned.target_groups)
        tags = await reader.tags(arns) if arns else {}
        for arn in sorted(owned.load_balancers):
            if arn in tags and tracking.owns(tags[arn]):
                await _delete_load_balancer(calls, arn)
        tg_arns = [a for a in sorted(owned.target_groups) if a in tags and tracking.owns(tags[a])]
        await self._delete_target_groups(calls, tg_arns)
        owned.load_balancers.clear()
        owned.target_groups.clear()
        await self._groups.delete_stack(reader, tracking, key, vpc_id=vpc_id)
        if self._settings.manage_certificates:
            await self._certificates.delete_stack(calls, tracking, key)
        return DeployResult(stack_id=stack_id, load_balancer=None, calls=calls.counts.calls,
                            mutating_calls=calls.counts.mutating)


async def _delete_load_balancer(calls: Caller, arn: str) -> None:
    try:
        await calls.call("DeleteLoadBalancer", LoadBalancerArn=arn)
    except AWSError as exc:
        if not exc.is_not_found:
            raise


__all__ = ["DeployerSettings", "StackDeployer"]
