"""moto in server mode on loopback, as a local stand-in for EC2, ELBv2 and ACM, plus a seed of
the AWS resources a cluster's load balancers need (VPC, tagged subnets, a cluster-owned node
security group, instances in it, a certificate).

moto (with flask and flask-cors, the `demo` extra) is imported with this module, so a missing
extra shows as an ImportError naming the missing module when the stand-ins are imported.
"""

from __future__ import annotations

import logging
import os
import urllib.request
import warnings
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import botocore.session
from botocore.config import Config

with warnings.catch_warnings():
    # moto warns about `moto[server]` before re-raising a missing flask part; the ImportError
    # alone names what is missing, and the warning would be a second line of output.
    warnings.simplefilter("ignore", UserWarning)
    from moto.server import ThreadedMotoServer

from controller.aws.loader import with_shared_loader
from controller.aws.settings import DUMMY_ACCESS_KEY, DUMMY_SECRET_KEY

DEFAULT_REGION = "us-west-2"


class MotoStandIn:
    """A `moto.server.ThreadedMotoServer` on 127.0.0.1 with a free port.

    One server answers every service; it routes by the SigV4 credential scope.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._server: Any = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("moto stand-in is not started")
        return self._url

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> MotoStandIn:
        if self._server is not None:
            return self
        from controller.standins import (
            moto_capacity,
            moto_fidelity,
            moto_pools,
            moto_quic,
            moto_routing,
            moto_targetcontrol,
        )

        moto_fidelity.apply()
        moto_quic.apply()
        moto_targetcontrol.apply()
        moto_routing.apply()
        moto_capacity.apply()
        moto_pools.apply()
        # moto's EC2 backend loads Amazon's public AMI catalogue each time it is created, that
        # is after every reset: most of a reset's cost. Nothing here looks an AMI up (instances
        # are made with an image ID of our own), so the catalogue is left out unless asked for.
        os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        # verbose=False leaves werkzeug's per-request access log on.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = ThreadedMotoServer(ip_address=self._host, port=self._port, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        self._server = server
        self._url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def reset(self) -> None:
        """Wipe every resource of every service (`POST /moto-api/reset`)."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:  # loopback only
            response.read()

    def seed(self, **kwargs: Any) -> AwsSeed:
        """`seed_vpc` against this server."""
        return seed_vpc(self.url, **kwargs)

    def __enter__(self) -> MotoStandIn:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@dataclass(frozen=True)
class AwsSeed:
    vpc_id: str
    public_subnets: tuple[str, ...]
    private_subnets: tuple[str, ...]
    instance_ids: tuple[str, ...]
    certificate_arn: str
    region: str
    cluster_name: str = "test-cluster"
    domain: str = "*.example.com"
    # Tagged `kubernetes.io/cluster/<cluster_name>: owned`, as EKS tags its cluster group; the
    # seeded instances' primary ENIs are in it.
    node_security_group_id: str = ""
    # Where pods get addresses beyond the load balancers' subnets (<prefix>.4.0 to .15.255):
    # not tagged for load balancers, so subnet discovery never picks them.
    pod_subnets: tuple[str, ...] = ()


def sync_client(service: str, endpoint_url: str, *, region: str = DEFAULT_REGION) -> Any:
    """A plain botocore client with dummy credentials, for seeding and inspecting a stand-in."""
    session = with_shared_loader(botocore.session.get_session())
    return session.create_client(
        service, region_name=region, endpoint_url=endpoint_url,
        aws_access_key_id=DUMMY_ACCESS_KEY, aws_secret_access_key=DUMMY_SECRET_KEY,
        config=Config(retries={"mode": "standard", "total_max_attempts": 3}))


def seed_vpc(endpoint_url: str, *, cluster_name: str = "test-cluster",
             region: str = DEFAULT_REGION, vpc_cidr: str = "10.0.0.0/16",
             domain: str = "*.example.com", image_id: str = "ami-12c6146b",
             instance_type: str = "t3.medium") -> AwsSeed:
    """Create a VPC with two public and two private subnets in `<region>a` and `<region>b`,
    tagged for load-balancer subnet discovery and shared with `cluster_name`, three pod
    subnets, a node security group owned by `cluster_name`, two instances in it (one per
    private subnet) and an ACM certificate for `domain`."""
    ec2 = sync_client("ec2", endpoint_url, region=region)
    acm = sync_client("acm", endpoint_url, region=region)
    try:
        cluster_tag = {"Key": f"kubernetes.io/cluster/{cluster_name}", "Value": "shared"}
        vpc_id = ec2.create_vpc(
            CidrBlock=vpc_cidr,
            TagSpecifications=[_tags("vpc", {"Key": "Name", "Value": cluster_name}, cluster_tag)],
        )["Vpc"]["VpcId"]
        prefix = vpc_cidr.split(".")[:2]
        zones = (f"{region}a", f"{region}b")
        subnets: dict[str, list[str]] = {"public": [], "private": []}
        for index, (kind, role) in enumerate(
                (("public", "kubernetes.io/role/elb"), ("public", "kubernetes.io/role/elb"),
                 ("private", "kubernetes.io/role/internal-elb"),
                 ("private", "kubernetes.io/role/internal-elb"))):
            zone = zones[index % 2]
            subnet = ec2.create_subnet(
                VpcId=vpc_id, AvailabilityZone=zone,
                CidrBlock=".".join([*prefix, str(index), "0"]) + "/24",
                TagSpecifications=[_tags(
                    "subnet", {"Key": role, "Value": "1"}, cluster_tag,
                    {"Key": "Name", "Value": f"{cluster_name}-{kind}-{zone}"})],
            )["Subnet"]
            subnets[kind].append(subnet["SubnetId"])
        pod_subnets = []
        for index, third in enumerate((4, 8, 12)):
            zone = zones[index % 2]
            pod_subnets.append(ec2.create_subnet(
                VpcId=vpc_id, AvailabilityZone=zone,
                CidrBlock=".".join([*prefix, str(third), "0"]) + "/22",
                TagSpecifications=[_tags("subnet", cluster_tag, {
                    "Key": "Name", "Value": f"{cluster_name}-pods-{zone}-{third}"})],
            )["Subnet"]["SubnetId"])
        node_group = ec2.create_security_group(
            GroupName=f"{cluster_name}-node", VpcId=vpc_id,
            Description=f"nodes of cluster {cluster_name}",
            TagSpecifications=[_tags(
                "security-group", {"Key": f"kubernetes.io/cluster/{cluster_name}",
                                   "Value": "owned"},
                {"Key": "Name", "Value": f"{cluster_name}-node"})])["GroupId"]
        instance_ids = []
        for subnet_id in subnets["private"]:
            reservation = ec2.run_instances(
                ImageId=image_id, InstanceType=instance_type, MinCount=1, MaxCount=1,
                SubnetId=subnet_id, SecurityGroupIds=[node_group],
                TagSpecifications=[_tags("instance", cluster_tag,
                                         {"Key": "Name", "Value": f"{cluster_name}-node"})])
            instance_ids.append(reservation["Instances"][0]["InstanceId"])
        certificate_arn = acm.request_certificate(
            DomainName=domain, ValidationMethod="DNS")["CertificateArn"]
    finally:
        ec2.close()
        acm.close()
    return AwsSeed(vpc_id=vpc_id, public_subnets=tuple(subnets["public"]),
                   private_subnets=tuple(subnets["private"]), instance_ids=tuple(instance_ids),
                   certificate_arn=certificate_arn, region=region, cluster_name=cluster_name,
                   domain=domain, node_security_group_id=node_group,
                   pod_subnets=tuple(pod_subnets))


def _tags(resource_type: str, *tags: dict[str, str]) -> dict[str, Any]:
    return {"ResourceType": resource_type, "Tags": list(tags)}
