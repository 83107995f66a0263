"""Pairing static addresses with resolved subnets (upstream's rules), and what SetSubnets is
sent when they change."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from controller.deploy.errors import ResolveError
from controller.deploy.subnetmappings import SubnetCidrs, api_mapping, pair, plan
from controller.model import LoadBalancer, SubnetMapping

CIDRS = {"subnet-a": SubnetCidrs(("10.0.0.0/24",), ("2600:1f13:0:0::/64",)),
         "subnet-b": SubnetCidrs(("10.0.1.0/24",), ()),
         "subnet-c": SubnetCidrs(("10.0.2.0/24",), ("2600:1f13:0:2::/64",))}


def _lb(**fields: Any) -> LoadBalancer:
    return LoadBalancer(name="nlb", type="network", subnets=["subnet-a", "subnet-b"], **fields)


def test_eips_pair_by_position_addresses_by_cidr() -> None:
    got = pair(_lb(eip_allocations=["eipalloc-2", "eipalloc-1"]), ["subnet-a", "subnet-b"], CIDRS)
    assert [(m.subnet_id, m.allocation_id) for m in got] == [
        ("subnet-a", "eipalloc-2"), ("subnet-b", "eipalloc-1")]
    got = pair(_lb(private_ipv4_addresses=["10.0.1.7", "10.0.0.7"]), ["subnet-a", "subnet-b"],
               CIDRS)
    assert [m.private_ipv4_address for m in got] == ["10.0.0.7", "10.0.1.7"]


@pytest.mark.parametrize(("lb", "subnets", "message"), [
    (_lb(eip_allocations=["eipalloc-1"]), ["subnet-a", "subnet-b"],
     "load balancer nlb: count of EIP allocations (1) and subnets (2: subnet-a, subnet-b) must "
     "match"),
    (_lb(private_ipv4_addresses=["10.0.0.7", "10.0.0.8"]), ["subnet-a", "subnet-b"],
     "load balancer nlb: subnet subnet-a (10.0.0.0/24) needs exactly one of the private IPv4 "
     "addresses, got 2 (10.0.0.7, 10.0.0.8)"),
    (_lb(ipv6_addresses=["2600:1f13::1", "2600:1f13:0:2::1"]), ["subnet-a", "subnet-b"],
     "load balancer nlb: subnet subnet-b (no IPv6 CIDR) needs exactly one of the IPv6 "
     "addresses, got 0"),
])
def test_upstream_rules_at_resolve(lb: LoadBalancer, subnets: list[str], message: str) -> None:
    with pytest.raises(ResolveError) as exc:
        pair(lb, subnets, CIDRS)
    assert str(exc.value) == message


def _current(*zones: dict[str, Any], ip_type: str = "ipv4") -> dict[str, Any]:
    return {"AvailabilityZones": list(zones), "IpAddressType": ip_type}


def _with(mappings: list[SubnetMapping], **fields: Any) -> LoadBalancer:
    return _lb(subnet_mappings=mappings, **fields)


def test_same_subnets_no_call_and_a_changed_eip_is_reported() -> None:
    lb = _with([SubnetMapping(subnet_id="subnet-a", allocation_id="eipalloc-new"),
                SubnetMapping(subnet_id="subnet-b", allocation_id="eipalloc-b")])
    current = _current(
        {"SubnetId": "subnet-a", "LoadBalancerAddresses": [{"AllocationId": "eipalloc-old"}]},
        {"SubnetId": "subnet-b", "LoadBalancerAddresses": [{"AllocationId": "eipalloc-b"}]})
    got = plan(lb, current)
    assert got.mappings is None
    assert got.kept == ("subnet-a keeps eipalloc-old (eipalloc-new asked)",)
    unchanged = plan(_with([SubnetMapping(subnet_id="subnet-a", allocation_id="eipalloc-old"),
                            SubnetMapping(subnet_id="subnet-b", allocation_id="eipalloc-b")]),
                     current)
    assert (unchanged.mappings, unchanged.kept) == (None, ())


def test_a_new_subnet_keeps_the_others_configuration() -> None:
    lb = _with([SubnetMapping(subnet_id="subnet-a", allocation_id="eipalloc-new"),
                SubnetMapping(subnet_id="subnet-c", allocation_id="eipalloc-c")])
    current = _current(
        {"SubnetId": "subnet-a", "LoadBalancerAddresses": [{"AllocationId": "eipalloc-old",
                                                            "IpAddress": "1.2.3.4"}]})
    got = plan(lb, current)
    assert got.mappings == (
        {"SubnetId": "subnet-a", "AllocationId": "eipalloc-old"},
        {"SubnetId": "subnet-c", "AllocationId": "eipalloc-c"})
    assert got.kept == ("subnet-a keeps eipalloc-old (eipalloc-new asked)",)


def test_dropping_the_annotation_keeps_the_elastic_ips_and_says_so() -> None:
    lb = _with([SubnetMapping(subnet_id="subnet-a")])
    got = plan(lb, _current({"SubnetId": "subnet-a", "LoadBalancerAddresses": [
        {"AllocationId": "eipalloc-old"}]}))
    assert got.mappings is None
    assert got.kept == ("subnet-a keeps Elastic IP eipalloc-old (none asked)",)


def test_ipv6_addresses_set_with_the_move_to_dualstack() -> None:
    lb = _with([SubnetMapping(subnet_id="subnet-a", ipv6_address="2600:1f13::9")],
               ip_address_type="dualstack")
    zone = {"SubnetId": "subnet-a"}
    assert plan(lb, _current(zone)).mappings == (
        {"SubnetId": "subnet-a", "IPv6Address": "2600:1f13::9"},)
    # Already dualstack: upstream makes no call for the addresses alone.
    assert plan(lb, _current(zone, ip_type="dualstack")).mappings is None


def test_api_mapping_leaves_out_what_is_not_asked() -> None:
    assert api_mapping(SubnetMapping(subnet_id="subnet-a", private_ipv4_address="10.0.0.1")) == {
        "SubnetId": "subnet-a", "PrivateIPv4Address": "10.0.0.1"}


def _nat(*prefixes: str | None, enable: Literal["on", "off"] | None = "on") -> LoadBalancer:
    return LoadBalancer(
        name="nlb", type="network", subnets=["subnet-a", "subnet-c"], ip_address_type="dualstack",
        enable_prefix_for_ipv6_source_nat=enable,
        subnet_mappings=[SubnetMapping(subnet_id=s, source_nat_ipv6_prefix=p)
                         for s, p in zip(("subnet-a", "subnet-c"), prefixes, strict=True)])


def _nat_zones(*prefixes: str | None, enable: str = "on") -> dict[str, Any]:
    return {"IpAddressType": "dualstack", "EnablePrefixForIpv6SourceNat": enable,
            "AvailabilityZones": [
                {"SubnetId": s, **({"SourceNatIpv6Prefixes": [p]} if p else {})}
                for s, p in zip(("subnet-a", "subnet-c"), prefixes, strict=True)]}


def test_source_nat_prefixes_pair_by_position_within_the_subnet() -> None:
    lb = LoadBalancer(name="nlb", type="network", subnets=["subnet-a", "subnet-c"],
                      ip_address_type="dualstack", enable_prefix_for_ipv6_source_nat="on",
                      source_nat_ipv6_prefixes=["auto_assigned", "2600:1f13:0:2:1::/80"])
    got = pair(lb, ["subnet-a", "subnet-c"], CIDRS)
    assert [m.source_nat_ipv6_prefix for m in got] == ["auto_assigned", "2600:1f13:0:2:1::/80"]
    swapped = lb.model_copy(update={"source_nat_ipv6_prefixes": (
        "2600:1f13:0:2:1::/80", "auto_assigned")})
    with pytest.raises(ResolveError) as exc:
        pair(swapped, ["subnet-a", "subnet-c"], CIDRS)
    assert str(exc.value) == ("load balancer nlb: source NAT IPv6 prefix 2600:1f13:0:2:1::/80 is "
                              "not within subnet subnet-a's IPv6 CIDR (2600:1f13:0:0::/64)")


def test_auto_assigned_matches_what_aws_picked_and_no_call_is_made() -> None:
    current = _nat_zones("2600:1f13:0:0:9::/80", "2600:1f13:0:2:1::/80")
    assert plan(_nat("auto_assigned", "2600:1f13:0:2:1::/80"), current).mappings is None
    assert plan(_nat(None, None), current).mappings is None


def test_a_changed_prefix_or_setting_is_sent() -> None:
    current = _nat_zones("2600:1f13:0:0:9::/80", "2600:1f13:0:2:1::/80")
    got = plan(_nat("auto_assigned", "2600:1f13:0:2:2::/80"), current)
    assert got.mappings == (
        {"SubnetId": "subnet-a", "SourceNatIpv6Prefix": "2600:1f13:0:0:9::/80"},
        {"SubnetId": "subnet-c", "SourceNatIpv6Prefix": "2600:1f13:0:2:2::/80"})
    assert got.enable == "on"
    # Turned off (or the annotation removed, upstream's "off"): no prefixes sent.
    for enable in ("off", None):
        off = plan(_nat(None, None, enable=enable), current)
        assert off.mappings == ({"SubnetId": "subnet-a"}, {"SubnetId": "subnet-c"})
        assert off.enable == "off"
    turned_on = plan(_nat(None, None), _nat_zones(None, None, enable="off"))
    assert turned_on.mappings == ({"SubnetId": "subnet-a"}, {"SubnetId": "subnet-c"})
    assert turned_on.enable == "on"


def test_an_address_asked_for_a_subnet_aws_already_addressed_is_reported() -> None:
    lb = _with([SubnetMapping(subnet_id="subnet-a", ipv6_address="2600:1f13::9",
                              private_ipv4_address="10.0.0.9")], ip_address_type="dualstack")
    got = plan(lb, _current({"SubnetId": "subnet-a"}, ip_type="dualstack"))
    assert got.mappings is None
    assert got.kept == ("subnet-a keeps the address AWS gave it (10.0.0.9 asked)",
                        "subnet-a keeps no IPv6 address (2600:1f13::9 asked)")
