"""Security groups in the stack model: what a rule and a group may be, and that the order a
builder produced groups and rules in never changes the canonical JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.model import (
    MANAGED_SECURITY_GROUP_ID,
    SECURITY_GROUP,
    GroupReference,
    IngressRule,
    InvalidStack,
    LoadBalancer,
    NetworkingIngress,
    NetworkingPeer,
    NetworkingPort,
    Ref,
    SecurityGroup,
    SharedBackendSecurityGroup,
    StackBuilder,
    StackContext,
    TargetGroupBindingNetworking,
    canonical_json,
)

CONTEXT = StackContext(cluster_name="c", region="us-west-2", vpc_id="vpc-1")


def _rule(**source: str) -> IngressRule:
    return IngressRule.model_validate({"protocol": "tcp", "from_port": 80, "to_port": 80,
                                       **source})


@pytest.mark.parametrize(("source", "message"), [
    ({}, "exactly one of"),
    ({"cidr_ipv4": "10.0.0.0/8", "prefix_list_id": "pl-1"}, "exactly one of"),
    ({"cidr_ipv4": "2001:db8::/32"}, "is not an IPv4 CIDR"),
    ({"cidr_ipv6": "10.0.0.0/8"}, "is not an IPv6 CIDR"),
    ({"cidr_ipv4": "nonsense"}, "is not a CIDR"),
])
def test_a_rule_has_exactly_one_valid_source(source: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _rule(**source)


def test_group_names_and_ports_are_checked() -> None:
    with pytest.raises(ValidationError, match="must not start with 'sg-'"):
        SecurityGroup(name="sg-mine")
    with pytest.raises(ValidationError, match="is not a range"):
        IngressRule(protocol="tcp", from_port=90, to_port=80, cidr_ipv4="0.0.0.0/0")
    # ICMP carries a type and a code, not a range.
    IngressRule(protocol="icmp", from_port=3, to_port=4, cidr_ipv4="0.0.0.0/0")


def _stack(rules: list[IngressRule], groups_first: bool) -> bytes:
    b = StackBuilder("ns/web", kind="ingress", context=CONTEXT)
    managed = b.add_security_group(MANAGED_SECURITY_GROUP_ID,
                                   SecurityGroup(name="k8s-ns-web-0123456789", ingress=rules))
    groups: list[GroupReference] = [managed, SharedBackendSecurityGroup(), "sg-0aa"]
    b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-ns-web-0123456789", type="application", subnets=["subnet-1", "subnet-2"],
        security_groups=groups if groups_first else list(reversed(groups))))
    return canonical_json(b.build())


def test_order_never_changes_the_canonical_json() -> None:
    rules = [_rule(cidr_ipv4="10.0.0.0/8"), _rule(cidr_ipv6="::/0"), _rule(prefix_list_id="pl-1"),
             _rule(cidr_ipv4="10.0.0.0/8")]
    assert _stack(rules, True) == _stack(list(reversed(rules)), False)
    lb_groups = b'"security_groups":[{"$ref":"#/resources/AWS::EC2::SecurityGroup/' \
                b'ManagedLBSecurityGroup/status/groupID"},{"shared":"backend"},"sg-0aa"]'
    assert lb_groups in _stack(rules, True)
    assert _stack(rules, True) != _stack(rules[:1], True)


def test_references_to_groups_must_point_at_the_stack_s_groups() -> None:
    b = StackBuilder("ns/web", kind="ingress", context=CONTEXT)
    b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-ns-web-0123456789", type="application", subnets=["subnet-1"],
        security_groups=[Ref.to(SECURITY_GROUP, "missing", "groupID")]))
    with pytest.raises(InvalidStack, match="points at no resource"):
        b.build()


def test_private_link_enforcement_is_a_setting_of_an_nlb_with_groups() -> None:
    with pytest.raises(ValidationError, match="network load balancer setting"):
        LoadBalancer(name="x", type="application", subnets=["subnet-1"],
                     security_groups=["sg-1"], inbound_rules_on_private_link="off")
    with pytest.raises(ValidationError, match="need security groups"):
        LoadBalancer(name="x", type="network", subnets=["subnet-1"],
                     inbound_rules_on_private_link="off")


def test_binding_networking_is_sorted_and_needs_a_peer() -> None:
    def networking(ports: list[NetworkingPort]) -> TargetGroupBindingNetworking:
        return TargetGroupBindingNetworking(ingress=[NetworkingIngress.model_validate(
            {"from": [NetworkingPeer(security_group=SharedBackendSecurityGroup())],
             "ports": ports})])

    a = networking([NetworkingPort(port=9090), NetworkingPort(port="http"),
                    NetworkingPort(protocol="UDP", port=53)])
    b = networking([NetworkingPort(protocol="UDP", port=53), NetworkingPort(port="http"),
                    NetworkingPort(port=9090)])
    assert a == b
    with pytest.raises(ValidationError, match="exactly one of"):
        NetworkingPeer()
    with pytest.raises(ValidationError):
        NetworkingIngress.model_validate({"from": [], "ports": []})
