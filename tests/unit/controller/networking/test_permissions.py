"""Inbound rules in one normal form: EC2's grouped permissions expanded, written back one
source each, labelled by description, and planned against what is wanted and owned."""

from __future__ import annotations

from typing import Any

from controller.networking.manager import aggregate
from controller.networking.permissions import Permission, expand, normal_protocol, to_api
from controller.networking.ruleowners import LEGACY_DESCRIPTION, description, is_legacy, is_ours
from controller.networking.securitygrouprules import plan

CLUSTER = "test-cluster"
OWNED_DESCRIPTION = description(CLUSTER)


def owned(rule: Permission) -> bool:
    return is_ours(rule, CLUSTER)


def _group(source: str, low: int, high: int, description: str = OWNED_DESCRIPTION
           ) -> Permission:
    return Permission("tcp", low, high, "group", source, description)


def test_ec2_s_grouped_permissions_expand_to_one_source_each() -> None:
    described: list[dict[str, Any]] = [{"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80,
                  "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "a"}],
                  "Ipv6Ranges": [{"CidrIpv6": "::/0"}],
                  "PrefixListIds": [{"PrefixListId": "pl-1"}],
                  "UserIdGroupPairs": [{"GroupId": "sg-1", "UserId": "1"}]},
                 {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]},
                 {"IpProtocol": "58", "FromPort": 2, "ToPort": 0,
                  "Ipv6Ranges": [{"CidrIpv6": "::/0"}]}]
    assert sorted(p.rule for p in expand(described)) == sorted([
        ("tcp", 80, 80, "cidr", "10.0.0.0/8"), ("tcp", 80, 80, "cidr6", "::/0"),
        ("tcp", 80, 80, "prefix-list", "pl-1"), ("tcp", 80, 80, "group", "sg-1"),
        ("-1", -1, -1, "cidr", "0.0.0.0/0"), ("icmpv6", 2, 0, "cidr6", "::/0")])
    assert normal_protocol("6") == "tcp"
    written = to_api([_group("sg-2", 8080, 8080)])
    assert written == [{"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080,
                        "UserIdGroupPairs": [{"GroupId": "sg-2",
                                              "Description": OWNED_DESCRIPTION}]}]
    assert to_api([_group("sg-2", 8080, 8080)], with_descriptions=False)[0][
        "UserIdGroupPairs"] == [{"GroupId": "sg-2"}]
    # Ours name the cluster; upstream's label alone is upstream's (adopted only where it can
    # be this cluster's, ruleowners.py), another cluster's is never ours.
    assert OWNED_DESCRIPTION == ("elbv2.k8s.aws/cluster=test-cluster,"
                                 "elbv2.k8s.aws/targetGroupBinding=shared")
    assert owned(_group("sg-2", 1, 1, OWNED_DESCRIPTION))
    legacy = _group("sg-2", 1, 1, "elbv2.k8s.aws/targetGroupBinding=shared")
    assert legacy.description == LEGACY_DESCRIPTION
    assert not owned(legacy)
    assert is_legacy(legacy)
    assert not owned(_group("sg-2", 1, 1, description("other-cluster")))
    assert not is_legacy(_group("sg-2", 1, 1, description("other-cluster")))
    assert not owned(_group("sg-2", 1, 1, "bastion"))


def test_a_plan_grants_what_is_missing_and_revokes_only_what_is_ours() -> None:
    mine_stale = _group("sg-b", 9090, 9090)
    theirs = _group("sg-x", 22, 22, "ssh")
    same_rule_theirs = _group("sg-b", 8080, 8080, "someone's")
    wanted = [_group("sg-b", 8080, 8080), _group("sg-b", 443, 443)]
    changes = plan([mine_stale, theirs, same_rule_theirs], wanted, owned=owned)
    # 8080 exists already (whoever owns it, AWS would refuse a duplicate): only 443 is new.
    assert [p.rule for p in changes.grant] == [("tcp", 443, 443, "group", "sg-b")]
    assert changes.revoke == (mine_stale,)
    assert plan([mine_stale], wanted, owned=owned, revoke=False).revoke == ()
    assert not plan(wanted, wanted, owned=owned)


def test_while_only_granting_a_rule_a_wider_one_covers_is_not_added() -> None:
    """Before every binding has been reconciled, one binding's port inside the range the
    aggregate keeps is already admitted: granting it would only be revoked again."""
    wide = _group("sg-b", 8080, 30007)
    narrow = [_group("sg-b", 30007, 30007)]
    assert plan([wide], narrow, owned=owned, revoke=False).grant == ()
    other_source = [_group("sg-c", 30007, 30007)]
    assert plan([wide], other_source, owned=owned, revoke=False).grant == tuple(other_source)
    outside = [_group("sg-b", 30008, 30008)]
    assert plan([wide], outside, owned=owned, revoke=False).grant == tuple(outside)
    # With the whole picture the exact rule is kept: the wide one goes, the narrow one comes.
    full = plan([wide], narrow, owned=owned)
    assert (full.grant, full.revoke) == (tuple(narrow), (wide,))


def test_rules_from_one_group_merge_into_a_port_range_unless_unrestricted() -> None:
    first = {"sg-node": [_group("sg-b", 8080, 8080),
                         Permission("tcp", 8080, 8080, "cidr", "10.0.0.0/8", OWNED_DESCRIPTION)]}
    second = {"sg-node": [_group("sg-b", 9090, 9090), _group("sg-b", 30000, 30000)],
              "sg-other": [Permission("udp", 53, 53, "group", "sg-b", OWNED_DESCRIPTION)]}
    merged = aggregate([first, second], restricted=True)
    assert [p.rule for p in merged["sg-node"]] == [
        ("tcp", 8080, 8080, "cidr", "10.0.0.0/8"), ("tcp", 8080, 30000, "group", "sg-b")]
    assert [p.rule for p in merged["sg-other"]] == [("udp", 53, 53, "group", "sg-b")]
    every = aggregate([first, second], restricted=False)
    assert len(every["sg-node"]) == 4
