"""The pure side of a load balancer's security groups: the managed group's rules, the groups a
load balancer carries, what its bindings ask of their targets' groups."""

from __future__ import annotations

import pytest

from controller.model import NetworkingPort, Ref, SharedBackendSecurityGroup
from controller.networking.frontend import (
    INBOUND_RULES_PER_GROUP,
    admits_no_one,
    binding_networking,
    frontend_rules,
    load_balancer_groups,
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


def test_the_managed_group_fits_ec2_s_inbound_rule_quota_per_family() -> None:
    assert INBOUND_RULES_PER_GROUP == 60
    # 3 ports x 20 IPv4 CIDRs: 60, the quota; with as many IPv6 CIDRs too (counted apart).
    ports = [("HTTP", 80), ("HTTPS", 443), ("HTTP", 8080)]
    assert len(frontend_rules(ports, cidrs=_cidrs(20) + _cidrs(20, v6=True))) == 120
    with pytest.raises(ValueError, match=r"63 inbound IPv4 rules.*more than the 60 EC2 allows"):
        frontend_rules(ports, cidrs=_cidrs(21))
    # ICMP for path-MTU discovery counts too: 2 ports x 20 CIDRs + 20.
    assert len(frontend_rules(ports[:2], cidrs=_cidrs(20), icmp_path_mtu=True)) == 60
    with pytest.raises(ValueError, match="63 inbound IPv4 rules"):
        frontend_rules(ports[:2], cidrs=_cidrs(21), icmp_path_mtu=True)
    # A prefix list counts in both families (at least once: EC2 counts its entries).
    with pytest.raises(ValueError, match="63 inbound IPv6 rules"):
        frontend_rules(ports, cidrs=_cidrs(20, v6=True), prefix_lists=["pl-1"])
    # The same source listed twice is one rule.
    assert len({(r.from_port, r.cidr_ipv4) for r in frontend_rules(
        [("TCP", 80)], cidrs=[*_cidrs(60), *_cidrs(60)])}) == 60


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
