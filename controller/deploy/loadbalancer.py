"""Load balancer convergence: create (never twice), subnets and their static addresses (see
`subnetmappings.py`), security groups, IP address type, attributes, tags, the IPv4 IPAM pool;
the customer-owned IPv4 pool at creation only.

IPAM pools as upstream: one the model no longer has is removed first (before an IP address type
change), a new or changed one set last. A customer-owned pool that differs from the load
balancer's cannot be changed in place: upstream only logs it; here the deploy leaves it and
says so (`DeployRun.warn`, a Warning Event on the owners), since the load balancer must be
recreated (delete and recreate the Ingress) to change it."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from controller.deploy import subnetmappings
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError
from controller.deploy.tags import as_api_tags, converge_tags
from controller.model import (
    LOAD_BALANCER,
    LoadBalancer,
    SubnetDiscovery,
    SubnetMapping,
    SubnetSelector,
)


def subnets_of(desc: dict[str, Any]) -> set[str]:
    return {az["SubnetId"] for az in desc.get("AvailabilityZones", []) if az.get("SubnetId")}


async def converge_load_balancer(run: DeployRun, resource_id: str, lb: LoadBalancer,
                                 current: dict[str, Any] | None,
                                 current_tags: dict[str, str], *,
                                 dropped_groups: Set[str] = frozenset()) -> dict[str, Any]:
    """`dropped_groups`: security groups of ours this deploy deletes once the load balancer
    no longer carries them."""
    if isinstance(lb.subnets, SubnetDiscovery | SubnetSelector):
        raise DeployError(f"load balancer {lb.name}: subnets were not resolved")
    desired_tags = run.desired_tags(resource_id, lb.tags)
    if current is None:
        current, current_tags = await _create(run, resource_id, lb, desired_tags)
    arn: str = current["LoadBalancerArn"]
    for key, want in (("Type", lb.type), ("Scheme", lb.scheme)):
        if current.get(key) != want:
            raise DeployError(f"load balancer {lb.name}: {key} is {current.get(key)} in AWS but "
                              f"{want} in the model, and cannot be changed in place")
    have_pool = (current.get("IpamPools") or {}).get("Ipv4IpamPoolId")
    if have_pool and lb.ipv4_ipam_pool is None:
        await run.calls.call("ModifyIpPools", LoadBalancerArn=arn, RemoveIpamPools=["ipv4"])
    if (current.get("CustomerOwnedIpv4Pool") or None) != lb.customer_owned_ipv4_pool:
        run.warn("CustomerOwnedIPv4PoolImmutable",
                 f"load balancer {lb.name} has customer-owned IPv4 pool "
                 f"{current.get('CustomerOwnedIpv4Pool') or 'none'} and the model asks for "
                 f"{lb.customer_owned_ipv4_pool or 'none'}; AWS cannot change it in place, so "
                 "it is left as it is: delete and recreate the Ingress to change it")
    have_sgs = set(current.get("SecurityGroups") or [])
    wanted_sgs = [str(g) for g in lb.security_groups]  # IDs by now (resolved by the deployer)
    private_link = lb.inbound_rules_on_private_link
    have_private_link = current.get("EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic")
    if not wanted_sgs:
        # A model naming no security group does not say the load balancer should have none:
        # an adopted one keeps the groups it carries (someone else's among them), since an
        # empty list would drop them. Groups of ours about to be deleted cannot stay, though,
        # and AWS cannot take every group off a network load balancer.
        if have_sgs & dropped_groups:
            raise DeployError(
                f"load balancer {lb.name}: AWS cannot remove every security group from a "
                "network load balancer created with them; keep at least one, or let the "
                "Service's load balancer be replaced")
    elif have_sgs != set(wanted_sgs) or (
            private_link is not None and have_private_link != private_link):
        if lb.type == "network" and not have_sgs:
            raise DeployError(
                f"load balancer {lb.name}: AWS cannot add security groups to a network load "
                "balancer created without them; keep it without (annotation "
                "service.beta.kubernetes.io/aws-load-balancer-disable-nlb-sg: \"true\") or "
                "let the Service's load balancer be replaced")
        params: dict[str, Any] = {"LoadBalancerArn": arn, "SecurityGroups": wanted_sgs}
        if private_link is not None:
            params["EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic"] = private_link
        await run.calls.call("SetSecurityGroups", **params)
    await _converge_subnets(run, lb, arn, current)
    if current.get("IpAddressType") != lb.ip_address_type:
        await run.calls.call("SetIpAddressType", LoadBalancerArn=arn,
                             IpAddressType=lb.ip_address_type)
    await converge_tags(run.calls, run.tracking, arn, current_tags, desired_tags)
    if lb.attributes:
        resp = await run.calls.call("DescribeLoadBalancerAttributes", LoadBalancerArn=arn)
        have = {a["Key"]: a.get("Value", "") for a in resp.get("Attributes", [])}
        changed = {k: v for k, v in lb.attributes.items() if have.get(k) != v}
        if changed:
            await run.calls.call(
                "ModifyLoadBalancerAttributes", LoadBalancerArn=arn,
                Attributes=[{"Key": k, "Value": v} for k, v in sorted(changed.items())])
    if lb.ipv4_ipam_pool is not None and have_pool != lb.ipv4_ipam_pool:
        await run.calls.call("ModifyIpPools", LoadBalancerArn=arn,
                             IpamPools={"Ipv4IpamPoolId": lb.ipv4_ipam_pool})
    run.set_status(LOAD_BALANCER, resource_id, "loadBalancerARN", arn)
    run.set_status(LOAD_BALANCER, resource_id, "dnsName", current.get("DNSName", ""))
    run.set_status(LOAD_BALANCER, resource_id, "canonicalHostedZoneID",
                   current.get("CanonicalHostedZoneId", ""))
    return current


async def _converge_subnets(run: DeployRun, lb: LoadBalancer, arn: str,
                            current: dict[str, Any]) -> None:
    assert not isinstance(lb.subnets, SubnetDiscovery | SubnetSelector)
    if lb.type != "network":
        if subnets_of(current) != set(lb.subnets):
            await run.calls.call("SetSubnets", LoadBalancerArn=arn, Subnets=list(lb.subnets))
        return
    if lb.subnet_mappings is None:
        lb = lb.model_copy(update={"subnet_mappings": tuple(
            SubnetMapping(subnet_id=s) for s in lb.subnets)})
    plan = subnetmappings.plan(lb, current)
    if plan.mappings is not None:
        params: dict[str, Any] = {"LoadBalancerArn": arn}
        if all(set(m) == {"SubnetId"} for m in plan.mappings):
            params["Subnets"] = [m["SubnetId"] for m in plan.mappings]
        else:
            params["SubnetMappings"] = list(plan.mappings)
        if plan.enable is not None:
            params["EnablePrefixForIpv6SourceNat"] = plan.enable
        await run.calls.call("SetSubnets", **params)
    if plan.kept:
        # An Ingress's network load balancer is its frontend NLB, which goes with the key.
        again = ("turn the Ingress group's frontend NLB off (enable-frontend-nlb) and on "
                 "again" if run.tracking.kind == "ingress" else
                 "delete the Service and create it again")
        run.warn("StaticAddressesKept", (
            f"load balancer {lb.name}: subnet {'; subnet '.join(plan.kept)}: AWS cannot "
            "change the addresses of a subnet a network load balancer already uses, and the "
            f"load balancer is not replaced for it (as upstream); to change them, {again}"))


async def _create(run: DeployRun, _resource_id: str, lb: LoadBalancer,
                  tags: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    # The caller looked the name up in this run and found nothing: never create blindly,
    # because moto (unlike AWS) creates a second load balancer under the same name.
    assert not isinstance(lb.subnets, SubnetDiscovery | SubnetSelector)
    params: dict[str, Any] = {
        "Name": lb.name, "Type": lb.type, "Scheme": lb.scheme,
        "IpAddressType": lb.ip_address_type, "Tags": as_api_tags(tags),
    }
    if lb.subnet_mappings is not None:
        params["SubnetMappings"] = [subnetmappings.api_mapping(m) for m in lb.subnet_mappings]
    else:
        params["Subnets"] = list(lb.subnets)
    if lb.enable_prefix_for_ipv6_source_nat is not None:
        params["EnablePrefixForIpv6SourceNat"] = lb.enable_prefix_for_ipv6_source_nat
    if lb.security_groups:
        params["SecurityGroups"] = [str(g) for g in lb.security_groups]
    if lb.ipv4_ipam_pool is not None:
        params["IpamPools"] = {"Ipv4IpamPoolId": lb.ipv4_ipam_pool}
    if lb.customer_owned_ipv4_pool is not None:
        params["CustomerOwnedIpv4Pool"] = lb.customer_owned_ipv4_pool
    resp = await run.calls.call("CreateLoadBalancer", **params)
    created: dict[str, Any] = resp["LoadBalancers"][0]
    return created, tags
