"""Pod ENIs and the cluster-owned node security group of the seeded VPC, found the way an ENI
resolver looks them up: `DescribeNetworkInterfaces` by private address within the VPC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.standins import (
    AwsSeed,
    MotoStandIn,
    create_pod_eni,
    join_node_security_group,
    sync_client,
)


@pytest.fixture
def ec2(moto_standin: MotoStandIn) -> Iterator[Any]:
    client = sync_client("ec2", moto_standin.url)
    try:
        yield client
    finally:
        client.close()


def by_address(ec2: Any, seed: AwsSeed, ips: list[str],
               name: str = "addresses.private-ip-address") -> dict[str, set[str]]:
    """Private IP -> security group ids of the ENIs found, as upstream's resolver asks."""
    found = ec2.describe_network_interfaces(Filters=[
        {"Name": "vpc-id", "Values": [seed.vpc_id]},
        {"Name": name, "Values": ips}])["NetworkInterfaces"]
    return {n["PrivateIpAddress"]: {g["GroupId"] for g in n["Groups"]} for n in found}


def test_the_seed_has_a_node_group_owned_by_the_cluster(ec2: Any, aws_seed: AwsSeed) -> None:
    [group] = ec2.describe_security_groups(
        GroupIds=[aws_seed.node_security_group_id])["SecurityGroups"]
    assert group["VpcId"] == aws_seed.vpc_id
    tags = {t["Key"]: t["Value"] for t in group["Tags"]}
    assert tags[f"kubernetes.io/cluster/{aws_seed.cluster_name}"] == "owned"
    # The seeded instances' primary ENIs are in it.
    reservations = ec2.describe_instances(InstanceIds=list(aws_seed.instance_ids))
    primaries = [n for r in reservations["Reservations"] for i in r["Instances"]
                 for n in i["NetworkInterfaces"] if n["Attachment"]["DeviceIndex"] == 0]
    assert len(primaries) == len(aws_seed.instance_ids)
    assert all({g["GroupId"] for g in n["Groups"]} == {aws_seed.node_security_group_id}
               for n in primaries)
    # The same look-up finds an instance target's ENI.
    ips = [n["PrivateIpAddress"] for n in primaries]
    assert by_address(ec2, aws_seed, ips) == {
        ip: {aws_seed.node_security_group_id} for ip in ips}


def test_pod_enis_are_found_by_private_address_with_their_groups(
        ec2: Any, aws_seed: AwsSeed, moto_standin: MotoStandIn) -> None:
    extra = ec2.create_security_group(GroupName="pods", Description="pods",
                                      VpcId=aws_seed.vpc_id)["GroupId"]
    plain = create_pod_eni(moto_standin.url, aws_seed, "10.0.2.20")
    custom = create_pod_eni(moto_standin.url, aws_seed, "10.0.3.20",
                            security_group_ids=[aws_seed.node_security_group_id, extra])
    # The subnet is the seeded one whose CIDR holds the address.
    assert plain.subnet_id == aws_seed.private_subnets[0]
    assert custom.subnet_id == aws_seed.private_subnets[1]
    assert plain.security_group_ids == (aws_seed.node_security_group_id,)
    for name in ("addresses.private-ip-address", "private-ip-address"):
        assert by_address(ec2, aws_seed, ["10.0.2.20", "10.0.3.20", "10.0.2.99"], name) == {
            "10.0.2.20": {aws_seed.node_security_group_id},
            "10.0.3.20": {aws_seed.node_security_group_id, extra}}
    [eni] = ec2.describe_network_interfaces(
        NetworkInterfaceIds=[plain.eni_id])["NetworkInterfaces"]
    assert eni["VpcId"] == aws_seed.vpc_id
    assert eni["Description"] == "aws-K8S-pod"


def test_a_pod_eni_can_be_attached_to_a_node(
        ec2: Any, aws_seed: AwsSeed, moto_standin: MotoStandIn) -> None:
    node = aws_seed.instance_ids[0]
    first = create_pod_eni(moto_standin.url, aws_seed, "10.0.2.30", instance_id=node)
    second = create_pod_eni(moto_standin.url, aws_seed, "10.0.2.31", instance_id=node)
    found = ec2.describe_network_interfaces(Filters=[
        {"Name": "attachment.instance-id", "Values": [node]}])["NetworkInterfaces"]
    indexes = {n["NetworkInterfaceId"]: n["Attachment"]["DeviceIndex"] for n in found}
    assert indexes[first.eni_id] == 1
    assert indexes[second.eni_id] == 2
    [eni] = [n for n in found if n["NetworkInterfaceId"] == first.eni_id]
    assert eni["Description"] == f"aws-K8S-{node}"
    assert {t["Key"]: t["Value"] for t in eni["TagSet"]}[
        "node.k8s.amazonaws.com/instance_id"] == node


def test_instances_launched_later_join_the_node_group(
        ec2: Any, aws_seed: AwsSeed, moto_standin: MotoStandIn) -> None:
    instance = ec2.run_instances(ImageId="ami-12c6146b", InstanceType="t3.medium", MinCount=1,
                                 MaxCount=1, SubnetId=aws_seed.private_subnets[1])
    instance_id = instance["Instances"][0]["InstanceId"]
    ip = instance["Instances"][0]["PrivateIpAddress"]
    assert aws_seed.node_security_group_id not in by_address(ec2, aws_seed, [ip])[ip]
    join_node_security_group(moto_standin.url, aws_seed, [instance_id])
    assert aws_seed.node_security_group_id in by_address(ec2, aws_seed, [ip])[ip]


def test_an_address_outside_the_vpc_is_refused_with_one_message(
        aws_seed: AwsSeed, moto_standin: MotoStandIn) -> None:
    with pytest.raises(ValueError, match=r"192\.0\.2\.1 is in no subnet of vpc-"):
        create_pod_eni(moto_standin.url, aws_seed, "192.0.2.1")


def test_moto_finds_secondary_addresses_by_neither_filter(
        ec2: Any, aws_seed: AwsSeed) -> None:
    # Why pods get ENIs of their own: the CNI's secondary-address layout is invisible to
    # moto's address filters (AWS matches secondary addresses too).
    eni = ec2.create_network_interface(SubnetId=aws_seed.private_subnets[0], PrivateIpAddresses=[
        {"PrivateIpAddress": "10.0.2.40", "Primary": True},
        {"PrivateIpAddress": "10.0.2.41", "Primary": False}])["NetworkInterface"]
    assert {a["PrivateIpAddress"] for a in eni["PrivateIpAddresses"]} == {
        "10.0.2.40", "10.0.2.41"}
    for name in ("addresses.private-ip-address", "private-ip-address"):
        assert by_address(ec2, aws_seed, ["10.0.2.41"], name) == {}
