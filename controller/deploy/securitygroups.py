"""A stack's security groups in a deploy: its managed frontend group(s), the groups its load
balancer carries (user-given IDs and names, the managed group's `$ref`, the shared backend
group), and the networking its bindings ask for, with every placeholder made an ID.

Order (why traffic is never opened before it is needed, nor closed while still used):
0. before anything of the stack is created or changed (`resolve_named`): user-given groups are
   looked up, names made IDs (a name is a group's `Name` tag, as upstream: each must name
   exactly one group of the VPC, an ID one group too), and each is
   checked as every AWS resource the stack did not create: one tagged for another cluster
   (`elbv2.k8s.aws/cluster`), or another stack's managed group (its `ingress.k8s.aws/stack` or
   `service.k8s.aws/stack` names a stack that is not this one), is refused
   (`OwnershipConflict`): a load balancer holding it would keep that stack's deletion stuck on
   `DependencyViolation`;
1. the backend group is found or created; each managed group is found by its tags
   (`elbv2.k8s.aws/cluster`, `<kind>.k8s.aws/stack`, `<kind>.k8s.aws/resource`: upstream's, so
   a group upstream created is adopted, not duplicated) or created with them in the same call,
   then its tags and inbound rules are converged. A new group admits clients before any load
   balancer carries it, which opens nothing;
2. the load balancer is created or changed to carry exactly the resolved groups;
   A managed group split across several groups (`controller/networking/frontend.py`) is
   converged as one: a rule that moved from one part to another is granted in its new part
   in this step, and revoked from its old one only after step 2, when the load balancer
   carries the new part (a part at EC2's rule quota, `RulesPerSecurityGroupLimitExceeded`,
   gives up its moved rules first: the only moment a moved rule may be missing);
3. rules that moved between parts are revoked from their old part, and groups the stack no
   longer wants (a part no longer needed) are deleted once no load balancer of the stack
   carries them
   (`DependencyViolation`, which AWS answers while a load balancer's interfaces still use a
   group, is retried a few times, then left to the next reconcile); the backend group is
   released when the stack stopped using it.
Deleting a stack deletes its load balancer first, then its groups (same retries), then
releases the backend group. Its bindings, whose rules on the targets' groups refer to the
backend group, are gone before (their finalizers revoke those rules).

Cost: one DescribeSecurityGroups per deploy for user-given names and one for user-given IDs
(from the region snapshot in a verification); one per deploy of a stack with a managed group (by its
deterministic name, rules included, with the names its further parts would have, so a part no
longer needed is found after a restart too; a wanted group's name taken by a group without our
tags is an `OwnershipConflict`), none for a fresh stack or one known to have none; a stack
without managed groups whose groups this process has not seen is looked up by its tags once (an
older model may have left one); the backend group is looked up once per process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.aws import AWSError, Caller, Reader
from controller.deploy.concurrency import run_all
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError, OwnershipConflict, ResolveError
from controller.deploy.tags import CLUSTER_TAG, LEGACY_CLUSTER_TAG, TAG_PREFIX, Tracking, stack_tag
from controller.model import (
    MANAGED_SECURITY_GROUP_ID,
    MAX_MANAGED_SECURITY_GROUPS,
    SECURITY_GROUP,
    GroupReference,
    LoadBalancer,
    Ref,
    SecurityGroup,
    SharedBackendSecurityGroup,
    Stack,
    StackKind,
    TargetGroupBindingNetworking,
    managed_group_name,
)
from controller.networking import securitygrouprules as group_rules
from controller.networking.backend import BackendGroupError, BackendSecurityGroup
from controller.networking.calls import GroupInUse, delete_group
from controller.networking.permissions import Permission, expand, from_model
from runtime.clock import Clock, RealClock
from runtime.objects import Obj

StackKey = tuple[StackKind, str]
_GROUP_ID_PREFIX = "sg-"


def uses_backend(stack: Stack) -> bool:
    refs: list[GroupReference] = [g for lb in stack.load_balancers.values()
                                  for g in lb.security_groups]
    for tgb in stack.target_group_bindings.values():
        if tgb.networking is not None:
            refs += [peer.security_group for rule in tgb.networking.ingress
                     for peer in rule.from_ if peer.security_group is not None]
    return any(isinstance(g, SharedBackendSecurityGroup) for g in refs)


@dataclass
class PreparedGroups:
    """What the security-group step found and decided for one deploy."""

    backend_id: str | None = None
    names: dict[str, str] = field(default_factory=dict)  # user-given name → ID
    orphans: list[str] = field(default_factory=list)  # ours, no longer wanted
    # Group ID → rules that moved to another part of a split managed group: revoked once the
    # load balancer carries that part.
    moved: dict[str, tuple[Permission, ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SecurityGroupSettings:
    delete_retries: int = 3
    delete_backoff: float = 1.0


class StackSecurityGroups:
    """The deployer's security-group step, and its memory of each stack's groups."""

    def __init__(self, *, cluster: str, backend: BackendSecurityGroup | None = None,
                 settings: SecurityGroupSettings | None = None,
                 clock: Clock | None = None) -> None:
        self._clock: Clock = clock or RealClock()
        self._settings = settings or SecurityGroupSettings()
        self._backend = backend or BackendSecurityGroup(
            cluster=cluster, clock=self._clock, delete_retries=self._settings.delete_retries,
            delete_backoff=self._settings.delete_backoff)
        # Stack → IDs of its groups found or created (missing: not looked at yet, unless the
        # one-time scan ran).
        self._known: dict[StackKey, set[str]] = {}
        self._cluster = cluster
        self._scanned = False

    @property
    def backend(self) -> BackendSecurityGroup:
        return self._backend

    # ---- deploy -----------------------------------------------------------------------------

    async def resolve_named(self, run: DeployRun) -> dict[str, str]:
        """The user-given groups of the stack's load balancers (names and IDs) → their IDs,
        each checked: raises ResolveError for one not in the stack's VPC, OwnershipConflict
        for one tagged for another cluster or managed for another stack."""
        return await _resolve_named(run)

    async def prepare(self, run: DeployRun, key: StackKey, *, fresh: bool = False,
                      named: Mapping[str, str] | None = None) -> PreparedGroups:
        """`fresh`: no deploy of this stack can have written to AWS yet (the deployer's
        meaning), so there is nothing of it to look for. `named`: `resolve_named`'s answer,
        when the deployer asked before anything else (otherwise asked here)."""
        stack, reader = run.stack, run.reader
        prepared = PreparedGroups()
        if uses_backend(stack):
            self._backend.note(key, uses=True)
        known = self._known.get(key, set() if self._scanned or fresh else None)

        async def names() -> None:
            prepared.names = dict(named) if named is not None else await _resolve_named(run)

        async def backend() -> None:
            if uses_backend(stack):
                try:
                    prepared.backend_id = await self._backend.ensure(run.calls, run.vpc_id)
                except BackendGroupError as exc:
                    raise DeployError(str(exc)) from None

        found: dict[str, dict[str, Any]] = {}

        async def groups() -> None:
            if stack.security_groups and not fresh:
                # By their deterministic names (upstream's too), which EC2 answers cheaply;
                # groups this process remembers beyond those by ID.
                names = sorted(g.name for g in stack.security_groups.values())
                first = stack.security_groups.get(MANAGED_SECURITY_GROUP_ID)
                parts = [managed_group_name(first.name, part)
                         for part in range(2, MAX_MANAGED_SECURITY_GROUPS + 1)
                         ] if first is not None else []
                found.update(await self._observe_names(
                    reader, run.tracking, run.vpc_id, names,
                    optional=sorted(set(parts) - set(names))))
                found.update(await self._observe_ids(reader, run.tracking,
                                                     sorted((known or set()) - set(found)),
                                                     vpc_id=run.vpc_id))
            elif known is None:
                found.update(await self._observe(reader, run.tracking, run.vpc_id))
            elif known:
                found.update(await self._observe_ids(reader, run.tracking, sorted(known),
                                                     vpc_id=run.vpc_id))

        # Three independent look-ups (usually one call, or none).
        await run_all([names(), backend(), groups()])
        by_resource = {}
        mine: set[str] = set()
        for group_id, group in sorted(found.items()):
            rid = run.tracking.resource_id(_tags(group))
            mine.add(group_id)
            if rid in stack.security_groups and rid not in by_resource:
                by_resource[rid] = group
            else:
                prepared.orphans.append(group_id)
        # Every rule some group of the stack wants: one a group holds but another part wants
        # now waits for the load balancer to carry that part before it is revoked.
        anywhere = {from_model(r).rule for model in stack.security_groups.values()
                    for r in model.ingress}
        for rid, model in sorted(stack.security_groups.items()):
            group_id = await self._converge(run, rid, model, by_resource.get(rid),
                                            anywhere=anywhere, prepared=prepared)
            mine.add(group_id)
            run.set_status(SECURITY_GROUP, rid, "groupID", group_id)
        self._known[key] = mine
        return prepared

    async def finish(self, run: DeployRun, key: StackKey, prepared: PreparedGroups) -> None:
        """After the load balancer carries only the wanted groups: delete the orphans, and
        release the backend group if the stack no longer uses it."""
        known = self._known.setdefault(key, set())
        for group_id, rules in sorted(prepared.moved.items()):
            await group_rules.apply(run.calls, group_id, group_rules.RuleChanges(revoke=rules))
        for group_id in prepared.orphans:
            await self._delete(run.calls, group_id)
            known.discard(group_id)
        if not uses_backend(run.stack):
            await self._release(run.calls, run.vpc_id, key)

    def load_balancer(self, run: DeployRun, lb: LoadBalancer,
                      prepared: PreparedGroups) -> LoadBalancer:
        """The load balancer with every security group an ID."""
        ids = sorted({self._group_id(run, g, prepared) for g in lb.security_groups})
        if list(lb.security_groups) == ids:
            return lb
        return lb.model_copy(update={"security_groups": tuple(ids)})

    def networking(self, run: DeployRun, networking: TargetGroupBindingNetworking | None,
                   prepared: PreparedGroups) -> Obj | None:
        """A binding's `spec.networking` as Kubernetes stores it, IDs filled in."""
        if networking is None:
            return None
        return networking_object(networking,
                                 lambda group: self._group_id(run, group, prepared))

    def _group_id(self, run: DeployRun, group: GroupReference, prepared: PreparedGroups) -> str:
        if isinstance(group, Ref):
            return run.resolve(group)
        if isinstance(group, SharedBackendSecurityGroup):
            if prepared.backend_id is None:
                raise DeployError("the backend security group is not known yet")
            return prepared.backend_id
        return prepared.names.get(group, group)

    def backend_gone(self, vpc_id: str) -> None:
        """AWS said a group the load balancer was to carry does not exist: if it was the
        backend group (deleted by hand), the next deploy looks it up again."""
        self._backend.forget(vpc_id)

    # ---- delete -----------------------------------------------------------------------------

    async def delete_stack(self, reader: Reader, tracking: Tracking, key: StackKey, *,
                           vpc_id: str | None) -> None:
        """After the stack's load balancer is gone: its groups, then the backend group."""
        known = self._known.get(key, set() if self._scanned else None)
        ids = set(known) if known is not None else set(
            await self._observe(reader, tracking, vpc_id))
        for group_id in sorted(ids):
            await self._delete(reader.caller, group_id)
        self._known[key] = set()
        if vpc_id is not None:
            await self._release(reader.caller, vpc_id, key)

    async def ensure_scanned(self, calls: Caller) -> None:
        """Every group of this cluster's stacks, by their tags, once per process: with the load
        balancer scan it lets a deletion of a stack this process never saw find everything
        (or nothing) without a call per stack."""
        if self._scanned:
            return
        found: dict[StackKey, set[str]] = {}
        async for page in calls.paginate("DescribeSecurityGroups", service="ec2", Filters=[
                {"Name": f"tag:{CLUSTER_TAG}", "Values": [self._cluster]}]):
            for group in page.get("SecurityGroups") or []:
                tags = _tags(group)
                for kind in ("ingress", "service"):
                    stack_id = tags.get(stack_tag(kind))
                    if stack_id:
                        found.setdefault((kind, stack_id), set()).add(str(group["GroupId"]))
        for key, ids in found.items():
            self._known.setdefault(key, set()).update(ids)
        self._scanned = True

    # ---- steps ------------------------------------------------------------------------------

    async def _observe_names(self, reader: Reader, tracking: Tracking, vpc_id: str,
                             names: list[str], *, optional: Sequence[str] = ()
                             ) -> dict[str, dict[str, Any]]:
        """`optional`: names of groups that are ours if our tags say so (parts a split group
        may have had), someone else's otherwise (left alone)."""
        found: dict[str, dict[str, Any]] = {}
        for group in await reader.security_groups(vpc_id=vpc_id, names=[*names, *optional]):
            if group.get("GroupName") in optional and group.get("GroupName") not in names:
                if tracking.owns(_tags(group)):
                    found[str(group["GroupId"])] = group
                continue
            if not tracking.owns(_tags(group)):
                raise OwnershipConflict(f"security group name {group['GroupName']} is taken "
                                        f"in VPC {vpc_id} by a group this stack does not own")
            found[str(group["GroupId"])] = group
        return found

    async def _observe_ids(self, reader: Reader, tracking: Tracking, group_ids: list[str], *,
                           vpc_id: str | None = None) -> dict[str, dict[str, Any]]:
        if not group_ids:
            return {}
        return {str(g["GroupId"]): g
                for g in await reader.security_groups(vpc_id=vpc_id, ids=group_ids)
                if tracking.owns(_tags(g))}

    async def _observe(self, reader: Reader, tracking: Tracking,
                       vpc_id: str | None) -> dict[str, dict[str, Any]]:
        groups = await reader.security_groups(vpc_id=vpc_id, tags={
            CLUSTER_TAG: tracking.cluster, stack_tag(tracking.kind): tracking.stack_id})
        return {str(g["GroupId"]): g for g in groups if tracking.owns(_tags(g))}

    async def _converge(self, run: DeployRun, resource_id: str, model: SecurityGroup,
                        current: Mapping[str, Any] | None, *,
                        anywhere: set[tuple[str, int, int, str, str]],
                        prepared: PreparedGroups) -> str:
        desired_tags = run.desired_tags(resource_id, model.tags)
        if current is None:
            group_id = await self._create(run, resource_id, model, desired_tags)
            current_tags: Mapping[str, str] = desired_tags
            have: Iterable[Any] = ()
        else:
            group_id = str(current["GroupId"])
            current_tags = _tags(current)
            have = expand(current.get("IpPermissions") or [])
        add, remove = run.tracking.diff(current_tags, desired_tags)
        if add:
            await run.calls.call("CreateTags", service="ec2", Resources=[group_id],
                                 Tags=[{"Key": k, "Value": v} for k, v in sorted(add.items())])
        if remove:
            await run.calls.call("DeleteTags", service="ec2", Resources=[group_id],
                                 Tags=[{"Key": k} for k in remove])
        changes = group_rules.plan(have, (from_model(r) for r in model.ingress))
        moved = tuple(p for p in changes.revoke if p.rule in anywhere)
        now = group_rules.RuleChanges(
            grant=changes.grant, describe=changes.describe,
            revoke=tuple(p for p in changes.revoke if p.rule not in anywhere))
        try:
            await group_rules.apply(run.calls, group_id, now)
        except AWSError as exc:
            if exc.code != "RulesPerSecurityGroupLimitExceeded" or not moved:
                raise
            # The part is full of rules that moved away: they go first.
            await group_rules.apply(run.calls, group_id, group_rules.RuleChanges(
                revoke=(*now.revoke, *moved)))
            await group_rules.apply(run.calls, group_id, group_rules.RuleChanges(
                grant=now.grant, describe=now.describe))
            moved = ()
        if moved:
            prepared.moved[group_id] = moved
        return group_id

    async def _create(self, run: DeployRun, resource_id: str, model: SecurityGroup,
                      tags: Mapping[str, str]) -> str:
        try:
            resp = await run.calls.call(
                "CreateSecurityGroup", service="ec2", GroupName=model.name,
                Description=model.description, VpcId=run.vpc_id,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": [
                    {"Key": k, "Value": v} for k, v in sorted(tags.items())]}])
        except AWSError as exc:
            if exc.code == "InvalidGroup.Duplicate":
                raise OwnershipConflict(f"security group name {model.name} is taken in VPC "
                                        f"{run.vpc_id} by a group this stack does not own"
                                        ) from None
            raise
        return str(resp["GroupId"])

    async def _delete(self, calls: Caller, group_id: str) -> None:
        try:
            await delete_group(calls, group_id, retries=self._settings.delete_retries,
                               backoff=self._settings.delete_backoff, clock=self._clock)
        except GroupInUse as exc:
            raise DeployError(f"security group {group_id} is still in use "
                              f"(DependencyViolation: {exc}); retrying later") from None

    async def _release(self, calls: Caller, vpc_id: str, key: StackKey) -> None:
        try:
            await self._backend.release(calls, vpc_id, key)
        except BackendGroupError as exc:
            raise DeployError(str(exc)) from None


async def _resolve_named(run: DeployRun) -> dict[str, str]:
    """User-given group names and IDs → IDs in the stack's VPC, each group checked
    (`_check_named`). As upstream (`pkg/networking/security_group_resolver.go`), a value that is
    not an ID names a group by its `Name` tag in the VPC; one that matches no group, or several
    (upstream would attach them all, unasked), is an error naming it. Names and IDs are read
    concurrently."""
    given = sorted({g for lb in run.stack.load_balancers.values() for g in lb.security_groups
                    if isinstance(g, str)})
    if not given:
        return {}
    vpc_id = run.stack.context.vpc_id
    names = [g for g in given if not g.startswith(_GROUP_ID_PREFIX)]
    ids = [g for g in given if g.startswith(_GROUP_ID_PREFIX)]

    async def read(*, names: list[str], ids: list[str]) -> list[dict[str, Any]]:
        if not names and not ids:
            return []
        # Looked up by ID, a group of any VPC is found: it must be the stack's.
        return [g for g in await run.reader.security_groups(vpc_id=vpc_id, name_tags=names,
                                                            ids=ids)
                if g.get("VpcId") in (None, vpc_id)]

    by_name, by_id = await asyncio.gather(read(names=names, ids=[]),
                                          read(names=[], ids=ids))
    found: dict[str, list[dict[str, Any]]] = {}
    for group in by_name:
        name = _tags(group).get("Name")
        if name in names:
            found.setdefault(name, []).append(group)
    for group in by_id:
        found.setdefault(str(group["GroupId"]), []).append(group)
    missing = [g for g in given if g not in found]
    if missing:
        raise ResolveError(f"security groups not found in VPC {vpc_id}: {', '.join(missing)} "
                           "(a value that is not a group ID names a group by its Name tag)")
    several = {name: sorted(str(g["GroupId"]) for g in groups)
               for name, groups in found.items() if len(groups) > 1}
    if several:
        name, matches = min(several.items())
        raise ResolveError(f"security group name {name!r} matches {len(matches)} groups in VPC "
                           f"{vpc_id} ({', '.join(matches)}); use group IDs")
    resolved: dict[str, str] = {}
    for name, groups in sorted(found.items()):
        for group in groups:
            _check_named(name, group, run.tracking)
        resolved[name] = str(groups[0]["GroupId"])
    return resolved


def _check_named(given: str, group: Mapping[str, Any], tracking: Tracking) -> None:
    """A group the user named is someone else's when it is tagged for another cluster or is
    another stack's managed group: attaching it would tie that stack's deletion to this load
    balancer (EC2 refuses to delete a group in use: `DependencyViolation`)."""
    tags = _tags(group)
    group_id = str(group["GroupId"])
    what = group_id if given == group_id else f"{given} ({group_id})"
    cluster = tags.get(CLUSTER_TAG, tags.get(LEGACY_CLUSTER_TAG))
    if cluster is not None and cluster != tracking.cluster:
        raise OwnershipConflict(
            f"security group {what}, named in the security-groups annotation, is tagged for "
            f"cluster {cluster}; it is not attached to this load balancer")
    for kind in TAG_PREFIX:
        owner = tags.get(stack_tag(kind))
        if owner is not None and (kind, owner) != (tracking.kind, tracking.stack_id):
            raise OwnershipConflict(
                f"security group {what}, named in the security-groups annotation, is the "
                f"managed security group of {kind} {owner}; it is not attached to this load "
                "balancer")


def _tags(group: Mapping[str, Any]) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in group.get("Tags") or []}


def networking_object(networking: TargetGroupBindingNetworking,
                      group_id: Callable[[GroupReference], str]) -> Obj:
    """A binding's `spec.networking` as Kubernetes stores it, each group made an ID by
    `group_id`."""
    rules = []
    for rule in networking.ingress:
        peers: list[Obj] = []
        for peer in rule.from_:
            if peer.security_group is not None:
                peers.append({"securityGroup": {"groupID": group_id(peer.security_group)}})
            else:
                peers.append({"ipBlock": {"cidr": peer.ip_block}})
        ports: list[Obj] = []
        for port in rule.ports:
            item: Obj = {"protocol": port.protocol}
            if port.port is not None:
                item["port"] = port.port
            ports.append(item)
        rules.append({"from": peers, "ports": ports})
    return {"ingress": rules}


__all__ = ["PreparedGroups", "SecurityGroupSettings", "StackSecurityGroups", "networking_object",
           "uses_backend"]
