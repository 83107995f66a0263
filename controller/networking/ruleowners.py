"""Who owns an inbound rule on a targets' security group, told by its description.

- This cluster's: the labels `elbv2.k8s.aws/targetGroupBinding=shared` and
  `elbv2.k8s.aws/cluster=<cluster>` (written `elbv2.k8s.aws/cluster=<cluster>,
  elbv2.k8s.aws/targetGroupBinding=shared`). Cluster names are at most 100 letters, digits,
  `.`, `_` and `-`, so the description stays within EC2's 255 characters and its character
  set. Another controller with another `--cluster-name` owns its own rules on the same group
  and never revokes this one's; two controllers under one cluster name are one owner (as they
  are of every load balancer they tag).
- Upstream's ("legacy"): the shared label without a cluster label. Upstream writes that same
  description in every cluster, so such a rule is taken as this cluster's only where it can
  be nobody else's: its source is this cluster's backend group or one of its managed frontend
  groups (tagged `elbv2.k8s.aws/cluster: <cluster>`), or the group it is on is tagged
  `kubernetes.io/cluster/<cluster>` for this cluster alone (and not `elbv2.k8s.aws/cluster` for
  another). Such a rule is adopted where wanted (its description rewritten in place, never
  revoked and granted again, which would drop traffic in between) and revoked where not.
  Any other legacy rule is left alone: another cluster's upstream controller may need it.
- Another controller's of this cluster (`--controller-id`): the cluster's labels and
  `elbv2.k8s.aws/controller=<id>`. A controller with an id owns exactly the rules naming it; the
  default controller (no id) owns the cluster's rules naming no controller, so its
  descriptions are those written before controllers had ids, and no rule is rewritten on
  upgrade. Only the default controller adopts upstream's rules: a controller with an id never
  takes over, nor revokes, a rule it did not write.
- Anyone else's: never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from controller import apis
from controller.aws import tag_dict
from controller.deploy.tags import CLUSTER_TAG
from controller.networking.enis import CLUSTER_TAG_PREFIX
from controller.networking.groupfacts import GroupFactsCache
from controller.networking.permissions import Permission, description_for, expand
from controller.networking.policy import NetworkingPolicy

LABEL_KEY: Final = "elbv2.k8s.aws/targetGroupBinding"
LABEL_VALUE: Final = "shared"
CLUSTER_LABEL: Final = "elbv2.k8s.aws/cluster"
CONTROLLER_LABEL: Final = apis.CONTROLLER_LABEL
LEGACY_DESCRIPTION: Final = description_for({LABEL_KEY: LABEL_VALUE})

Owned = Callable[[Permission], bool]


def _labels(cluster: str, controller_id: str) -> dict[str, str]:
    labels = {LABEL_KEY: LABEL_VALUE, CLUSTER_LABEL: cluster}
    if controller_id:
        labels[CONTROLLER_LABEL] = controller_id
    return labels


def description(cluster: str, controller_id: str = "") -> str:
    """The description of the rules of this cluster's controller `controller_id`."""
    return description_for(_labels(cluster, controller_id))


def is_ours(rule: Permission, cluster: str, controller_id: str = "") -> bool:
    return (rule.has_labels(_labels(cluster, controller_id))
            and rule.labels.get(CONTROLLER_LABEL, "") == controller_id)


def is_legacy(rule: Permission) -> bool:
    labels = rule.labels
    return labels.get(LABEL_KEY) == LABEL_VALUE and CLUSTER_LABEL not in labels


def only_this_cluster(tags: Mapping[str, str], cluster: str) -> bool:
    """The group is tagged `kubernetes.io/cluster/<cluster>` and for no other cluster."""
    clusters = {k[len(CLUSTER_TAG_PREFIX):] for k in tags if k.startswith(CLUSTER_TAG_PREFIX)}
    return clusters == {cluster} and tags.get(CLUSTER_TAG, cluster) == cluster


class RuleOwners:
    """`facts`: where the source groups of legacy rules are looked up (`legacy_sources`,
    loaded by the caller before `owned` is asked)."""

    def __init__(self, policy: NetworkingPolicy, facts: GroupFactsCache) -> None:
        self._policy = policy
        self._facts = facts
        self.description = description(policy.cluster, policy.controller_id)

    def ours(self, rule: Permission) -> bool:
        return is_ours(rule, self._policy.cluster, self._policy.controller_id)

    def adoptable(self, group: Mapping[str, Any], rule: Permission) -> bool:
        """A legacy rule on `group` (a DescribeSecurityGroups item) that can be this
        cluster's, for the cluster's default controller (one with an id adopts nothing: the
        upstream rule may be another controller's need)."""
        if self._policy.controller_id or not is_legacy(rule):
            return False
        if rule.source_kind == "group" and (
                self._policy.is_cluster_group(self._facts.get(rule.source))
                or rule.source == self._policy.backend_group_id):
            return True
        return only_this_cluster(tag_dict(group.get("Tags")), self._policy.cluster)

    def owned(self, group: Mapping[str, Any]) -> Owned:
        """The rules of `group` this controller may revoke: its own and adoptable ones."""
        return lambda rule: self.ours(rule) or self.adoptable(group, rule)

    def has_any(self, group: Mapping[str, Any]) -> bool:
        """`group` holds a rule this controller may act on."""
        owned = self.owned(group)
        return any(owned(r) for r in expand(group.get("IpPermissions") or []))


def legacy_sources(groups: Iterable[Mapping[str, Any]]) -> set[str]:
    """The source groups of the legacy rules on `groups` (their facts decide adoption)."""
    return {r.source for g in groups for r in expand(g.get("IpPermissions") or [])
            if r.source_kind == "group" and is_legacy(r)}


__all__ = ["CLUSTER_LABEL", "CONTROLLER_LABEL", "LABEL_KEY", "LABEL_VALUE",
           "LEGACY_DESCRIPTION", "Owned", "RuleOwners", "description", "is_legacy",
           "is_ours", "legacy_sources", "only_this_cluster"]
