"""What the deployer knows it owns, so a reconcile never lists every load balancer.

`OwnedArns` remembers, per stack, the ARNs of its load balancer(s) and target groups (current
and orphaned). It is filled by deploys and by at most one `ClusterIndex` scan per process.
The scan (DescribeLoadBalancers and DescribeTargetGroups paginated, then DescribeTags in
batches of 20) runs only when a stack's memory is cold *and* a name lookup cannot answer: a
`delete_stack` of a stack this process never deployed, or a deploy about to create a load
balancer (an earlier model may have left one under another name). Concurrent callers share
one scan.

With the `EnableRGTAPI` feature gate, the scan asks the Resource Groups Tagging API instead, as
upstream's tagging manager lists a stack's load balancers and target groups with the gate on
(`pkg/deploy/elbv2/tagging_manager.go`): GetResources, paginated, for each resource type
(`elasticloadbalancing:loadbalancer`, `elasticloadbalancing:targetgroup`) and each cluster
tag key (the current one and the legacy one) with this cluster's name as the value; the
answers carry the tags, so neither the region's listing nor DescribeTags is read. Resources are
the union of the answers, each once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from controller.aws import Reader
from controller.deploy.tags import CLUSTER_TAG, LEGACY_CLUSTER_TAG, TAG_PREFIX, tagged_for_cluster
from controller.model import StackKind

StackKey = tuple[StackKind, str]
# The Resource Groups Tagging API's resource types (upstream's `services.ResourceTypeELB*`).
RGT_LOAD_BALANCER = "elasticloadbalancing:loadbalancer"
RGT_TARGET_GROUP = "elasticloadbalancing:targetgroup"


@dataclass
class StackArns:
    load_balancers: set[str] = field(default_factory=set)
    target_groups: set[str] = field(default_factory=set)


class OwnedArns:
    def __init__(self, *, cluster: str, rgt_api: bool = False) -> None:
        self._cluster = cluster
        self._rgt_api = rgt_api  # the EnableRGTAPI gate
        self._stacks: dict[StackKey, StackArns] = {}
        self._scan: asyncio.Task[None] | None = None
        self._scanned = False

    def known(self, key: StackKey) -> bool:
        return self._scanned or key in self._stacks

    @property
    def scanned(self) -> bool:
        return self._scanned

    def get(self, key: StackKey) -> StackArns:
        return self._stacks.setdefault(key, StackArns())

    def forget(self, key: StackKey) -> None:
        self._stacks.pop(key, None)

    async def ensure_scanned(self, reader: Reader) -> None:
        if self._scanned:
            return
        if self._scan is None or (self._scan.done() and self._scan.exception() is not None):
            self._scan = asyncio.ensure_future(self._run_scan(reader))
        await asyncio.shield(self._scan)

    async def _run_scan(self, reader: Reader) -> None:
        if self._rgt_api:
            lb_tags = await self._tagged(reader, RGT_LOAD_BALANCER)
            tags = {**await self._tagged(reader, RGT_TARGET_GROUP), **lb_tags}
            is_lb = set(lb_tags)
        else:
            lbs: list[str] = []
            tgs: list[str] = []
            async for page in reader.caller.paginate("DescribeLoadBalancers"):
                lbs.extend(lb["LoadBalancerArn"] for lb in page.get("LoadBalancers", []))
            async for page in reader.caller.paginate("DescribeTargetGroups"):
                tgs.extend(tg["TargetGroupArn"] for tg in page.get("TargetGroups", []))
            tags = await reader.tags(lbs + tgs)
            is_lb = set(lbs)
        found: dict[StackKey, StackArns] = {}
        for arn, resource_tags in tags.items():
            if not tagged_for_cluster(resource_tags, self._cluster):
                continue
            for kind, prefix in TAG_PREFIX.items():
                stack_id = resource_tags.get(f"{prefix}/stack")
                if stack_id is None:
                    continue
                entry = found.setdefault((kind, stack_id), StackArns())
                (entry.load_balancers if arn in is_lb else entry.target_groups).add(arn)
        for key, entry in found.items():
            mine = self.get(key)
            mine.load_balancers |= entry.load_balancers
            mine.target_groups |= entry.target_groups
        self._scanned = True

    async def _tagged(self, reader: Reader, resource_type: str) -> dict[str, dict[str, str]]:
        """Every resource of `resource_type` tagged for this cluster, with its tags."""
        found: dict[str, dict[str, str]] = {}
        for key in (CLUSTER_TAG, LEGACY_CLUSTER_TAG):
            async for page in reader.caller.paginate(
                    "GetResources", service="resourcegroupstaggingapi",
                    TagFilters=[{"Key": key, "Values": [self._cluster]}],
                    ResourceTypeFilters=[resource_type]):
                for mapping in page.get("ResourceTagMappingList") or []:
                    arn = str(mapping.get("ResourceARN") or "")
                    if arn and arn not in found:
                        found[arn] = {str(t["Key"]): str(t.get("Value") or "")
                                      for t in mapping.get("Tags") or []}
        return found
