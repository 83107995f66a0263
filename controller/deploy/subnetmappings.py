"""A network load balancer's subnet mappings: its static addresses and IPv6 source NAT prefixes
paired with its resolved subnets (the resolve stage), and what the deployer can change of them
in place.

Pairing follows upstream (pkg/service/model_build_load_balancer.go,
buildLoadBalancerSubnetMappings): one value per subnet; EIP allocations and source NAT prefixes
by position, with the subnets in the annotation's order when listed, else in the order of their
IDs (upstream's subnet resolver); private IPv4 and IPv6 addresses to the
subnet whose CIDR holds exactly one of them; a source NAT prefix is `auto_assigned` or a /80
within the subnet's IPv6 CIDR.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.deploy.errors import ResolveError
from controller.model import SOURCE_NAT_AUTO_ASSIGNED, LoadBalancer, SubnetMapping

SOURCE_NAT_PREFIX_LENGTH = 80


@dataclass(frozen=True)
class SubnetCidrs:
    ipv4: tuple[str, ...]
    ipv6: tuple[str, ...]  # associated IPv6 CIDR blocks only

    @classmethod
    def of(cls, subnet: Mapping[str, Any]) -> SubnetCidrs:
        ipv4 = (str(subnet["CidrBlock"]),) if subnet.get("CidrBlock") else ()
        ipv6 = tuple(str(a["Ipv6CidrBlock"]) for a in subnet.get("Ipv6CidrBlockAssociationSet")
                     or [] if (a.get("Ipv6CidrBlockState") or {}).get("State") == "associated"
                     and a.get("Ipv6CidrBlock"))
        return cls(ipv4, ipv6)


def wants_mappings(lb: LoadBalancer) -> bool:
    return any(v is not None for v in (lb.eip_allocations, lb.private_ipv4_addresses,
                                       lb.ipv6_addresses, lb.source_nat_ipv6_prefixes))


def _within(address: str, cidrs: Sequence[str]) -> bool:
    ip = ipaddress.ip_address(address)
    return any(ip.version == ipaddress.ip_network(c, strict=False).version
               and ip in ipaddress.ip_network(c, strict=False) for c in cidrs)


def pair(lb: LoadBalancer, subnets: Sequence[str],
         cidrs: Mapping[str, SubnetCidrs]) -> tuple[SubnetMapping, ...]:
    """The mappings of `lb` over `subnets` (resolved IDs, in pairing order); raises
    `ResolveError` with upstream's rule broken, in one line."""
    where = f"load balancer {lb.name}"
    for values, what in ((lb.eip_allocations, "EIP allocations"),
                         (lb.private_ipv4_addresses, "private IPv4 addresses"),
                         (lb.ipv6_addresses, "IPv6 addresses"),
                         (lb.source_nat_ipv6_prefixes, "source NAT IPv6 prefixes")):
        if values is not None and len(values) != len(subnets):
            raise ResolveError(f"{where}: count of {what} ({len(values)}) and subnets "
                               f"({len(subnets)}: {', '.join(subnets)}) must match")
    mappings: list[SubnetMapping] = []
    for index, subnet_id in enumerate(subnets):
        blocks = cidrs[subnet_id]
        fields: dict[str, str] = {}
        if lb.eip_allocations is not None:
            fields["allocation_id"] = lb.eip_allocations[index]
        for name, values, own, family, what in (
                ("private_ipv4_address", lb.private_ipv4_addresses, blocks.ipv4, "IPv4",
                 "private IPv4 addresses"),
                ("ipv6_address", lb.ipv6_addresses, blocks.ipv6, "IPv6", "IPv6 addresses")):
            if values is None:
                continue
            inside = [a for a in values if _within(a, own)]
            if len(inside) != 1:
                # Upstream's words: "expect one private IPv4 address configured for subnet".
                raise ResolveError(
                    f"{where}: subnet {subnet_id} ({', '.join(own) or f'no {family} CIDR'}) "
                    f"needs exactly one of the {what}, got {len(inside)}"
                    + (f" ({', '.join(inside)})" if inside else ""))
            fields[name] = inside[0]
        if lb.source_nat_ipv6_prefixes is not None:
            fields["source_nat_ipv6_prefix"] = _source_nat_prefix(
                where, lb.source_nat_ipv6_prefixes[index], subnet_id, blocks)
        mappings.append(SubnetMapping(subnet_id=subnet_id, **fields))
    return tuple(mappings)


def _source_nat_prefix(where: str, value: str, subnet_id: str, blocks: SubnetCidrs) -> str:
    if value == SOURCE_NAT_AUTO_ASSIGNED:
        return value
    network = ipaddress.ip_network(value, strict=False)
    if not _within(str(network.network_address), blocks.ipv6):
        raise ResolveError(f"{where}: source NAT IPv6 prefix {value} is not within subnet "
                           f"{subnet_id}'s IPv6 CIDR ({', '.join(blocks.ipv6) or 'none'})")
    return str(network)


def subnets_without_ipv6(subnets: Sequence[str], cidrs: Mapping[str, SubnetCidrs]) -> list[str]:
    return [s for s in subnets if not cidrs[s].ipv6]


def api_mapping(mapping: SubnetMapping) -> dict[str, str]:
    """A `SubnetMapping` as CreateLoadBalancer and SetSubnets take it."""
    out = {"SubnetId": mapping.subnet_id}
    for key, value in (("AllocationId", mapping.allocation_id),
                       ("PrivateIPv4Address", mapping.private_ipv4_address),
                       ("IPv6Address", mapping.ipv6_address),
                       ("SourceNatIpv6Prefix", mapping.source_nat_ipv6_prefix)):
        if value is not None:
            out[key] = value
    return out


def _address(zone: Mapping[str, Any]) -> dict[str, str]:
    """A zone's first LoadBalancerAddresses entry (one per subnet on an NLB), as upstream
    reads it; IPv6 text normalised."""
    addresses = zone.get("LoadBalancerAddresses") or [{}]
    found = {k: str(v) for k, v in (addresses[0] or {}).items() if v}
    if "IPv6Address" in found:
        found["IPv6Address"] = str(ipaddress.ip_address(found["IPv6Address"]))
    return found


@dataclass(frozen=True)
class MappingPlan:
    """What SetSubnets should be sent (None: no call) with which `EnablePrefixForIpv6SourceNat`
    (None: not sent), and the asked-for addresses that stay as they are because AWS cannot
    change them in place (one line each, for a Warning)."""

    mappings: tuple[dict[str, str], ...] | None
    enable: str | None
    kept: tuple[str, ...]


def _prefix(zone: Mapping[str, Any] | None) -> str | None:
    prefixes = (zone or {}).get("SourceNatIpv6Prefixes") or []
    return str(prefixes[0]) if prefixes else None


def plan(lb: LoadBalancer, current: Mapping[str, Any]) -> MappingPlan:
    """Upstream calls SetSubnets only when the subnet set changes, an NLB becomes dualstack
    with IPv6 addresses for the first time, or its source NAT setting or prefixes change, and
    never replaces the load balancer for its addresses. AWS takes SetSubnets for a network load
    balancer only with every subnet it keeps in its existing configuration, so those keep their
    addresses (and the difference is reported) while new subnets get what is asked. A prefix
    `auto_assigned`, or none asked with source NAT on, matches whatever prefix AWS picked
    (upstream compares the text and calls SetSubnets on every reconcile then)."""
    assert lb.subnet_mappings is not None
    zones = {str(z.get("SubnetId")): z for z in current.get("AvailabilityZones") or []
             if z.get("SubnetId")}
    have = {subnet: _address(zone) for subnet, zone in zones.items()}
    want_nat = lb.enable_prefix_for_ipv6_source_nat or "off"
    have_nat = str(current.get("EnablePrefixForIpv6SourceNat") or "off")
    sent: list[dict[str, str]] = []
    kept: list[str] = []
    no_ipv6: list[str] = []
    first_ipv6 = False
    prefix_changed = False
    for mapping in lb.subnet_mappings:
        wanted = api_mapping(mapping)
        existing = have.get(mapping.subnet_id)
        if existing is None:
            sent.append(wanted)
            continue
        out = dict(wanted)
        for key in ("AllocationId", "PrivateIPv4Address", "IPv6Address"):
            ask, got = wanted.get(key), existing.get(key)
            if got is not None:
                out[key] = got
                if ask is not None and ask != got:
                    kept.append(f"{mapping.subnet_id} keeps {got} ({ask} asked)")
                elif ask is None and key == "AllocationId":
                    kept.append(f"{mapping.subnet_id} keeps Elastic IP {got} (none asked)")
            elif ask is not None and key == "IPv6Address":
                # Set with the move to dualstack (upstream's rule), else kept as it is.
                first_ipv6 = True
                no_ipv6.append(f"{mapping.subnet_id} keeps no IPv6 address ({ask} asked)")
            elif ask is not None:
                out.pop(key)
                kept.append(f"{mapping.subnet_id} keeps the address AWS gave it ({ask} asked)")
        prefix, got_prefix = wanted.get("SourceNatIpv6Prefix"), _prefix(zones[mapping.subnet_id])
        if want_nat == "on":
            if prefix in (None, SOURCE_NAT_AUTO_ASSIGNED) and got_prefix is not None:
                out["SourceNatIpv6Prefix"] = got_prefix
            elif prefix is not None and prefix != got_prefix:
                prefix_changed = True
        else:
            out.pop("SourceNatIpv6Prefix", None)
        sent.append(out)
    changed = set(zones) != {m.subnet_id for m in lb.subnet_mappings}
    becomes_dualstack = (lb.ip_address_type == "dualstack"
                         and current.get("IpAddressType") != lb.ip_address_type)
    nat_changed = want_nat != have_nat
    call = changed or (first_ipv6 and becomes_dualstack) or nat_changed or prefix_changed
    if not call:
        kept += no_ipv6
    enable = want_nat if nat_changed or lb.enable_prefix_for_ipv6_source_nat else None
    return MappingPlan(tuple(sent) if call else None, enable if call else None, tuple(kept))


__all__ = ["SOURCE_NAT_PREFIX_LENGTH", "MappingPlan", "SubnetCidrs", "api_mapping",
           "pair", "plan", "subnets_without_ipv6", "wants_mappings"]
