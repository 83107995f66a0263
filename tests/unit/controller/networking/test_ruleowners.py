"""Who owns a rule on a targets' group: this cluster's name it; upstream's (the shared label
alone) are adopted only where they can be this cluster's; what a binding not reconciled yet
holds back is clipped to what our rules already admit, never more."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, Caller
from controller.networking.groupfacts import GroupFactsCache
from controller.networking.manager import aggregate, clip
from controller.networking.permissions import Permission
from controller.networking.policy import NetworkingPolicy
from controller.networking.ruleowners import (
    LEGACY_DESCRIPTION,
    RuleOwners,
    description,
    legacy_sources,
    only_this_cluster,
)
from tests.support.aws import unreachable_aws

POLICY = NetworkingPolicy(cluster="prod", vpc_id="vpc-1")


def _group(group_id: str, tags: dict[str, str], *rules: Permission) -> dict[str, Any]:
    return {"GroupId": group_id, "VpcId": "vpc-1",
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
            "IpPermissions": [{"IpProtocol": r.protocol, "FromPort": r.from_port,
                               "ToPort": r.to_port,
                               **({"UserIdGroupPairs": [{"GroupId": r.source,
                                                         "Description": r.description}]}
                                  if r.source_kind == "group" else
                                  {"IpRanges": [{"CidrIp": r.source,
                                                 "Description": r.description}]})}
                              for r in rules]}


async def test_upstream_rules_are_adopted_only_where_they_can_be_this_clusters() -> None:
    async with AWSClientPool(unreachable_aws(), registry=CollectorRegistry()) as pool:
        facts = GroupFactsCache(Caller(pool))
        facts.remember([
            _group("sg-backend", {"elbv2.k8s.aws/cluster": "prod",
                                  "elbv2.k8s.aws/resource": "backend-sg"}),
            _group("sg-their-backend", {"elbv2.k8s.aws/cluster": "staging",
                                        "elbv2.k8s.aws/resource": "backend-sg"}),
        ])
        owners = RuleOwners(POLICY, facts)
        from_ours = Permission("tcp", 80, 80, "group", "sg-backend", LEGACY_DESCRIPTION)
        from_theirs = Permission("tcp", 80, 80, "group", "sg-their-backend", LEGACY_DESCRIPTION)
        cidr = Permission("tcp", 80, 80, "cidr", "10.0.0.0/8", LEGACY_DESCRIPTION)
        shared_nodes = _group("sg-nodes", {"kubernetes.io/cluster/prod": "owned",
                                           "kubernetes.io/cluster/staging": "shared"},
                              from_ours, from_theirs, cidr)
        assert legacy_sources([shared_nodes]) == {"sg-backend", "sg-their-backend"}
        # On a group two clusters share: only a rule from this cluster's own group.
        assert owners.adoptable(shared_nodes, from_ours)
        assert not owners.adoptable(shared_nodes, from_theirs)
        assert not owners.adoptable(shared_nodes, cidr)
        # On a group of this cluster alone: any of upstream's.
        ours_alone = _group("sg-ours", {"kubernetes.io/cluster/prod": "owned"})
        assert owners.adoptable(ours_alone, from_theirs)
        assert owners.adoptable(ours_alone, cidr)
        # Not legacy: ours are ours, another cluster's and anyone's are never adopted.
        mine = Permission("tcp", 80, 80, "cidr", "10.0.0.0/8", description("prod"))
        other = Permission("tcp", 80, 80, "cidr", "10.0.0.0/8", description("staging"))
        owned = owners.owned(ours_alone)
        assert owned(mine)
        assert not owned(other)
        assert not owned(Permission("tcp", 22, 22, "cidr", "10.0.0.0/8", "ssh"))
        assert owners.description == ("elbv2.k8s.aws/cluster=prod,"
                                      "elbv2.k8s.aws/targetGroupBinding=shared")
    assert not only_this_cluster({"kubernetes.io/cluster/prod": "owned",
                                  "elbv2.k8s.aws/cluster": "staging"}, "prod")
    assert not only_this_cluster({}, "prod")


def test_held_rules_keep_only_what_our_rules_already_admit() -> None:
    wide = Permission("tcp", 7070, 9090, "group", "sg-backend")
    held = [Permission("tcp", 8080, 8080, "group", "sg-backend"),
            Permission("tcp", 0, 65535, "cidr", "10.0.0.0/8"),
            Permission("udp", 8080, 8080, "group", "sg-backend")]
    present = [wide, Permission("tcp", 8080, 8080, "cidr", "10.0.0.0/8")]
    kept = clip(held, present)
    assert [p.rule for p in kept] == [("tcp", 8080, 8080, "group", "sg-backend"),
                                      ("tcp", 8080, 8080, "cidr", "10.0.0.0/8")]
    # With a known binding's port, the group's range narrows to both: the stale 7070 goes.
    merged = aggregate([{"g": [Permission("tcp", 9090, 9090, "group", "sg-backend"), *kept]}],
                       restricted=True)
    assert [p.rule for p in merged["g"]] == [("tcp", 8080, 8080, "cidr", "10.0.0.0/8"),
                                             ("tcp", 8080, 9090, "group", "sg-backend")]
    assert clip(held, []) == []


async def test_several_controllers_of_one_cluster_each_own_only_their_rules() -> None:
    default_rule = Permission("tcp", 80, 80, "cidr", "10.0.0.0/8", description("prod"))
    internal_rule = Permission("tcp", 81, 81, "cidr", "10.0.0.0/8",
                               description("prod", "internal"))
    other_rule = Permission("tcp", 82, 82, "cidr", "10.0.0.0/8", description("prod", "edge"))
    legacy = Permission("tcp", 83, 83, "cidr", "10.0.0.0/8", LEGACY_DESCRIPTION)
    # The default controller's description is the one written before there were ids.
    assert description("prod") == ("elbv2.k8s.aws/cluster=prod,"
                                   "elbv2.k8s.aws/targetGroupBinding=shared")
    assert description("prod", "internal") == (
        "elbv2.k8s.aws/cluster=prod,elbv2.k8s.aws/controller=internal,"
        "elbv2.k8s.aws/targetGroupBinding=shared")
    # The longest description still fits EC2's 255 characters.
    assert len(description("c" * 100, "i" * 63)) <= 255
    nodes = _group("sg-nodes", {"kubernetes.io/cluster/prod": "owned"},
                   default_rule, internal_rule, other_rule, legacy)
    async with AWSClientPool(unreachable_aws(), registry=CollectorRegistry()) as pool:
        facts = GroupFactsCache(Caller(pool))
        default = RuleOwners(POLICY, facts)
        internal = RuleOwners(NetworkingPolicy(cluster="prod", vpc_id="vpc-1",
                                               controller_id="internal"), facts)
        assert internal.description == description("prod", "internal")
        mine = default.owned(nodes)
        assert [mine(r) for r in (default_rule, internal_rule, other_rule, legacy)] == [
            True, False, False, True]  # upstream's, on a group of this cluster alone: adopted
        theirs = internal.owned(nodes)
        assert [theirs(r) for r in (default_rule, internal_rule, other_rule, legacy)] == [
            False, True, False, False]  # upstream's rule is never another controller's
