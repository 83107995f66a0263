"""Where the controller runs, when the flags do not say: the region and the VPC, found as
upstream's `pkg/aws/cloud.go` finds them.

- The VPC: `--aws-vpc-id`; else the one VPC carrying every tag of `--aws-vpc-tags`
  (DescribeVpcs with a `tag:<key>` filter each); else the instance metadata service, IMDSv2 (a
  token from `PUT /latest/api/token`, then the VPC of the instance's primary interface, by its
  MAC); else, when `NODENAME` is an instance id, that instance's VPC (DescribeInstances).
- The region: `--aws-region`, `AWS_REGION` / `AWS_DEFAULT_REGION`, else the metadata service.

The metadata service's address is upstream's: `--aws-api-endpoints ec2imds=URL`, else the AWS
SDKs' `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else `http://169.254.169.254`;
`AWS_EC2_METADATA_DISABLED=true` turns it off. Every answer is checked for shape before use,
and every failure is one line (`DiscoveryError`) that says what was tried."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp

from controller.aws.errors import AWSError
from controller.aws.pool import AWSClientPool

IMDS_SERVICE = "ec2imds"  # upstream's key in --aws-api-endpoints (the SDK's imds.ServiceID)
DEFAULT_IMDS_ENDPOINT = "http://169.254.169.254"
_TOKEN_TTL = 21600
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
_VPC_ID = re.compile(r"vpc-[0-9a-f]{8,17}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]{1,2}")
_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8,17}")
_MAX_ANSWER = 1024  # every value read is a short string


class DiscoveryError(Exception):
    """The region or VPC cannot be found; one line naming the flag that would settle it."""


class MetadataUnavailable(Exception):
    """The metadata service did not answer as IMDSv2 does; one line."""


@dataclass(frozen=True, slots=True)
class InstanceMetadata:
    """A client of the instance metadata service, IMDSv2 only (no token, no answer)."""

    endpoint: str
    timeout: float = 2.0  # the SDKs' default per attempt: off EC2 nothing answers
    attempts: int = 2

    @classmethod
    def configured(cls, endpoints: Mapping[str, str]) -> InstanceMetadata | None:
        """Upstream's address, None when `AWS_EC2_METADATA_DISABLED` is true."""
        if os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
            return None
        endpoint = (endpoints.get(IMDS_SERVICE)
                    or os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                    or DEFAULT_IMDS_ENDPOINT)
        return cls(endpoint=endpoint.rstrip("/"))

    async def read(self, *paths: str) -> list[str]:
        """The values at `paths` under `/latest/meta-data/`, with one token; each path may use
        `{0}` for the first value read (the MAC)."""
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        last: Exception | None = None
        for _ in range(self.attempts):
            try:
                async with aiohttp.ClientSession(timeout=timeout) as session:
                    token = await self._text(session, "PUT", "/latest/api/token",
                                             {"X-aws-ec2-metadata-token-ttl-seconds":
                                              str(_TOKEN_TTL)})
                    found: list[str] = []
                    for path in paths:
                        found.append(await self._text(
                            session, "GET", "/latest/meta-data/" + path.format(*found),
                            {"X-aws-ec2-metadata-token": token}))
                    return found
            except (aiohttp.ClientError, TimeoutError, MetadataUnavailable) as exc:
                last = exc
        if isinstance(last, MetadataUnavailable):
            raise last
        if isinstance(last, TimeoutError):
            raise MetadataUnavailable(f"no answer from {self.endpoint} within "
                                      f"{self.timeout:g}s")
        raise MetadataUnavailable(f"{self.endpoint}: {_one_line(str(last))}")

    async def _text(self, session: aiohttp.ClientSession, method: str, path: str,
                    headers: dict[str, str]) -> str:
        async with session.request(method, self.endpoint + path, headers=headers,
                                   allow_redirects=False) as response:
            body = await response.content.read(_MAX_ANSWER + 1)
            if response.status != 200:
                raise MetadataUnavailable(f"{method} {path} answered {response.status}")
            if len(body) > _MAX_ANSWER:
                raise MetadataUnavailable(f"{method} {path}: answer too long")
            return body.decode("utf-8", "replace").strip()

    async def vpc_id(self) -> str:
        mac, vpc = await self.read("mac", "network/interfaces/macs/{0}/vpc-id")
        if not _MAC.fullmatch(mac):
            raise MetadataUnavailable(f"the instance's MAC {mac[:40]!r} is not a MAC address")
        if not _VPC_ID.fullmatch(vpc):
            raise MetadataUnavailable(f"the interface's VPC {vpc[:40]!r} is not a VPC id")
        return vpc

    async def region(self) -> str:
        (region,) = await self.read("placement/region")
        if not _REGION.fullmatch(region):
            raise MetadataUnavailable(f"the region {region[:40]!r} is not an AWS region")
        return region


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _tags_text(tags: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(tags.items()))


async def region_from_metadata(metadata: InstanceMetadata | None) -> str:
    """Upstream's last resort for the region; raises DiscoveryError."""
    if metadata is None:
        raise DiscoveryError("--aws-region: required (or set AWS_REGION); the instance "
                             "metadata service is disabled (AWS_EC2_METADATA_DISABLED)")
    try:
        return await metadata.region()
    except MetadataUnavailable as exc:
        raise DiscoveryError(f"--aws-region: not given, and the instance metadata service did "
                             f"not tell the region ({exc}); give --aws-region or set "
                             "AWS_REGION") from None


async def vpc_by_tags(pool: AWSClientPool, tags: Mapping[str, str]) -> str:
    filters = [{"Name": f"tag:{key}", "Values": [value]} for key, value in sorted(tags.items())]
    try:
        answer = await pool.call("ec2", "DescribeVpcs", Filters=filters)
    except AWSError as exc:
        raise DiscoveryError(f"--aws-vpc-tags: DescribeVpcs failed: {exc}") from None
    vpcs = sorted(str(v.get("VpcId")) for v in answer.get("Vpcs") or [])
    if not vpcs:
        raise DiscoveryError(f"--aws-vpc-tags: no VPC has the tags {_tags_text(tags)}")
    if len(vpcs) > 1:
        raise DiscoveryError(f"--aws-vpc-tags: several VPCs have the tags {_tags_text(tags)} "
                             f"({', '.join(vpcs[:5])}); give tags only one VPC has, or "
                             "--aws-vpc-id")
    return vpcs[0]


async def vpc_of_instance(pool: AWSClientPool, instance_id: str) -> str | None:
    try:
        answer = await pool.call("ec2", "DescribeInstances", InstanceIds=[instance_id])
    except AWSError:
        return None
    reservations = answer.get("Reservations") or []
    if len(reservations) != 1 or len(reservations[0].get("Instances") or []) != 1:
        return None
    vpc = reservations[0]["Instances"][0].get("VpcId")
    return vpc if isinstance(vpc, str) and _VPC_ID.fullmatch(vpc) else None


async def discover_vpc(pool: AWSClientPool, *, tags: Mapping[str, str],
                       metadata: InstanceMetadata | None) -> str:
    """The VPC when `--aws-vpc-id` is not given (upstream's order); raises DiscoveryError."""
    if tags:
        return await vpc_by_tags(pool, tags)
    reason = "it is disabled (AWS_EC2_METADATA_DISABLED)"
    if metadata is not None:
        try:
            return await metadata.vpc_id()
        except MetadataUnavailable as exc:
            reason = str(exc)
    node = os.environ.get("NODENAME", "")
    if _INSTANCE_ID.fullmatch(node):
        found = await vpc_of_instance(pool, node)
        if found is not None:
            return found
    raise DiscoveryError(f"--aws-vpc-id: not given, and the instance metadata service did not "
                         f"tell the VPC ({reason}); give --aws-vpc-id or --aws-vpc-tags")


__all__ = ["DEFAULT_IMDS_ENDPOINT", "IMDS_SERVICE", "DiscoveryError", "InstanceMetadata",
           "MetadataUnavailable", "discover_vpc", "region_from_metadata", "vpc_by_tags"]
