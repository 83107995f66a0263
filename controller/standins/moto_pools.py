"""A load balancer's address pools, which moto 5.2 drops, filled in from AWS's ELBv2 API
reference:

- `CreateLoadBalancer` with `IpamPools` (`Ipv4IpamPoolId`, `ipam-pool-` and letters or digits)
  or `CustomerOwnedIpv4Pool` (`ipv4pool-coip-` and letters or digits): application load
  balancers only ("[Application Load Balancers]"), else `ValidationError`; a malformed ID is a
  `ValidationError` too. Both are kept and answered by `DescribeLoadBalancers` (and the
  creation's answer).
- `ModifyIpPools` (application load balancers): `IpamPools` sets or replaces the IPv4 IPAM
  pool, `RemoveIpamPools: [ipv4]` removes it; an unknown load balancer is
  `LoadBalancerNotFound`; answers the pools the load balancer then has. There is no operation
  to change a customer-owned pool.
Not modelled: whether the IPAM pool exists (moto has no IPAM) and whether the subnets are on an
Outpost (moto has no Outposts)."""

from __future__ import annotations

import re
from typing import Any

_IPAM = re.compile(r"ipam-pool-[a-zA-Z0-9]+")
_COIP = re.compile(r"ipv4pool-coip-[a-zA-Z0-9]+")
_applied = False


def apply() -> None:
    """Patch moto's ELBv2 responses (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.core.responses import ActionResult
    from moto.elbv2.exceptions import LoadBalancerNotFoundError, ValidationError
    from moto.elbv2.responses import ELBV2Response

    def pool_id(pools: Any) -> str | None:
        if not pools:
            return None
        value = pools.get("Ipv4IpamPoolId") if isinstance(pools, dict) else None
        if not isinstance(value, str) or _IPAM.fullmatch(value) is None:
            raise ValidationError(f"Ipv4IpamPoolId '{value}' is not a valid IPAM pool ID")
        return value

    create = ELBV2Response.create_load_balancer

    def create_load_balancer(self: Any) -> Any:
        kind = self._get_param("Type") or "application"
        ipam = pool_id(self._get_param("IpamPools"))
        coip = self._get_param("CustomerOwnedIpv4Pool")
        if coip is not None and _COIP.fullmatch(str(coip)) is None:
            raise ValidationError(f"CustomerOwnedIpv4Pool '{coip}' is not a valid "
                                  "customer-owned IPv4 pool ID")
        if kind != "application" and (ipam or coip):
            raise ValidationError("IPAM pools and customer-owned IPv4 pools are supported by "
                                  "Application Load Balancers only")
        result = create(self)
        name = self._get_param("Name")
        for balancer in self.elbv2_backend.load_balancers.values():
            if balancer.name == name:
                if ipam:
                    balancer.ipam_pools = {"Ipv4IpamPoolId": ipam}
                if coip:
                    balancer.customer_owned_ipv4_pool = coip
        return result

    def modify_ip_pools(self: Any) -> Any:
        balancer = self.elbv2_backend.load_balancers.get(self._get_param("LoadBalancerArn"))
        if balancer is None:
            raise LoadBalancerNotFoundError()
        if balancer.type != "application":
            raise ValidationError("IPAM pools are supported by Application Load Balancers only")
        params = self._get_params()
        ipam = pool_id(params.get("IpamPools"))
        remove = params.get("RemoveIpamPools") or []
        if ipam is None and not remove:
            raise ValidationError("You must specify either IpamPools or RemoveIpamPools")
        if any(item != "ipv4" for item in remove):
            raise ValidationError(f"RemoveIpamPools {remove} must be [ipv4]")
        if remove:
            balancer.ipam_pools = None
        if ipam:
            balancer.ipam_pools = {"Ipv4IpamPoolId": ipam}
        return ActionResult({"IpamPools": getattr(balancer, "ipam_pools", None)})

    ELBV2Response.create_load_balancer = create_load_balancer  # type: ignore[method-assign]
    ELBV2Response.modify_ip_pools = modify_ip_pools  # type: ignore[attr-defined]
    _applied = True


__all__ = ["apply"]
