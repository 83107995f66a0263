"""Controller configuration: command-line flags with upstream's names and defaults, parsed into a
frozen pydantic model. A bad value stops start-up with one message naming the flag."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.aws import DEFAULT_THROTTLE, ThrottleConfig, parse_endpoints, parse_throttle
from controller.defaults import (
    DEFAULT_AWS_MAX_RETRIES,
    DEFAULT_HEALTH_PROBE_BIND_ADDR,
    DEFAULT_INGRESS_CLASS,
    DEFAULT_LEADER_ELECTION_ID,
    DEFAULT_LOAD_BALANCER_CLASS,
    DEFAULT_MAX_CONCURRENT_RECONCILES,
    DEFAULT_METRICS_BIND_ADDR,
    DEFAULT_SSL_POLICY,
    DEFAULT_SYNC_PERIOD,
    DEFAULT_TGB_MAX_BACKOFF,
)
from runtime.httpserver import parse_bind_address

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


class ConfigError(ValueError):
    """A flag value that cannot be used; the message names the flag."""


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration syntax ("10h", "16m40s", "1.5s", "300ms"), in seconds.
    A bare number is taken as seconds, which is what users type most often by mistake."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    pos, total = 0, 0.0
    while pos < len(value):
        match = _DURATION_PART.match(value, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 2m, 1h30m)")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return total


def parse_key_values(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2` as used by --default-tags and --feature-gates."""
    result: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        result[key.strip()] = val.strip()
    return result


class ControllerConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    cluster_name: str = Field(min_length=1)
    kubeconfig: str | None = None
    watch_namespace: str | None = None
    aws_region: str | None = None
    aws_vpc_id: str | None = None
    aws_api_throttle: ThrottleConfig = DEFAULT_THROTTLE
    aws_api_endpoints: dict[str, str] = Field(default_factory=dict)
    aws_endpoint_url: str | None = None
    aws_max_retries: int = Field(default=DEFAULT_AWS_MAX_RETRIES, ge=0)
    ingress_class: str = DEFAULT_INGRESS_CLASS
    ingress_group_namespaces: Literal["single", "params", "any"] = "params"
    load_balancer_class: str = DEFAULT_LOAD_BALANCER_CLASS
    default_tags: dict[str, str] = Field(default_factory=dict)
    external_managed_tags: tuple[str, ...] = ()
    default_target_type: Literal["instance", "ip"] = "instance"
    default_load_balancer_scheme: Literal["internal", "internet-facing"] = "internal"
    default_ssl_policy: str = DEFAULT_SSL_POLICY
    enable_leader_election: bool = True
    leader_election_id: str = DEFAULT_LEADER_ELECTION_ID
    leader_election_namespace: str | None = None
    leader_election_lease_duration: float = Field(default=15.0, gt=0)
    leader_election_renew_deadline: float = Field(default=10.0, gt=0)
    leader_election_retry_period: float = Field(default=2.0, gt=0)
    metrics_bind_addr: str = DEFAULT_METRICS_BIND_ADDR  # "0" disables
    health_probe_bind_addr: str = DEFAULT_HEALTH_PROBE_BIND_ADDR
    ingress_max_concurrent_reconciles: int = Field(default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1)
    service_max_concurrent_reconciles: int = Field(default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1)
    targetgroupbinding_max_concurrent_reconciles: int = Field(
        default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1)
    targetgroupbinding_max_exponential_backoff_delay: float = Field(
        default=DEFAULT_TGB_MAX_BACKOFF, gt=0)
    sync_period: float = Field(default=DEFAULT_SYNC_PERIOD, gt=0)
    log_level: Literal["debug", "info", "warn", "error"] = "info"
    enable_checkpoints: bool = True
    checkpoint_verify_qps: float = Field(default=2.0, gt=0)
    checkpoint_verify_burst: int = Field(default=5, ge=1)
    checkpoint_max_wait: float = Field(default=600.0, gt=0)
    # 0 = no budget: verifications are paced by reconciles only.
    checkpoint_verify_aws_qps: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    checkpoint_verify_aws_burst: int = Field(default=10, ge=1)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register the `aiolbc run` flags; names and defaults follow the upstream controller."""
    a = parser.add_argument
    a("--cluster-name", required=True, help="name of the cluster (mandatory); tags every AWS "
      "resource the controller owns")
    a("--kubeconfig", help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    a("--watch-namespace", help="watch only this namespace (default: all)")
    a("--aws-region", help="AWS region (default: from the environment)")
    a("--aws-vpc-id", help="VPC of the cluster")
    a("--aws-api-throttle", help="client-side AWS throttles: "
      "serviceID:operationRegex=rate:burst,... (overrides a service's defaults)")
    a("--aws-api-endpoints", default="", help="per-service endpoints: service=URL,...")
    a("--aws-endpoint-url", help="one endpoint for every AWS service (e.g. a local stand-in)")
    a("--aws-max-retries", default=str(DEFAULT_AWS_MAX_RETRIES), help="AWS SDK retries")
    a("--ingress-class", default=DEFAULT_INGRESS_CLASS)
    a("--ingress-group-namespaces", default="params",
      help="which namespaces an Ingress group may span: params (a group named in annotations "
      "stays in one namespace; IngressClassParams groups span the namespaces they select), "
      "single (every group in one namespace), any (upstream: any namespace joins any group)")
    a("--load-balancer-class", default=DEFAULT_LOAD_BALANCER_CLASS)
    a("--default-tags", default="", help="tags on every AWS resource: key=value,...")
    a("--external-managed-tags", default="",
      help="tag keys managed outside the controller: never removed, refused in annotations")
    a("--default-target-type", default="instance")
    a("--default-load-balancer-scheme", default="internal")
    a("--default-ssl-policy", default=DEFAULT_SSL_POLICY)
    a("--enable-leader-election", default="true")
    a("--leader-election-id", default=DEFAULT_LEADER_ELECTION_ID)
    a("--leader-election-namespace", help="namespace of the Lease (default: the pod's)")
    a("--leader-election-lease-duration", default="15s")
    a("--leader-election-renew-deadline", default="10s")
    a("--leader-election-retry-period", default="2s")
    a("--metrics-bind-addr", default=DEFAULT_METRICS_BIND_ADDR)
    a("--health-probe-bind-addr", default=DEFAULT_HEALTH_PROBE_BIND_ADDR)
    for kind in ("ingress", "service", "targetgroupbinding"):
        a(f"--{kind}-max-concurrent-reconciles", default=str(DEFAULT_MAX_CONCURRENT_RECONCILES))
    a("--targetgroupbinding-max-exponential-backoff-delay", default="16m40s")
    a("--sync-period", default="10h")
    a("--log-level", default="info")
    a("--enable-checkpoints", default="true",
      help="skip unchanged objects after a restart, verifying them in a paced low-priority lane")
    a("--checkpoint-verify-qps", default="2",
      help="pace of verification reconciles for checkpoint-matched objects")
    a("--checkpoint-verify-burst", default="5")
    a("--checkpoint-max-wait", default="10m",
      help="a deferred verification waits at most this long behind real changes")
    a("--checkpoint-verify-aws-qps", default="5",
      help="AWS calls per second all verifications together may make (0: no limit)")
    a("--checkpoint-verify-aws-burst", default="10")


def _bool(flag: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise ConfigError(f"{flag}: expected true or false, got {text!r}")


def _convert(flag: str, fn: Callable[[str], object], text: str) -> object:
    try:
        return fn(text)
    except ValueError as exc:  # the AWS and bind-address parsers' errors are ValueErrors too
        message = str(exc)
        raise ConfigError(message if message.startswith(flag) or message.startswith(
            f"invalid {flag}") else f"{flag}: {message}") from None


def config_from_args(args: argparse.Namespace) -> ControllerConfig:
    """Build the config; raises ConfigError with one line naming the offending flag."""
    raw = dict(vars(args))
    raw.pop("command", None)
    values: dict[str, object] = {}
    for key, value in raw.items():
        flag = "--" + key.replace("_", "-")
        if key in ("enable_leader_election", "enable_checkpoints"):
            values[key] = _bool(flag, value)
        elif key in ("leader_election_lease_duration", "leader_election_renew_deadline",
                     "leader_election_retry_period", "sync_period", "checkpoint_max_wait",
                     "targetgroupbinding_max_exponential_backoff_delay"):
            values[key] = _convert(flag, parse_duration, value)
        elif key in ("metrics_bind_addr", "health_probe_bind_addr"):
            _convert(flag, parse_bind_address, value)
            values[key] = value
        elif key == "default_tags":
            values[key] = _convert(flag, parse_key_values, value)
        elif key == "external_managed_tags":
            values[key] = tuple(sorted({k.strip() for k in value.split(",") if k.strip()}))
        elif key == "aws_api_endpoints":
            values[key] = _convert(flag, parse_endpoints, value)
        elif key == "aws_api_throttle":
            values[key] = _convert(flag, parse_throttle, value or "")
        else:
            values[key] = value
    try:
        return ControllerConfig.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "config"
        raise ConfigError(f"{flag}: {first['msg']}") from None


def parse_config(argv: Sequence[str]) -> ControllerConfig:
    """Parse flags alone (used by tests and by `aiolbc run`)."""
    parser = argparse.ArgumentParser(prog="aiolbc run")
    add_flags(parser)
    return config_from_args(parser.parse_args(list(argv)))
