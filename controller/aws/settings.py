"""Settings of the AWS client pool, and the `--aws-api-endpoints` parser."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from controller.aws.errors import AWSConfigError
from controller.aws.throttle import DEFAULT_THROTTLE, ThrottleConfig

_REGION_NAME = re.compile(r"[a-z][a-z0-9-]*")

# Every AWS service upstream's controller calls, by botocore client name, each with the names a
# user may give it: the client name, the endpoint prefix, and the AWS SDK service ID upstream's
# resolver is keyed by (`pkg/aws/endpoints/resolver.go`). Any other name would be accepted and
# then never used, so it is refused at start.
_SERVICE_NAMES: dict[str, tuple[str, ...]] = {
    "elbv2": ("elbv2", "elasticloadbalancing", "Elastic Load Balancing v2"),
    "ec2": ("ec2", "EC2"),
    "acm": ("acm", "ACM"),
    "acm-pca": ("acm-pca", "ACM PCA"),
    "route53": ("route53", "Route 53"),
    "wafv2": ("wafv2", "WAFV2"),
    "waf-regional": ("waf-regional", "WAF Regional"),
    "shield": ("shield", "Shield"),
    "resourcegroupstaggingapi": ("resourcegroupstaggingapi", "tagging",
                                 "Resource Groups Tagging API"),
    "sts": ("sts", "STS"),
    "globalaccelerator": ("globalaccelerator", "Global Accelerator"),
    # The instance metadata service, read at start when the VPC or region is not given
    # (`controller/aws/discovery.py`).
    "ec2imds": ("ec2imds",),
}
_SERVICE_BY_NAME = {name: service for service, names in _SERVICE_NAMES.items()
                    for name in names}

# Credentials sent to a stand-in on loopback when nothing else is configured: moto does not
# verify signatures, but botocore refuses to sign without some.
DUMMY_ACCESS_KEY = "testing"
DUMMY_SECRET_KEY = "testing"


def validate_endpoint_url(url: str, *, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AWSConfigError(f"{what}: {url!r} is not an http(s) URL with a host")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise AWSConfigError(f"{what}: {url!r} has an invalid port") from None
    return url


def parse_endpoints(text: str) -> dict[str, str]:
    """Parse `--aws-api-endpoints` (`svc=URL,svc=URL`) into {botocore service name: URL}.

    Keys may be botocore client names (`elbv2`, `ec2`, `acm`) or upstream's endpoint ids
    (`elasticloadbalancing`). Raises `AWSConfigError` naming the bad entry.
    """
    endpoints: dict[str, str] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            if text.strip():
                raise AWSConfigError(f"invalid --aws-api-endpoints {text!r}: empty entry "
                                     "(expected svc=URL,...)")
            continue
        key, sep, url = entry.partition("=")
        key, url = key.strip(), url.strip()
        if not sep:
            raise AWSConfigError(
                f"invalid --aws-api-endpoints entry {entry!r}: missing '=' (expected svc=URL)")
        service = _SERVICE_BY_NAME.get(key)
        if service is None:
            raise AWSConfigError(
                f"invalid --aws-api-endpoints entry {entry!r}: {key[:64]!r} is not a service name "
                f"the controller calls (one of {', '.join(sorted(_SERVICE_NAMES))})")
        if service in endpoints:
            raise AWSConfigError(
                f"invalid --aws-api-endpoints entry {entry!r}: {key!r} is given twice")
        endpoints[service] = validate_endpoint_url(
            url, what=f"invalid --aws-api-endpoints entry {entry!r}")
    return endpoints


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, kw_only=True)
class AWSSettings:
    """How the pool reaches AWS. `endpoint_url` applies to every service not in `endpoints`;
    with neither, botocore's own resolution applies (including `AWS_ENDPOINT_URL`)."""

    region: str
    endpoint_url: str | None = None
    endpoints: dict[str, str] = field(default_factory=dict)
    max_retries: int = 10  # retries after the first attempt (upstream --aws-max-retries)
    throttle: ThrottleConfig = DEFAULT_THROTTLE
    max_concurrency_per_service: int = 32
    access_key: str | None = None
    secret_key: str | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    # AWS calls per second (and burst) all paced verifications together may make; None =
    # unlimited (--checkpoint-verify-aws-qps / --checkpoint-verify-aws-burst).
    verify_calls_qps: float | None = None
    verify_calls_burst: int = 10
    # The RoleSessionName of every AssumeRole (`assumerole.session_name` of the cluster's).
    role_session_name: str = "AWS-LBC-"

    def __post_init__(self) -> None:
        if not self.region or not _REGION_NAME.fullmatch(self.region):
            raise AWSConfigError(f"invalid AWS region {self.region!r}")
        if self.endpoint_url is not None:
            validate_endpoint_url(self.endpoint_url, what="invalid AWS endpoint URL")
        for service, url in self.endpoints.items():
            validate_endpoint_url(url, what=f"invalid AWS endpoint for {service!r}")
        if self.max_retries < 0:
            raise AWSConfigError(f"--aws-max-retries must be >= 0, got {self.max_retries}")
        if self.max_concurrency_per_service < 1:
            raise AWSConfigError("AWS max concurrency per service must be >= 1, "
                                 f"got {self.max_concurrency_per_service}")
        if self.verify_calls_qps is not None and not (
                math.isfinite(self.verify_calls_qps) and self.verify_calls_qps > 0):
            raise AWSConfigError("verification budget: AWS calls per second must be > 0, "
                                 f"got {self.verify_calls_qps}")
        if self.verify_calls_burst < 1:
            raise AWSConfigError("verification budget: burst must be >= 1, "
                                 f"got {self.verify_calls_burst}")
        if (self.access_key is None) != (self.secret_key is None):
            raise AWSConfigError("AWS access key and secret key must be given together")

    def endpoint_for(self, service: str) -> str | None:
        return self.endpoints.get(service) or self.endpoint_url

    def effective_endpoint(self, service: str) -> str | None:
        """The endpoint botocore will use, counting the `AWS_ENDPOINT_URL*` variables it reads."""
        env_key = "AWS_ENDPOINT_URL_" + service.upper().replace("-", "_")
        return (self.endpoint_for(service) or os.environ.get(env_key)
                or os.environ.get("AWS_ENDPOINT_URL"))

    def credentials_for(self, service: str) -> tuple[str, str] | None:
        """Explicit keys; else dummy keys for a loopback stand-in when the environment holds
        none; else None (botocore's default credential chain)."""
        if self.access_key is not None and self.secret_key is not None:
            return self.access_key, self.secret_key
        endpoint = self.effective_endpoint(service)
        if (endpoint is not None and is_loopback_url(endpoint)
                and not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE")):
            return DUMMY_ACCESS_KEY, DUMMY_SECRET_KEY
        return None
