"""Tracking tags: how the deployer recognises what it owns, and tag convergence."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.aws import AWSError
from controller.model import StackKind

if TYPE_CHECKING:
    from controller.deploy.calls import Calls

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
# The cluster key of the ALB ingress controller (v1.1.3+) before it: upstream still finds
# resources by it (pkg/deploy/tracking/provider.go), so they are found here too.
LEGACY_CLUSTER_TAG = "ingress.k8s.aws/cluster"
TAG_PREFIX: dict[StackKind, str] = {"ingress": "ingress.k8s.aws", "service": "service.k8s.aws"}
DESCRIBE_TAGS_BATCH = 20  # AWS limit of ResourceArns per DescribeTags


def stack_tag(kind: StackKind) -> str:
    return f"{TAG_PREFIX[kind]}/stack"


def resource_tag(kind: StackKind) -> str:
    return f"{TAG_PREFIX[kind]}/resource"


@dataclass(frozen=True, kw_only=True)
class Tracking:
    cluster: str
    kind: StackKind
    stack_id: str
    external_managed_tags: frozenset[str] = field(default_factory=frozenset)

    def tags_for(self, resource_id: str, extra: Mapping[str, str]) -> dict[str, str]:
        tags = dict(extra)
        tags[CLUSTER_TAG] = self.cluster
        tags[stack_tag(self.kind)] = self.stack_id
        tags[resource_tag(self.kind)] = resource_id
        return tags

    def owns(self, tags: Mapping[str, str]) -> bool:
        return (tags.get(stack_tag(self.kind)) == self.stack_id
                and tagged_for_cluster(tags, self.cluster))

    @property
    def legacy_keys(self) -> frozenset[str]:
        """Keys the ALB ingress controller reads; upstream never removes them, so that a
        downgrade still finds its resources (pkg/deploy/tracking/provider.go)."""
        return frozenset({f"kubernetes.io/cluster/{self.cluster}", "kubernetes.io/cluster-name",
                          "kubernetes.io/namespace", "kubernetes.io/ingress-name",
                          "kubernetes.io/service-name", "kubernetes.io/service-port",
                          LEGACY_CLUSTER_TAG})

    def resource_id(self, tags: Mapping[str, str]) -> str | None:
        return tags.get(resource_tag(self.kind)) if self.owns(tags) else None

    def diff(self, current: Mapping[str, str],
             desired: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """(tags to add or overwrite, keys to remove). Keys AWS reserves (`aws:`), keys
        declared externally managed and the legacy keys are never removed."""
        add = {k: v for k, v in desired.items() if current.get(k) != v}
        keep = self.external_managed_tags | self.legacy_keys
        remove = sorted(
            k for k in current
            if k not in desired and not k.startswith("aws:") and k not in keep
        )
        return add, remove


def tagged_for_cluster(tags: Mapping[str, str], cluster: str) -> bool:
    """The cluster tag, or the legacy one, names `cluster`."""
    return tags.get(CLUSTER_TAG, tags.get(LEGACY_CLUSTER_TAG)) == cluster


def as_api_tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


async def describe_tags(calls: Calls, arns: Iterable[str], *,
                        snapshot: bool = True) -> dict[str, dict[str, str]]:
    """Tags of many ARNs of any ELBv2 type, in DescribeTags calls of at most 20 ARNs each.
    ARNs that no longer exist are left out of the answer. A verification takes those of the
    load balancers and target groups from the region snapshot (`snapshot=False`: the
    snapshot's own listing)."""
    unique = sorted(set(arns))
    result: dict[str, dict[str, str]] = {}
    if snapshot and calls.snapshot is not None and unique:
        listing = await calls.snapshot.listing(calls)
        if listing is not None:
            known, unique = listing.tags_of(unique)
            if known:
                calls.from_snapshot = True
                result.update(known)
    chunks = [unique[i:i + DESCRIBE_TAGS_BATCH]
              for i in range(0, len(unique), DESCRIBE_TAGS_BATCH)]

    async def one(chunk: list[str]) -> None:
        if calls.batcher is not None:
            shared = await calls.batcher.describe(calls, "DescribeTags", "ResourceArns", chunk)
            if shared is not None:
                for desc in shared:
                    result[desc["ResourceArn"]] = {t["Key"]: t.get("Value", "")
                                                   for t in desc["Tags"]}
                return
        try:
            resp = await calls.call("DescribeTags", ResourceArns=chunk)
        except AWSError as exc:
            if not exc.is_not_found:
                raise
            if len(chunk) > 1:
                # One ARN vanished between listing and tagging: ask one by one.
                await asyncio.gather(*(one([arn]) for arn in chunk))
            return
        for desc in resp.get("TagDescriptions", []):
            result[desc["ResourceArn"]] = {t["Key"]: t.get("Value", "") for t in desc["Tags"]}

    await asyncio.gather(*(one(c) for c in chunks))
    return result


async def converge_tags(calls: Calls, tracking: Tracking, arn: str,
                        current: Mapping[str, str], desired: Mapping[str, str]) -> None:
    add, remove = tracking.diff(current, desired)
    if add:
        await calls.call("AddTags", ResourceArns=[arn], Tags=as_api_tags(add))
    if remove:
        await calls.call("RemoveTags", ResourceArns=[arn], TagKeys=remove)
