"""Tracking tags: how the deployer recognises what it owns, and tag convergence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.aws import Caller
from controller.model import StackKind

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
# The cluster key of the ALB ingress controller (v1.1.3+) before it: upstream still finds
# resources by it (pkg/deploy/tracking/provider.go), so they are found here too.
LEGACY_CLUSTER_TAG = "ingress.k8s.aws/cluster"
TAG_PREFIX: dict[StackKind, str] = {"ingress": "ingress.k8s.aws", "service": "service.k8s.aws"}


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


async def converge_tags(calls: Caller, tracking: Tracking, arn: str,
                        current: Mapping[str, str], desired: Mapping[str, str]) -> None:
    add, remove = tracking.diff(current, desired)
    if add:
        await calls.call("AddTags", ResourceArns=[arn], Tags=as_api_tags(add))
    if remove:
        await calls.call("RemoveTags", ResourceArns=[arn], TagKeys=remove)
