"""Network load balancer subnet mappings as AWS's ELBv2 API reference describes them, where
moto 5.2 keeps only each mapping's `SubnetId`. Applied with `moto_fidelity.apply`.

- `CreateLoadBalancer` and `SetSubnets` take `SubnetMappings` with `AllocationId` (an Elastic
  IP of the account, internet-facing network load balancers only; `AllocationIdNotFound`
  otherwise), `PrivateIPv4Address` (internal ones only, within the subnet's IPv4 CIDR),
  `IPv6Address` (dualstack ones only, within an IPv6 CIDR associated with the subnet) and
  `SourceNatIpv6Prefix` (`auto_assigned` or a /80 within the subnet's IPv6 CIDR, only with
  `EnablePrefixForIpv6SourceNat` on); `EnablePrefixForIpv6SourceNat` "on" needs a dualstack
  network load balancer whose subnets all have an IPv6 CIDR. A value breaking these is
  `InvalidConfigurationRequest`, and nothing is created or changed.
- `SetSubnets` on a network load balancer: "you must include all subnets that were enabled
  previously, with their existing configurations, plus any additional subnets": a subnet kept
  with another Elastic IP or private IPv4 address, or another IPv6 address than the one it has,
  is `InvalidConfigurationRequest`; a subnet without an IPv6 address may get one. While the load
  balancer has a UDP listener its source NAT prefixes cannot change nor the setting be turned
  off (the user guide's "IPv6 source NAT" rules).
- `DescribeLoadBalancers`, `CreateLoadBalancer` and `SetSubnets` answer, per availability zone,
  `LoadBalancerAddresses` (one entry with `IpAddress` and `AllocationId` for an Elastic IP,
  `PrivateIPv4Address`, `IPv6Address`) and `SourceNatIpv6Prefixes` (an `auto_assigned` prefix
  as the /80 picked from the subnet's CIDR), and `EnablePrefixForIpv6SourceNat` for a network
  load balancer ("off" unless turned on). Addresses AWS picks itself are not listed.
- EC2 `DescribeSubnets`: an associated IPv6 CIDR's `Ipv6CidrBlockState.State` is
  `associated`; moto 5.2 answers the Python text of a dict (`{'State': 'associated'}`), so a
  reader checking the state, as upstream's does, would see no IPv6 CIDR at all.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

_MAPPINGS = "aiolbc_subnet_mappings"  # subnet id -> the mapping as accepted
_ENABLE = "EnablePrefixForIpv6SourceNat"
_ADDRESS_KEYS = ("AllocationId", "PrivateIPv4Address", "IPv6Address")
_AUTO = "auto_assigned"
_applied = False


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _ipv6_cidrs(subnet: Any) -> list[ipaddress.IPv6Network]:
    found: list[ipaddress.IPv6Network] = []
    for association in subnet.ipv6_cidr_block_associations.values():
        if (association.get("ipv6CidrBlockState") or {}).get("State") == "associated":
            found.append(ipaddress.IPv6Network(association["ipv6CidrBlock"], strict=False))
    return found


def _within(address: str, networks: list[Any]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == n.version and ip in n for n in networks)


def _has_udp_listener(balancer: Any) -> bool:
    return any(str(listener.protocol) in ("UDP", "TCP_UDP")
               for listener in balancer.listeners.values())


def _checked(ec2: Any, *, lb_type: str, scheme: str, ip_type: str, enable: str | None,
             mappings: list[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """The mappings as stored, keyed by subnet; raises `_Refused` as AWS would."""
    network = lb_type == "network"
    if enable not in (None, "on", "off"):
        raise _Refused("ValidationError", f"{_ENABLE} must be on or off")
    if enable == "on" and (not network or ip_type != "dualstack"):
        raise _Refused("InvalidConfigurationRequest", f"{_ENABLE} can be on only for a "
                       "network load balancer with the dualstack IP address type")
    stored: dict[str, dict[str, str]] = {}
    for mapping in mappings:
        subnet_id = str(mapping.get("SubnetId") or "")
        subnet = ec2.get_subnet(subnet_id)
        entry = {"SubnetId": subnet_id}
        allocation = mapping.get("AllocationId")
        if allocation:
            if not network or scheme != "internet-facing":
                raise _Refused("InvalidConfigurationRequest", "Elastic IP addresses can be "
                               "set only for internet-facing network load balancers")
            found = [a for a in ec2.addresses if a.allocation_id == allocation]
            if not found:
                raise _Refused("AllocationIdNotFound",
                               f"The allocation ID '{allocation}' does not exist")
            entry["AllocationId"] = str(allocation)
            entry["IpAddress"] = str(found[0].public_ip)
        private = mapping.get("PrivateIPv4Address")
        if private:
            if not network or scheme != "internal":
                raise _Refused("InvalidConfigurationRequest", "Private IPv4 addresses can be "
                               "set only for internal network load balancers")
            if not _within(private, [ipaddress.ip_network(subnet.cidr_block, strict=False)]):
                raise _Refused("InvalidConfigurationRequest", f"The private IPv4 address "
                               f"'{private}' is not within the CIDR of subnet '{subnet_id}'")
            entry["PrivateIPv4Address"] = str(ipaddress.ip_address(private))
        ipv6 = mapping.get("IPv6Address")
        if ipv6:
            if not network:
                raise _Refused("InvalidConfigurationRequest", "IPv6 addresses can be set only "
                               "for network load balancers")
            if not _within(ipv6, list(_ipv6_cidrs(subnet))):
                raise _Refused("InvalidConfigurationRequest", f"The IPv6 address '{ipv6}' is "
                               f"not within an IPv6 CIDR of subnet '{subnet_id}'")
            entry["IPv6Address"] = str(ipaddress.ip_address(ipv6))
        prefix = mapping.get("SourceNatIpv6Prefix")
        if prefix:
            entry["SourceNatIpv6Prefix"] = _source_nat_prefix(str(prefix), subnet, enable)
        if enable == "on" and not _ipv6_cidrs(subnet):
            raise _Refused("InvalidConfigurationRequest", f"Subnet '{subnet_id}' has no IPv6 "
                           f"CIDR, which {_ENABLE} needs")
        if enable == "on":
            # Without a prefix, AWS picks one from the subnet's CIDR.
            entry.setdefault("SourceNatIpv6Prefix", _AUTO)
        stored[subnet_id] = entry
    return stored


def _source_nat_prefix(prefix: str, subnet: Any, enable: str | None) -> str:
    if enable != "on":
        raise _Refused("InvalidConfigurationRequest", f"SourceNatIpv6Prefix needs {_ENABLE} on")
    cidrs = _ipv6_cidrs(subnet)
    if prefix == _AUTO:
        return prefix  # picked by `_picked`, unless the subnet keeps the one it has
    try:
        network = ipaddress.IPv6Network(prefix, strict=True)
    except ValueError:
        raise _Refused("ValidationError", f"Invalid SourceNatIpv6Prefix '{prefix}'") from None
    if network.prefixlen != 80 or not any(network.subnet_of(c) for c in cidrs):
        raise _Refused("InvalidConfigurationRequest", f"SourceNatIpv6Prefix '{prefix}' must be "
                       f"a /80 within an IPv6 CIDR of subnet '{subnet.id}'")
    return str(network)


def _picked(ec2: Any, stored: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """`auto_assigned` prefixes given one: AWS picks at random; the second /80 of the subnet's
    first IPv6 CIDR is as good and repeatable."""
    for subnet_id, entry in stored.items():
        if entry.get("SourceNatIpv6Prefix") == _AUTO:
            prefixes = _ipv6_cidrs(ec2.get_subnet(subnet_id))[0].subnets(new_prefix=80)
            next(prefixes)
            entry["SourceNatIpv6Prefix"] = str(next(prefixes))
    return stored


def _zones(balancer: Any) -> list[Any]:
    from moto.elbv2.models import AvailabilityZone

    stored: dict[str, dict[str, str]] = getattr(balancer, _MAPPINGS, {})
    zones = []
    for subnet in balancer.subnets:
        zone = AvailabilityZone(subnet)
        entry = stored.get(subnet.id, {})
        address = {k: entry[k] for k in ("IpAddress", *_ADDRESS_KEYS) if k in entry}
        if address:
            zone.load_balancer_addresses = [address]  # type: ignore[attr-defined]
        if "SourceNatIpv6Prefix" in entry:
            zone.source_nat_ipv6_prefixes = [  # type: ignore[attr-defined]
                entry["SourceNatIpv6Prefix"]]
        zones.append(zone)
    return zones


def _check_kept(balancer: Any, wanted: dict[str, dict[str, str]], enable: str | None) -> None:
    """SetSubnets on a network load balancer: kept subnets keep their configuration."""
    before: dict[str, dict[str, str]] = getattr(balancer, _MAPPINGS, {})
    udp = _has_udp_listener(balancer)
    for subnet_id, old in before.items():
        new = wanted.get(subnet_id)
        if new is None:
            continue
        for key in _ADDRESS_KEYS:
            if key in old and old[key] != new.get(key):
                raise _Refused("InvalidConfigurationRequest", f"Subnet '{subnet_id}' must be "
                               f"given with its existing configuration ({key} {old[key]})")
        if udp and "SourceNatIpv6Prefix" in old and new.get("SourceNatIpv6Prefix") not in (
                old["SourceNatIpv6Prefix"], _AUTO):
            raise _Refused("InvalidConfigurationRequest", "The source NAT IPv6 prefixes of a "
                           "load balancer with UDP listeners cannot be changed")
        if "SourceNatIpv6Prefix" in old and new.get("SourceNatIpv6Prefix") == _AUTO:
            new["SourceNatIpv6Prefix"] = old["SourceNatIpv6Prefix"]
    current = getattr(balancer, "enable_prefix_for_ipv6_source_nat", "off")
    if udp and current == "on" and enable == "off":
        raise _Refused("InvalidConfigurationRequest", f"{_ENABLE} cannot be turned off while "
                       "the load balancer has UDP listeners")


def _subnet_ipv6_state() -> None:
    from moto.ec2.models.subnets import Subnet

    def association_set(self: Any) -> list[dict[str, Any]]:
        return [{"ipv6CidrBlock": a["ipv6CidrBlock"], "associationId": a["associationId"],
                 "ipv6CidrBlockState": {"state": a["ipv6CidrBlockState"]["State"]}}
                for a in self.ipv6_cidr_block_associations.values()
                if a["ipv6CidrBlockState"]["State"] == "associated"]

    Subnet.ipv6_cidr_block_association_set = property(  # type: ignore[method-assign,assignment]
        association_set)


def apply() -> None:
    """Patch moto's ELBv2 load balancers (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.core.responses import ActionResult
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import FakeLoadBalancer
    from moto.elbv2.responses import ELBV2Response

    FakeLoadBalancer.availability_zones = property(_zones)  # type: ignore[assignment,method-assign]
    _subnet_ipv6_state()
    create_original = ELBV2Response.create_load_balancer
    set_original = ELBV2Response.set_subnets

    def create_load_balancer(self: Any) -> Any:
        params = self._get_params()
        lb_type = str(params.get("Type") or "application")
        enable = params.get(_ENABLE)
        try:
            stored = _checked(
                self.elbv2_backend.ec2_backend, lb_type=lb_type,
                scheme=str(params.get("Scheme") or "internet-facing"),
                ip_type=str(params.get("IpAddressType") or "ipv4"), enable=enable,
                mappings=[*(params.get("SubnetMappings") or []),
                          *({"SubnetId": s} for s in params.get("Subnets") or [])])
        except _Refused as refused:
            raise ELBClientError(refused.code, refused.message) from None
        result = create_original(self)
        # moto takes a second load balancer of the same name: the newest is this one.
        balancer = [b for b in self.elbv2_backend.load_balancers.values()
                    if b.name == params.get("Name")][-1]
        setattr(balancer, _MAPPINGS, _picked(self.elbv2_backend.ec2_backend, stored))
        if lb_type == "network":
            balancer.enable_prefix_for_ipv6_source_nat = enable or "off"
        return result

    def set_subnets(self: Any) -> Any:
        arn = self._get_param("LoadBalancerArn")
        balancer = self.elbv2_backend.load_balancers.get(arn)
        if balancer is None or balancer.type != "network":
            return set_original(self)
        mappings = list(self._get_param("SubnetMappings", []))
        mappings += [{"SubnetId": s} for s in self._get_param("Subnets", [])]
        enable = self._get_param(_ENABLE)
        try:
            wanted = _checked(self.elbv2_backend.ec2_backend, lb_type="network",
                              scheme=balancer.scheme, ip_type=balancer.ip_address_type,
                              enable=enable or getattr(
                                  balancer, "enable_prefix_for_ipv6_source_nat", "off"),
                              mappings=mappings)
            _check_kept(balancer, wanted, enable)
        except _Refused as refused:
            raise ELBClientError(refused.code, refused.message) from None
        set_original(self)
        setattr(balancer, _MAPPINGS, _picked(self.elbv2_backend.ec2_backend, wanted))
        if enable:
            balancer.enable_prefix_for_ipv6_source_nat = enable
        return ActionResult({
            "AvailabilityZones": balancer.availability_zones,
            "IpAddressType": balancer.ip_address_type,
            _ENABLE: getattr(balancer, "enable_prefix_for_ipv6_source_nat", "off")})

    ELBV2Response.create_load_balancer = create_load_balancer  # type: ignore[method-assign]
    ELBV2Response.set_subnets = set_subnets  # type: ignore[method-assign]
    _applied = True


__all__ = ["apply"]
