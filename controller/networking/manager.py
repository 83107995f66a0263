"""The inbound rules TargetGroupBindings need on their targets' security groups, aggregated
over every binding (upstream's `pkg/networking/networking_manager.go`).

Each binding's reconcile says which rules it needs on which groups; the manager keeps that per
binding, aggregates per group, and keeps on each group exactly the aggregate among the rules it
owns (description `elbv2.k8s.aws/targetGroupBinding=shared`, upstream's label: rules upstream
made are ours, rules anyone else made are never touched).

Aggregation, as upstream: rules from a security group are merged per (protocol, source) into one
port range from the lowest to the highest port asked for; rules from a CIDR stay one per port.
With `--disable-restricted-sg-rules` (every port asked for anyway) equal rules are merged.

Revocation needs the whole picture: until every binding with networking has been reconciled in
this process (after a restart, verified ones come through the paced LOW lane), the manager only
grants. Then stale rules are revoked, also from groups no binding uses any more: the
cluster-tagged groups of the VPC (looked up once) and every group it ever managed.

Cost: a group's rules are read in one batched DescribeSecurityGroups with every other group
the pass looks at; a group whose wanted rules did not change and that was read within
`verify_interval` is not read again. So the node group every binding shares is verified a few
times per pass over the whole cluster, not once per binding, and drift there is repaired
within `verify_interval` of the next reconcile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from controller.aws import AWSError, Caller
from controller.networking import securitygrouprules as group_rules
from controller.networking.enis import CLUSTER_TAG_PREFIX
from controller.networking.permissions import Permission, description_for, expand
from controller.networking.settings import NetworkingSettings
from runtime.clock import Clock, RealClock
from runtime.prioritylock import InheritingLock

LABEL_KEY = "elbv2.k8s.aws/targetGroupBinding"
LABEL_VALUE = "shared"
OWNED_DESCRIPTION = description_for({LABEL_KEY: LABEL_VALUE})
_BATCH = 200

PermissionsByGroup = dict[str, list[Permission]]


def owned(permission: Permission) -> bool:
    return permission.has_labels({LABEL_KEY: LABEL_VALUE})


def aggregate(per_binding: Iterable[PermissionsByGroup], *,
              restricted: bool) -> dict[str, list[Permission]]:
    """Every binding's rules per group, merged as upstream merges them."""
    merged: dict[str, dict[tuple[Any, ...], Permission]] = {}
    for groups in per_binding:
        for group_id, permissions in groups.items():
            into = merged.setdefault(group_id, {})
            for p in permissions:
                if restricted and p.source_kind == "group":
                    key: tuple[Any, ...] = ("range", p.protocol, p.source)
                    have = into.get(key)
                    if have is not None:
                        p = Permission(p.protocol, min(have.from_port, p.from_port),
                                       max(have.to_port, p.to_port), p.source_kind, p.source,
                                       p.description)
                    into[key] = p
                else:
                    into[p.rule] = p
    return {g: sorted(rules.values()) for g, rules in merged.items()}


@dataclass
class _Verified:
    wanted: frozenset[tuple[str, int, int, str, str]]
    revoked: bool
    at: float


class NetworkingManager:
    def __init__(self, calls: Caller, settings: NetworkingSettings, *,
                 bindings_with_networking: Callable[[], Iterable[str]],
                 clock: Clock | None = None) -> None:
        self._calls = calls
        self._settings = settings
        self._bindings = bindings_with_networking
        self._clock: Clock = clock or RealClock()
        # Bindings' reconciles share the groups; a real change waiting here lifts a paced
        # verification holding the lock out of its budget wait.
        self._lock = InheritingLock()
        self._per_binding: dict[str, PermissionsByGroup] = {}
        self._tracked: set[str] = set()
        self._tracked_from_aws = False
        self._verified: dict[str, _Verified] = {}

    @property
    def settings(self) -> NetworkingSettings:
        return self._settings

    def knows(self, binding: str) -> bool:
        return binding in self._per_binding

    async def reconcile(self, binding: str, wanted: PermissionsByGroup) -> int:
        """`binding` needs `wanted` (group → its rules); converge every group. The number of
        mutating calls made."""
        async with self._lock:
            self._per_binding[binding] = {g: list(p) for g, p in wanted.items() if p}
            self._tracked.update(wanted)
            return await self._converge()

    async def forget(self, binding: str) -> int:
        """`binding` is gone: its rules go unless another binding needs them."""
        async with self._lock:
            self._per_binding.pop(binding, None)
            return await self._converge()

    # ---- aggregation ------------------------------------------------------------------------

    def _aggregate(self) -> dict[str, list[Permission]]:
        return aggregate(self._per_binding.values(),
                         restricted=self._settings.backend.restricted_rules)

    def _computed_for_all(self) -> bool:
        current = set(self._bindings())
        for binding in [b for b in self._per_binding if b not in current]:
            del self._per_binding[binding]
        return current <= set(self._per_binding)

    # ---- convergence ------------------------------------------------------------------------

    async def _converge(self) -> int:
        revoke = self._computed_for_all()
        wanted = self._aggregate()
        described: dict[str, dict[str, Any]] = {}
        if revoke and not self._tracked_from_aws:
            described = await self._cluster_groups()
            self._tracked.update(described)
            self._tracked_from_aws = True
        groups = set(wanted) | (self._tracked if revoke else set())
        now = self._clock.now()
        due = []
        for group_id in sorted(groups):
            rules = frozenset(p.rule for p in wanted.get(group_id, []))
            seen = self._verified.get(group_id)
            if (seen is not None and seen.wanted == rules and (seen.revoked or not revoke)
                    and now - seen.at < self._settings.verify_interval):
                continue
            due.append(group_id)
        missing = [g for g in due if g not in described]
        described.update(await self._describe(missing))
        made = 0
        for group_id in due:
            group = described.get(group_id)
            if group is None:
                # Deleted (a node group gone with its nodes): nothing to keep there.
                self._tracked.discard(group_id)
                self._verified.pop(group_id, None)
                continue
            desired = wanted.get(group_id, [])
            changes = group_rules.plan(expand(group.get("IpPermissions") or []), desired,
                                       owned=owned, revoke=revoke)
            try:
                made += await group_rules.apply(self._calls, group_id, changes)
            except AWSError as exc:
                if not exc.is_group_not_found:
                    raise
                self._tracked.discard(group_id)
                continue
            self._verified[group_id] = _Verified(frozenset(p.rule for p in desired), revoke,
                                                 self._clock.now())
        return made

    async def _cluster_groups(self) -> dict[str, dict[str, Any]]:
        """The VPC's groups tagged for this cluster: where rules of bindings that went while
        no controller ran may still be."""
        cluster_tag = CLUSTER_TAG_PREFIX + self._settings.cluster.name
        resp = await self._calls.call("DescribeSecurityGroups", service="ec2", Filters=[
            {"Name": f"tag:{cluster_tag}", "Values": ["owned", "shared"]},
            {"Name": "vpc-id", "Values": [self._settings.cluster.vpc_id]}])
        return {str(g["GroupId"]): g for g in resp.get("SecurityGroups") or []}

    async def _describe(self, group_ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(group_ids), _BATCH):
            chunk = group_ids[start:start + _BATCH]
            try:
                resp = await self._calls.call("DescribeSecurityGroups", service="ec2",
                                              GroupIds=chunk)
            except AWSError as exc:
                if not exc.is_group_not_found:
                    raise
                if len(chunk) == 1:
                    continue
                # One of them is gone, and AWS answers for none: ask one by one.
                for group_id in chunk:
                    found.update(await self._describe([group_id]))
                continue
            for group in resp.get("SecurityGroups") or []:
                found[str(group["GroupId"])] = group
        return found


__all__ = ["LABEL_KEY", "LABEL_VALUE", "OWNED_DESCRIPTION", "NetworkingManager",
           "PermissionsByGroup", "aggregate", "owned"]
