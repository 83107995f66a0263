"""The cluster's shared backend security group (upstream's `pkg/networking/backend_sg_provider.go`).

One group per cluster and VPC, named `k8s-traffic-<cluster>-<hash>`, tagged
`elbv2.k8s.aws/cluster: <cluster>` and `elbv2.k8s.aws/resource: backend-sg` (plus
`--default-tags`). Every load balancer with a managed frontend group carries it, and the targets'
groups admit it, so one rule per target group covers every load balancer of the cluster.

A controller with `--controller-id` has a group of its own, named after the cluster and its id
and tagged `elbv2.k8s.aws/controller: <id>` too: its load balancers, and the rules admitting
them, are then its own, and releasing it never waits for another controller's load balancers.
The default controller's group carries no controller tag (upstream's has none), and a group
tagged for a controller is never taken as the default's.

Found by its name and tags (upstream's group has both), else by its tags alone (upstream looks
it up by its tags only), created when missing, its tags kept. Released when no stack uses it:
each deploy says whether its stack uses it, and stacks whose objects carry a finalizer but were
never deployed by this process ("claimants", after a restart) keep it too, as upstream does.
AWS refuses the deletion with `DependencyViolation` while any load balancer, ENI or rule still
refers to it; it is retried a few times, then the caller retries later (a load balancer's ENIs
take a while to go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.apis import CONTROLLER_LABEL
from controller.aws import AWSError, Caller
from controller.model import backend_security_group_name
from controller.networking.calls import GroupInUse, delete_group
from runtime.clock import Clock, RealClock
from runtime.prioritylock import InheritingLock

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
CONTROLLER_TAG = CONTROLLER_LABEL
RESOURCE_TAG = "elbv2.k8s.aws/resource"
RESOURCE_VALUE = "backend-sg"
DESCRIPTION = "[k8s] Shared Backend SecurityGroup for LoadBalancer"

StackKey = tuple[str, str]  # (kind, stack id)
Claimants = Callable[[], Iterable[StackKey]]


class BackendGroupError(Exception):
    """The backend group cannot be used or released this time; one line."""


class BackendSecurityGroup:
    def __init__(self, *, cluster: str, tags: Mapping[str, str] | None = None,
                 controller_id: str = "", delete_retries: int = 3, delete_backoff: float = 1.0,
                 clock: Clock | None = None) -> None:
        self._cluster = cluster
        self._controller_id = controller_id
        self._tags = dict(tags or {})
        self._delete_retries = delete_retries
        self._delete_backoff = delete_backoff
        self._clock: Clock = clock or RealClock()
        self._ids: dict[str, str] = {}  # VPC → group ID
        # VPCs known to have no backend group (looked up, or deleted by us): a stack that does
        # not use it need not look again.
        self._absent: set[str] = set()
        # Every stack's deploy waits here for the group's first look-up: a real change lifts a
        # paced verification holding the lock out of its budget wait.
        self._locks: dict[str, InheritingLock] = {}
        self._uses: dict[StackKey, bool] = {}
        self._claimants: list[Claimants] = []

    @property
    def name(self) -> str:
        if self._controller_id:
            return backend_security_group_name(f"{self._cluster}-{self._controller_id}")
        return backend_security_group_name(self._cluster)

    def desired_tags(self) -> dict[str, str]:
        tags = {**self._tags, CLUSTER_TAG: self._cluster, RESOURCE_TAG: RESOURCE_VALUE}
        if self._controller_id:
            tags[CONTROLLER_TAG] = self._controller_id
        return tags

    def _mine(self, tags: Mapping[str, str]) -> bool:
        return (tags.get(CLUSTER_TAG) == self._cluster
                and tags.get(RESOURCE_TAG) == RESOURCE_VALUE
                and tags.get(CONTROLLER_TAG, "") == self._controller_id)

    def add_claimants(self, claimants: Claimants) -> None:
        """Stacks whose objects carry this controller's finalizer (read from a cache)."""
        self._claimants.append(claimants)

    def note(self, key: StackKey, *, uses: bool) -> None:
        self._uses[key] = uses

    def forget(self, vpc_id: str) -> None:
        """The cached ID turned out to be gone (AWS said so): look again next time."""
        self._ids.pop(vpc_id, None)
        self._absent.discard(vpc_id)

    def _lock(self, vpc_id: str) -> InheritingLock:
        return self._locks.setdefault(vpc_id, InheritingLock())

    async def ensure(self, calls: Caller, vpc_id: str) -> str:
        """The group's ID in `vpc_id`, found by its tags or created (once per process)."""
        cached = self._ids.get(vpc_id)
        if cached is not None:
            return cached
        async with self._lock(vpc_id):
            cached = self._ids.get(vpc_id)
            if cached is not None:
                return cached
            found = await self._find(calls, vpc_id)
            if found is None:
                group_id = await self._create(calls, vpc_id)
                self._absent.discard(vpc_id)
            else:
                group_id = str(found["GroupId"])
                await self._converge_tags(calls, found)
            self._ids[vpc_id] = group_id
            return group_id

    async def _find(self, calls: Caller, vpc_id: str) -> dict[str, Any] | None:
        """By its name (cheap to ask, and upstream's group has it), then by its tags."""
        resp = await calls.call("DescribeSecurityGroups", service="ec2", Filters=[
            {"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "group-name", "Values": [self.name]}])
        for group in resp.get("SecurityGroups") or []:
            if self._mine({t["Key"]: t.get("Value", "") for t in group.get("Tags") or []}):
                return dict(group)
        resp = await calls.call("DescribeSecurityGroups", service="ec2", Filters=[
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [self._cluster]},
            {"Name": f"tag:{RESOURCE_TAG}", "Values": [RESOURCE_VALUE]}])
        groups = sorted((g for g in resp.get("SecurityGroups") or []
                         if self._mine({t["Key"]: t.get("Value", "")
                                        for t in g.get("Tags") or []})),
                        key=lambda g: str(g["GroupId"]))
        return dict(groups[0]) if groups else None

    async def _create(self, calls: Caller, vpc_id: str) -> str:
        tags = [{"Key": k, "Value": v} for k, v in sorted(self.desired_tags().items())]
        try:
            resp = await calls.call(
                "CreateSecurityGroup", service="ec2", GroupName=self.name,
                Description=DESCRIPTION, VpcId=vpc_id,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}])
        except AWSError as exc:
            if exc.code != "InvalidGroup.Duplicate":
                raise
            raise BackendGroupError(
                f"security group name {self.name} is taken in VPC {vpc_id} by a group not "
                f"tagged {CLUSTER_TAG}={self._cluster}, {RESOURCE_TAG}={RESOURCE_VALUE}; tag "
                "it so, or delete it") from None
        return str(resp["GroupId"])

    async def _converge_tags(self, calls: Caller, group: Mapping[str, Any]) -> None:
        have = {t["Key"]: t.get("Value", "") for t in group.get("Tags") or []}
        missing = {k: v for k, v in self.desired_tags().items() if have.get(k) != v}
        if missing:
            await calls.call("CreateTags", service="ec2", Resources=[group["GroupId"]],
                             Tags=[{"Key": k, "Value": v} for k, v in sorted(missing.items())])

    def in_use(self) -> bool:
        """Whether some stack may still need the group: one deployed with it, or one whose
        object carries a finalizer and that this process has not deployed yet."""
        if any(self._uses.values()):
            return True
        known = set(self._uses)
        return any(key not in known for claim in self._claimants for key in claim())

    async def release(self, calls: Caller, vpc_id: str, key: StackKey) -> bool:
        """`key` no longer uses the group; delete it if nothing else may. True when the group
        is gone or kept for others; raises BackendGroupError while AWS still refuses the
        deletion (retry later)."""
        self._uses[key] = False
        async with self._lock(vpc_id):
            if self.in_use():
                return True
            group_id = self._ids.get(vpc_id)
            if group_id is None:
                if vpc_id in self._absent:
                    return True
                found = await self._find(calls, vpc_id)
                if found is None:
                    self._absent.add(vpc_id)
                    return True
                group_id = str(found["GroupId"])
            try:
                if not await delete_group(calls, group_id, retries=self._delete_retries,
                                          backoff=self._delete_backoff, clock=self._clock,
                                          give_up=self.in_use):
                    return True  # a stack took it up meanwhile
            except GroupInUse as exc:
                raise BackendGroupError(
                    f"backend security group {group_id} is still in use "
                    f"(DependencyViolation: {exc}); retrying") from None
            self._ids.pop(vpc_id, None)
            self._absent.add(vpc_id)
            return True


__all__ = ["DESCRIPTION", "BackendGroupError", "BackendSecurityGroup", "Claimants", "StackKey"]
