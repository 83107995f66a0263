"""Pod network interfaces as the Amazon VPC CNI leaves them, for what resolves a target's ENI
and its security groups (upstream: `DescribeNetworkInterfaces` filtered by `vpc-id` and
`addresses.private-ip-address`, then the one group tagged `kubernetes.io/cluster/<name>`).

The CNI gives pods secondary addresses on the node's ENIs; moto's address filters match an
ENI's primary address only, so each pod here gets an ENI of its own whose primary address is
the pod's IP: the same look-up finds the same groups.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from controller.standins.moto_server import AwsSeed, sync_client


@dataclass(frozen=True)
class PodEni:
    eni_id: str
    ip: str
    subnet_id: str
    security_group_ids: tuple[str, ...]


def create_pod_eni(endpoint_url: str, seed: AwsSeed, ip: str, *,
                   subnet_id: str | None = None,
                   security_group_ids: Sequence[str] | None = None,
                   instance_id: str | None = None) -> PodEni:
    """An ENI with primary private address `ip` in a subnet of the seeded VPC (by default the
    one whose CIDR holds `ip`), in `security_group_ids` (by default the seed's cluster-tagged
    node group), attached to `instance_id` at its next free device index if given."""
    groups = tuple(security_group_ids if security_group_ids is not None
                   else (seed.node_security_group_id,))
    ec2 = sync_client("ec2", endpoint_url, region=seed.region)
    try:
        subnet = subnet_id or _subnet_holding(ec2, seed, ip)
        # The description and tags the CNI gives the ENIs it creates.
        tags = [{"Key": "cluster.k8s.amazonaws.com/name", "Value": seed.cluster_name}]
        if instance_id is not None:
            tags.append({"Key": "node.k8s.amazonaws.com/instance_id", "Value": instance_id})
        eni = ec2.create_network_interface(
            SubnetId=subnet, PrivateIpAddress=ip, Groups=list(groups),
            Description=f"aws-K8S-{instance_id}" if instance_id else "aws-K8S-pod",
            TagSpecifications=[{"ResourceType": "network-interface", "Tags": tags}],
        )["NetworkInterface"]
        if instance_id is not None:
            ec2.attach_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"],
                                         InstanceId=instance_id,
                                         DeviceIndex=_next_device_index(ec2, instance_id))
    finally:
        ec2.close()
    return PodEni(eni_id=str(eni["NetworkInterfaceId"]), ip=ip, subnet_id=subnet,
                  security_group_ids=groups)


def create_pod_enis(endpoint_url: str, seed: AwsSeed, ips: Sequence[str]) -> list[PodEni]:
    """What the VPC CNI leaves behind when pods start: an ENI in the node group for each of
    `ips` that has none in the VPC yet (a pod's restart keeps its address), on one client."""
    ec2 = sync_client("ec2", endpoint_url, region=seed.region)
    created: list[PodEni] = []
    try:
        wanted = sorted(set(ips))
        have: set[str] = set()
        for start in range(0, len(wanted), 199):
            found = ec2.describe_network_interfaces(Filters=[
                {"Name": "vpc-id", "Values": [seed.vpc_id]},
                {"Name": "addresses.private-ip-address",
                 "Values": wanted[start:start + 199]}])["NetworkInterfaces"]
            have.update(str(n["PrivateIpAddress"]) for n in found)
        subnets = ec2.describe_subnets(
            Filters=[{"Name": "vpc-id", "Values": [seed.vpc_id]}])["Subnets"]
        for ip in wanted:
            if ip in have:
                continue
            subnet = _subnet_of(subnets, seed, ip)
            eni = ec2.create_network_interface(
                SubnetId=subnet, PrivateIpAddress=ip, Groups=[seed.node_security_group_id],
                Description="aws-K8S-pod",
                TagSpecifications=[{"ResourceType": "network-interface", "Tags": [
                    {"Key": "cluster.k8s.amazonaws.com/name", "Value": seed.cluster_name}]}],
            )["NetworkInterface"]
            created.append(PodEni(eni_id=str(eni["NetworkInterfaceId"]), ip=ip,
                                  subnet_id=subnet,
                                  security_group_ids=(seed.node_security_group_id,)))
    finally:
        ec2.close()
    return created


def _subnet_of(subnets: list[dict[str, Any]], seed: AwsSeed, ip: str) -> str:
    address = ipaddress.ip_address(ip)
    for subnet in subnets:
        if address in ipaddress.ip_network(subnet["CidrBlock"]):
            return str(subnet["SubnetId"])
    cidrs = ", ".join(sorted(s["CidrBlock"] for s in subnets))
    raise ValueError(f"{ip} is in no subnet of {seed.vpc_id} ({cidrs})")


def _subnet_holding(ec2: Any, seed: AwsSeed, ip: str) -> str:
    subnets = ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [seed.vpc_id]}])["Subnets"]
    return _subnet_of(subnets, seed, ip)


def _next_device_index(ec2: Any, instance_id: str) -> int:
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    used = {int(n["Attachment"]["DeviceIndex"])
            for r in reservations for i in r["Instances"]
            for n in i.get("NetworkInterfaces", []) if n.get("Attachment")}
    return max(used, default=-1) + 1


def join_node_security_group(endpoint_url: str, seed: AwsSeed,
                             instance_ids: Sequence[str]) -> None:
    """Put the primary ENI of each instance (an instance target's ENI) in the seed's node
    group, as EKS does for its nodes; the seeded instances start there already."""
    ec2 = sync_client("ec2", endpoint_url, region=seed.region)
    try:
        reservations = ec2.describe_instances(InstanceIds=list(instance_ids))["Reservations"]
        for instance in (i for r in reservations for i in r["Instances"]):
            primary = next(n for n in instance["NetworkInterfaces"]
                           if int(n["Attachment"]["DeviceIndex"]) == 0)
            groups = {g["GroupId"] for g in primary["Groups"]} | {seed.node_security_group_id}
            ec2.modify_network_interface_attribute(
                NetworkInterfaceId=primary["NetworkInterfaceId"], Groups=sorted(groups))
    finally:
        ec2.close()
