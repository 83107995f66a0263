"""The pure side of a load balancer's security groups: the managed group's rules, the groups a
load balancer carries, what its bindings ask of their targets' groups."""

from __future__ import annotations

import pytest

from controller.model import IngressRule, NetworkingPort, Ref, SharedBackendSecurityGroup
from controller.networking.frontend import (
    INBOUND_RULES_PER_GROUP,
    RuleQuotaExceeded,
    admits_no_one,
    binding_networking,
    frontend_rules,
    load_balancer_groups,
    managed_group_room,
    split_rules,
    unreachable_cidrs,
)
from controller.networking.settings import BackendSettings

MANAGED = Ref.to("AWS::EC2::SecurityGroup", "ManagedLBSecurityGroup", "groupID")


def _rules(**kwargs: object) -> set[tuple[str, int, int, str]]:
    return {(r.protocol, r.from_port, r.to_port,
             str(r.cidr_ipv4 or r.cidr_ipv6 or r.prefix_list_id))
            for r in frontend_rules(**kwargs)}  # type: ignore[arg-type]


def test_one_rule_per_listen_port_and_source_in_the_listener_s_protocol() -> None:
    assert _rules(ports=[("HTTP", 80), ("HTTPS", 443), ("UDP", 53)],
                  cidrs=["10.0.0.0/8", "2001:db8::/32"], prefix_lists=["pl-1"]) == {
        ("tcp", 80, 80, "10.0.0.0/8"), ("tcp", 80, 80, "2001:db8::/32"), ("tcp", 80, 80, "pl-1"),
        ("tcp", 443, 443, "10.0.0.0/8"), ("tcp", 443, 443, "2001:db8::/32"),
        ("tcp", 443, 443, "pl-1"),
        ("udp", 53, 53, "10.0.0.0/8"), ("udp", 53, 53, "2001:db8::/32"), ("udp", 53, 53, "pl-1")}


def test_icmp_for_path_mtu_discovery_is_one_rule_per_cidr() -> None:
    # pkg/shared_constants/icmp.go: IPv4 type 3 code 4, IPv6 type 2 code 0.
    assert _rules(ports=[("TCP", 80)], cidrs=["0.0.0.0/0", "::/0"], icmp_path_mtu=True) == {
        ("tcp", 80, 80, "0.0.0.0/0"), ("tcp", 80, 80, "::/0"),
        ("icmp", 3, 4, "0.0.0.0/0"), ("icmpv6", 2, 0, "::/0")}


def test_the_groups_a_load_balancer_carries() -> None:
    on = BackendSettings()
    managed = load_balancer_groups(managed=MANAGED, user_groups=(), manage_backend_rules=False,
                                   backend=on, where="x")
    assert managed.security_groups == (MANAGED, SharedBackendSecurityGroup())
    assert managed.target_source == SharedBackendSecurityGroup()
    # Without the backend group the targets admit the managed group itself.
    alone = load_balancer_groups(managed=MANAGED, user_groups=(), manage_backend_rules=False,
                                 backend=BackendSettings(enabled=False), where="x")
    assert (alone.security_groups, alone.target_source) == ((MANAGED,), MANAGED)
    # A user-managed backend group (--backend-security-group) is used as it is.
    given = load_balancer_groups(managed=MANAGED, user_groups=(), manage_backend_rules=False,
                                 backend=BackendSettings(group_id="sg-0b"), where="x")
    assert given.security_groups == (MANAGED, "sg-0b")
    user = load_balancer_groups(managed=None, user_groups=("sg-1", "team"),
                                manage_backend_rules=False, backend=on, where="x")
    assert (user.security_groups, user.target_source) == (("sg-1", "team"), None)
    ruled = load_balancer_groups(managed=None, user_groups=("sg-1",), manage_backend_rules=True,
                                 backend=on, where="x")
    assert ruled.security_groups == ("sg-1", SharedBackendSecurityGroup())
    with pytest.raises(ValueError, match="needs the backend security group"):
        load_balancer_groups(managed=None, user_groups=("sg-1",), manage_backend_rules=True,
                             backend=BackendSettings(enabled=False), where="x")


def test_binding_networking_restricted_to_the_ports_or_every_port() -> None:
    ports = [NetworkingPort(port=8080), NetworkingPort(port=8081)]
    restricted = binding_networking(SharedBackendSecurityGroup(), ports, restricted=True)
    assert restricted is not None
    assert [p.port for p in restricted.ingress[0].ports] == [8080, 8081]
    wide = binding_networking("sg-0b", ports, restricted=False, protocols=["TCP", "UDP"])
    assert wide is not None
    assert [(p.protocol, p.port) for p in wide.ingress[0].ports] == [("TCP", None),
                                                                     ("UDP", None)]
    assert binding_networking(None, ports, restricted=True) is None


def _cidrs(n: int, *, v6: bool = False) -> list[str]:
    return [f"2001:db8:{i:x}::/48" if v6 else f"10.{i // 250}.{i % 250}.0/24" for i in range(n)]


def _parts(rules: object, **kwargs: int) -> dict[int, set[tuple[int, str]]]:
    return {n: {(r.from_port, str(r.cidr_ipv4 or r.cidr_ipv6 or r.prefix_list_id)) for r in p}
            for n, p in split_rules(rules, **kwargs).items()}  # type: ignore[arg-type]


def _load(rules: tuple[IngressRule, ...]) -> tuple[int, int]:
    return (sum(1 for r in rules if r.cidr_ipv6 is None),
            sum(1 for r in rules if r.cidr_ipv4 is None))


def test_the_managed_group_is_split_at_ec2_s_inbound_rule_quota_per_family() -> None:
    # Before: past 60 rules of one family the managed group was refused; now it is split.
    assert INBOUND_RULES_PER_GROUP == 60
    ports = [("HTTP", 80), ("HTTPS", 443), ("HTTP", 8080)]
    # 3 ports x 20 IPv4 CIDRs: 60, the quota; with as many IPv6 CIDRs too (counted apart).
    both = frontend_rules(ports, cidrs=_cidrs(20) + _cidrs(20, v6=True))
    assert list(split_rules(both)) == [1]
    # 63 IPv4 rules: more than one part, each within the quota, every rule in exactly one.
    wide = frontend_rules(ports, cidrs=_cidrs(21))
    parts = split_rules(wide)
    assert len(parts) >= 2
    assert 1 in parts
    assert all(max(_load(p)) <= 60 for p in parts.values())
    assert sorted(r.sort_key for p in parts.values() for r in p) == sorted(
        r.sort_key for r in wide)
    assert split_rules(list(reversed(wide))) == parts  # deterministic: order does not matter
    # ICMP for path-MTU discovery counts too: 2 ports x 20 CIDRs + 20 fit; one more does not.
    assert len(split_rules(frontend_rules(ports[:2], cidrs=_cidrs(20), icmp_path_mtu=True))) == 1
    assert len(split_rules(frontend_rules(ports[:2], cidrs=_cidrs(21),
                                          icmp_path_mtu=True))) >= 2
    # A prefix list counts in both families (at least once: EC2 counts its entries).
    assert len(split_rules(frontend_rules(ports, cidrs=_cidrs(20, v6=True),
                                          prefix_lists=["pl-1"]))) >= 2
    # The same source listed twice is one rule.
    assert len(split_rules(frontend_rules([("TCP", 80)], cidrs=[*_cidrs(60), *_cidrs(60)]))) == 1


def test_adding_a_cidr_moves_no_rule_to_another_group() -> None:
    ports = [("HTTP", 80), ("HTTPS", 443)]
    before = _parts(frontend_rules(ports, cidrs=_cidrs(70)))
    after = _parts(frontend_rules(ports, cidrs=_cidrs(71)))
    assert len(before) == len(after) == 3
    where = {rule: n for n, rules in after.items() for rule in rules}
    assert all(where[rule] == n for n, rules in before.items() for rule in rules)
    # A lower quota (--max-rules-per-security-group) splits sooner.
    assert len(_parts(frontend_rules(ports, cidrs=_cidrs(5)), quota=4)) >= 3


def test_rules_past_what_the_load_balancer_may_carry_are_refused_with_the_reason() -> None:
    ports = [("HTTP", 80), ("HTTPS", 443)]
    # Near the limit the rules are packed (4 x 60 = 240 rules in 4 groups).
    packed = split_rules(frontend_rules(ports, cidrs=_cidrs(120)), max_groups=4)
    assert len(packed) == 4
    assert all(max(_load(p)) <= 60 for p in packed.values())
    with pytest.raises(RuleQuotaExceeded, match=(
            r"the managed security groups would need 242 inbound IPv4 rules \(one per listen "
            r"port and source\), more than fit in the 4 managed security groups the load "
            r"balancer may carry with 60 rules each")):
        split_rules(frontend_rules(ports, cidrs=_cidrs(121)), max_groups=4)
    assert managed_group_room(BackendSettings(), security_groups_per_load_balancer=5) == 4
    assert managed_group_room(BackendSettings(enabled=False),
                              security_groups_per_load_balancer=5) == 5


def test_without_the_backend_group_targets_admit_every_part() -> None:
    second = Ref.to("AWS::EC2::SecurityGroup", "ManagedLBSecurityGroup-2", "groupID")
    alone = load_balancer_groups(managed=(MANAGED, second), user_groups=(),
                                 manage_backend_rules=False,
                                 backend=BackendSettings(enabled=False), where="x")
    assert alone.security_groups == (MANAGED, second)
    networking = binding_networking(alone.target_source, [NetworkingPort(port=8080)],
                                    restricted=True)
    assert networking is not None
    assert {p.security_group for p in networking.ingress[0].from_} == {MANAGED, second}
    on = load_balancer_groups(managed=(MANAGED, second), user_groups=(),
                              manage_backend_rules=False, backend=BackendSettings(), where="x")
    assert on.security_groups == (MANAGED, second, SharedBackendSecurityGroup())
    assert on.target_source == SharedBackendSecurityGroup()


def test_ipv6_sources_admit_no_one_on_an_ipv4_load_balancer() -> None:
    cidrs = ["10.0.0.0/8", "::/0", "2001:db8::/32"]
    assert unreachable_cidrs(cidrs, ip_address_type="ipv4") == ["::/0", "2001:db8::/32"]
    assert unreachable_cidrs(cidrs, ip_address_type="dualstack") == []
    assert unreachable_cidrs(cidrs, ip_address_type="dualstack-without-public-ipv4") == []
    some = admits_no_one(["::/0"], what="inbound-cidrs", ip_address_type="ipv4", left=True)
    assert some == ("inbound-cidrs: ::/0 admits no one: IPv6 sources never reach an ipv4 load "
                    "balancer (make it dualstack, or remove them)")
    none = admits_no_one(["::/0", "2001:db8::/32"], what="inbound-cidrs",
                         ip_address_type="ipv4", left=False)
    assert none.endswith("::/0, 2001:db8::/32 admit no one: IPv6 sources never reach an ipv4 "
                         "load balancer (make it dualstack, or remove them); no other source "
                         "is given, so the load balancer admits no one")
