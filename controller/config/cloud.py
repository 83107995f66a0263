"""The AWS section: region, VPC, endpoints and how the shared client pool calls AWS."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller import flagrules
from controller.aws import DEFAULT_THROTTLE, ThrottleConfig, parse_endpoints, parse_throttle
from controller.defaults import DEFAULT_AWS_MAX_RETRIES
from runtime import flags, flagvalues
from runtime.flags import flag


def _no_text(throttle: ThrottleConfig) -> str:
    # The defaults are upstream's per-service limits, too long to show: the help says so.
    return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudConfig:
    region: str | None = flag(
        "--aws-region", default=None, parse=str, check=flagrules.region_problem,
        help="AWS region (default: from the environment)")
    vpc_id: str | None = flag(
        "--aws-vpc-id", default=None, parse=str,
        help="VPC of the cluster (default: the VPC with --aws-vpc-tags, else the instance "
        "metadata service's)")
    vpc_tags: Mapping[str, str] = flag(
        "--aws-vpc-tags", default={}, parse=flagvalues.parse_key_values,
        help="without --aws-vpc-id: the one VPC carrying all these tags (key=value,...)")
    vpc_tag_key: str = flag(
        "--aws-vpc-tag-key", default="Name", parse=str,
        help="deprecated, as upstream's: every tag of --aws-vpc-tags is used")
    api_throttle: ThrottleConfig = flag(
        "--aws-api-throttle", default=DEFAULT_THROTTLE, parse=parse_throttle, show=_no_text,
        help="client-side AWS throttles: serviceID:operationRegex=rate:burst,... (overrides a "
        "service's defaults, upstream's)")
    api_endpoints: Mapping[str, str] = flag(
        "--aws-api-endpoints", default={}, parse=parse_endpoints,
        help="per-service endpoints: service=URL,...")
    endpoint_url: str | None = flag(
        "--aws-endpoint-url", default=None, parse=str,
        help="one endpoint for every AWS service (e.g. a local stand-in)")
    max_retries: int = flag(
        "--aws-max-retries", default=DEFAULT_AWS_MAX_RETRIES, parse=flagvalues.parse_int,
        check=flagvalues.within(0, 100), help="AWS SDK retries")

    def __post_init__(self) -> None:
        flags.freeze(self)


__all__ = ["CloudConfig"]
