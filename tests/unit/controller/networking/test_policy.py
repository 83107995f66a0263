"""The networking policy on hostile specs: a namespace may admit only its own load balancers'
groups (the backend group, its stacks' managed frontend groups) on its target and
health-check ports; CIDRs, other groups, every port and other ports need the administrator's
grant; the refusal names the first rule in the spec's order, in words that depend on the spec
alone; what a binding not reconciled yet may hold back is no more than that."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.apis.targetgroupbinding import Networking
from controller.networking.groupfacts import GroupFacts
from controller.networking.permissions import Permission
from controller.networking.policy import (
    BindingScope,
    NetworkingNotAllowed,
    NetworkingPolicy,
    check,
    claimed_rules,
    group_sources,
    may_hold,
    refusal,
    target_group_stacks,
)
from controller.targetgroupbinding.networking import permissions_for

CLUSTER, VPC = "prod", "vpc-1"
POLICY = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC)
BACKEND = GroupFacts("sg-backend", VPC, {"elbv2.k8s.aws/cluster": CLUSTER,
                                         "elbv2.k8s.aws/resource": "backend-sg"})


def _frontend(group_id: str, kind: str, stack: str, *, cluster: str = CLUSTER,
              vpc: str = VPC, resource: str = "ManagedLBSecurityGroup") -> GroupFacts:
    return GroupFacts(group_id, vpc, {"elbv2.k8s.aws/cluster": cluster,
                                      f"{kind}.k8s.aws/stack": stack,
                                      f"{kind}.k8s.aws/resource": resource})


FACTS = {f.group_id: f for f in [
    BACKEND,
    _frontend("sg-shop-nlb", "service", "shop/web"),
    _frontend("sg-shop-alb", "ingress", "shop/site"),
    _frontend("sg-team-group", "ingress", "team-web"),  # an explicit Ingress group
    _frontend("sg-staging", "service", "attacker/web", cluster="staging"),
    _frontend("sg-elsewhere", "service", "attacker/web", vpc="vpc-2"),
    GroupFacts("sg-forged-backend", "vpc-2", {"elbv2.k8s.aws/cluster": CLUSTER,
                                              "elbv2.k8s.aws/resource": "backend-sg"}),
    GroupFacts("sg-bastion", VPC, {"Name": "bastion"}),
    _frontend("sg-attacker-nlb", "service", "attacker/web"),
    # Parts of a split frontend group (more inbound rules than one group holds).
    _frontend("sg-attacker-nlb-2", "service", "attacker/web",
              resource="ManagedLBSecurityGroup-2"),
    _frontend("sg-attacker-other", "service", "attacker/web", resource="ManagedLBSecurityGroupX"),
]}


def _networking(*rules: dict[str, Any]) -> Networking:
    return Networking.model_validate({"ingress": list(rules)})


def _from_group(group: str, *ports: Any, protocol: str = "TCP") -> dict[str, Any]:
    return {"from": [{"securityGroup": {"groupID": group}}],
            "ports": [{"protocol": protocol, "port": p} for p in ports]}


def _refusal(networking: Networking, *, namespace: str = "attacker",
             ports: frozenset[int] | None = frozenset({8080}),
             policy: NetworkingPolicy = POLICY,
             stacks: frozenset[tuple[str, str]] = frozenset()) -> str | None:
    return refusal(networking, scope=BindingScope(namespace=namespace, ports=ports,
                                                  stacks=stacks),
                   policy=policy, facts=FACTS)


def test_the_escalation_found_is_refused_rule_by_rule() -> None:
    every_tcp = _networking({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]})
    assert _refusal(every_tcp) == (
        "spec.networking.ingress[0].from[0]: ipBlock 0.0.0.0/0: TargetGroupBindings in "
        "namespace attacker may admit only their own load balancers' security groups, not "
        "CIDRs (a cluster administrator can allow it with "
        "--targetgroupbinding-networking-unrestricted-namespaces)")
    udp_anywhere = _networking({"from": [{"ipBlock": {"cidr": "::/0"}}],
                                "ports": [{"protocol": "UDP"}]})
    assert "from[0]: ipBlock ::/0" in str(_refusal(udp_anywhere))
    ssh_from_the_shop = _networking(_from_group("sg-shop-nlb", 22))
    assert _refusal(ssh_from_the_shop) == (
        "spec.networking.ingress[0].from[0]: securityGroup sg-shop-nlb is neither the "
        "cluster's backend security group nor a managed security group of a load balancer in "
        "namespace attacker (a cluster administrator can allow it with "
        "--targetgroupbinding-networking-unrestricted-namespaces)")
    with pytest.raises(NetworkingNotAllowed) as refused:
        check(ssh_from_the_shop, scope=BindingScope(namespace="attacker"), policy=POLICY,
              facts=FACTS)
    assert refused.value.condition_reason == "NetworkingNotAllowed"


@pytest.mark.parametrize("group", ["sg-staging", "sg-elsewhere", "sg-forged-backend",
                                   "sg-bastion", "sg-missing", "sg-team-group"])
def test_groups_that_are_not_the_namespaces_load_balancers_are_refused(group: str) -> None:
    assert f"securityGroup {group} is neither" in str(_refusal(_networking(
        _from_group(group, 8080))))


def test_the_namespaces_own_load_balancer_groups_are_allowed_on_its_ports() -> None:
    assert _refusal(_networking(_from_group("sg-backend", 8080))) is None
    assert _refusal(_networking(_from_group("sg-attacker-nlb", 8080, protocol="UDP"))) is None
    assert _refusal(_networking(_from_group("sg-attacker-nlb-2", 8080))) is None
    assert "is neither" in str(_refusal(_networking(_from_group("sg-attacker-other", 8080))))
    assert _refusal(_networking(_from_group("sg-shop-nlb", 8080), _from_group(
        "sg-shop-alb", 8080, "http")), namespace="shop") is None
    # A user-given backend group is the backend group whatever its tags.
    given_backend = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC, backend_group_id="sg-bastion")
    assert _refusal(_networking(_from_group("sg-bastion", 8080)), policy=given_backend) is None
    # An explicit Ingress group's frontend group: for the namespace it made the target group
    # for (the target group's tags say so).
    stacks = target_group_stacks({"elbv2.k8s.aws/cluster": CLUSTER,
                                  "ingress.k8s.aws/stack": "team-web",
                                  "ingress.k8s.aws/resource": "attacker/site-web:80"},
                                 cluster=CLUSTER, namespace="attacker")
    assert stacks == {("ingress", "team-web")}
    assert _refusal(_networking(_from_group("sg-team-group", 8080)), stacks=stacks) is None
    assert target_group_stacks({"elbv2.k8s.aws/cluster": CLUSTER,
                                "ingress.k8s.aws/stack": "team-web",
                                "ingress.k8s.aws/resource": "shop/site-web:80"},
                               cluster=CLUSTER, namespace="attacker") == frozenset()
    assert target_group_stacks({"elbv2.k8s.aws/cluster": "staging",
                                "ingress.k8s.aws/stack": "team-web",
                                "ingress.k8s.aws/resource": "attacker/site-web:80"},
                               cluster=CLUSTER, namespace="attacker") == frozenset()


def test_ports_beyond_the_target_and_health_check_ports_are_refused() -> None:
    assert _refusal(_networking(_from_group("sg-backend", 22))) == (
        "spec.networking.ingress[0].ports[0]: port 22 is neither a target port nor the "
        "health-check port of this TargetGroupBinding (a cluster administrator can allow it "
        "with --targetgroupbinding-networking-unrestricted-namespaces)")
    assert _refusal(_networking(_from_group("sg-backend", 0))) is not None
    assert "ports: none given, which is every TCP port" in str(_refusal(_networking(
        {"from": [{"securityGroup": {"groupID": "sg-backend"}}]})))
    assert "ports[1]: every UDP port" in str(_refusal(_networking(
        {"from": [{"securityGroup": {"groupID": "sg-backend"}}],
         "ports": [{"port": 8080}, {"protocol": "UDP"}]})))
    # Named ports are target ports by definition; unknown target ports are not checked here.
    assert _refusal(_networking(_from_group("sg-backend", "http"))) is None
    assert _refusal(_networking(_from_group("sg-backend", 22)), ports=None) is None
    # --disable-restricted-sg-rules lets load balancers reach every port.
    every = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC, every_port=True)
    assert _refusal(_networking({"from": [{"securityGroup": {"groupID": "sg-backend"}}]}),
                    policy=every) is None
    assert _refusal(_networking({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}),
                    policy=every) is not None


def test_the_first_refusal_in_the_spec_is_the_one_named() -> None:
    spec = _networking(_from_group("sg-backend", 8080),
                       {"from": [{"securityGroup": {"groupID": "sg-backend"}},
                                 {"ipBlock": {"cidr": "10.0.0.0/8"}}],
                        "ports": [{"port": 22}]})
    assert str(_refusal(spec)).startswith("spec.networking.ingress[1].from[1]: ipBlock")
    assert group_sources(spec) == ["sg-backend"]


def test_the_grant_allows_anything_in_the_namespaces_it_names() -> None:
    escalation = _networking({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}},
                                       {"securityGroup": {"groupID": "sg-shop-nlb"}}]})
    named = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC,
                             unrestricted_namespaces=frozenset({"attacker"}))
    assert _refusal(escalation, policy=named) is None
    assert _refusal(escalation, policy=named, namespace="other") is not None
    every = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC,
                             unrestricted_namespaces=frozenset({"*"}))
    assert _refusal(escalation, policy=every, namespace="other") is None


def test_what_a_binding_not_reconciled_yet_holds_back_is_no_more_than_it_may_have() -> None:
    # Refused from the spec alone: nothing to hold back.
    assert claimed_rules(_networking({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}],
                                      "ports": [{"port": 80}]}),
                         namespace="attacker", policy=POLICY) == []
    assert claimed_rules(_networking({"from": [{"securityGroup": {"groupID": "sg-backend"}}]}),
                         namespace="attacker", policy=POLICY) == []
    # A named port, not resolved yet: every port of that protocol.
    held = claimed_rules(_networking(_from_group("sg-backend", "http", 9090)),
                         namespace="attacker", policy=POLICY)
    assert [p.rule for p in held] == [("tcp", 0, 65535, "group", "sg-backend"),
                                      ("tcp", 9090, 9090, "group", "sg-backend")]
    # Group sources: the cluster's groups of that namespace (or of an Ingress group) only.
    rule = Permission("tcp", 22, 22, "group", "x")
    assert may_hold(POLICY, "attacker", rule, FACTS["sg-backend"])
    assert may_hold(POLICY, "attacker", rule, FACTS["sg-attacker-nlb"])
    assert may_hold(POLICY, "attacker", rule, FACTS["sg-team-group"])
    assert not may_hold(POLICY, "attacker", rule, FACTS["sg-shop-nlb"])
    assert not may_hold(POLICY, "attacker", rule, FACTS["sg-staging"])
    assert not may_hold(POLICY, "attacker", rule, None)
    granted = NetworkingPolicy(cluster=CLUSTER, vpc_id=VPC,
                               unrestricted_namespaces=frozenset({"attacker"}))
    cidr = claimed_rules(_networking({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}),
                         namespace="attacker", policy=granted)
    assert [p.rule for p in cidr] == [("tcp", 0, 65535, "cidr", "0.0.0.0/0")]


_GROUPS = st.sampled_from([*sorted(FACTS), "sg-missing"])
_PORTS = st.one_of(st.none(), st.integers(0, 65535), st.sampled_from([8080, 8081, "http"]))
_PEERS = st.one_of(
    st.builds(lambda g: {"securityGroup": {"groupID": g}}, _GROUPS),
    st.builds(lambda c: {"ipBlock": {"cidr": c}},
              st.sampled_from(["0.0.0.0/0", "::/0", "10.0.0.0/8", "192.0.2.7/32"])))
_RULES = st.builds(
    lambda peers, ports: {"from": peers, "ports": ports},
    st.lists(_PEERS, min_size=1, max_size=3),
    st.lists(st.builds(lambda proto, port: {"protocol": proto, "port": port},
                       st.sampled_from(["TCP", "UDP"]), _PORTS), max_size=3))


@given(rules=st.lists(_RULES, max_size=4),
       namespace=st.sampled_from(["attacker", "shop"]))
def test_whatever_is_allowed_admits_only_the_namespaces_groups_on_its_ports(
        rules: list[dict[str, Any]], namespace: str) -> None:
    networking = _networking(*rules)
    ports = frozenset({8080, 8081})
    if _refusal(networking, namespace=namespace, ports=ports) is not None:
        return
    scope_groups = {"sg-backend", f"sg-{namespace}-nlb"} | (
        {"sg-shop-alb"} if namespace == "shop" else set())
    for rule in permissions_for(networking, target_ports=[8080]):
        assert rule.source_kind == "group"
        assert rule.source in scope_groups
        assert rule.from_port == rule.to_port
        assert rule.from_port in ports
