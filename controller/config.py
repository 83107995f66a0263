"""Controller configuration: command-line flags with upstream's names and defaults, parsed into a
frozen pydantic model. A bad value stops start-up with one message naming the flag, and so does
a value AWS or Kubernetes would refuse later (tags, names, timings): nothing starts with it."""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller import flagrules
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
    DEFAULT_TGB_REQUEUE_DURATION,
    DEFAULT_WEBHOOK_BIND_PORT,
    DEFAULT_WEBHOOK_CERT_DIR,
    DEFAULT_WEBHOOK_CONFIGURATION_NAME,
    DEFAULT_WEBHOOK_SECRET_NAME,
    DEFAULT_WEBHOOK_SERVICE_NAME,
)
from runtime.httpserver import BindAddress, parse_bind_address
from runtime.leaselock import JITTER_FACTOR
from runtime.servingcerts import CERT_FILE, KEY_FILE

# How long `aiolbc run` keeps trying to reach the API server before giving up: shorter than the
# shipped liveness probe's window (10 s delay + 3 x 10 s), so the process says why it failed
# before the kubelet kills it for not answering.
DEFAULT_API_SERVER_STARTUP_TIMEOUT = 30.0
# More workers than this is a typing slip, not a tuning choice: each one is a task.
MAX_CONCURRENT_RECONCILES = 1000

# Go's time.Duration is int64 nanoseconds: upstream's duration flags cannot hold more.
MAX_DURATION = (2**63 - 1) / 1e9
_MAX_DURATION_TEXT = "2562047h47m16.854775807s"

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


class ConfigError(ValueError):
    """A flag value that cannot be used; the message names the flag."""


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration syntax ("10h", "16m40s", "1.5s", "300ms"), in seconds.
    A bare number is taken as seconds, which is what users type most often by mistake. Negative
    durations, and ones longer than Go's (about 292 years), are refused."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    body = value[1:] if value[0] in "+-" else value
    if re.fullmatch(r"\d+(\.\d+)?", body):
        total = float(body)
    else:
        if not body:
            raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 2m, 1h30m)")
        pos, total = 0, 0.0
        while pos < len(body):
            match = _DURATION_PART.match(body, pos)
            if match is None:
                raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 2m, 1h30m)")
            total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
            pos = match.end()
    if value[0] == "-" and total > 0:
        raise ValueError(f"negative duration {text!r} is not allowed")
    if not total <= MAX_DURATION:  # also catches inf from an absurdly long number
        raise ValueError(f"duration {text!r} is longer than the maximum, {_MAX_DURATION_TEXT}")
    return total


def format_duration(seconds: float) -> str:
    return f"{seconds:g}s"


def parse_key_values(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2` as used by --default-tags and --feature-gates."""
    result: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        result[key.strip()] = val.strip()
    return result


_T = TypeVar("_T")
_DURATION_FLAGS = ("leader_election_lease_duration", "leader_election_renew_deadline",
                   "leader_election_retry_period", "sync_period", "checkpoint_max_wait",
                   "targetgroupbinding_max_exponential_backoff_delay",
                   "targetgroupbinding_requeue_duration", "api_server_startup_timeout")
_BOOL_FLAGS = ("enable_leader_election", "enable_checkpoints", "metrics_secure",
               "enable_pod_readiness_gate_inject", "enable_service_mutator_webhook",
               "enable_backend_security_group", "enable_manage_backend_security_group_rules",
               "disable_restricted_sg_rules")
_SECURITY_GROUP_ID = re.compile(r"sg-[0-9a-f]{1,32}")


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


class ControllerConfig(BaseModel):
    # No float flag may be inf or nan: a rate or a duration of inf is always a typing slip.
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True,
                              allow_inf_nan=False)

    cluster_name: str = Field(min_length=1)
    kubeconfig: str | None = None
    api_server_startup_timeout: float = Field(default=DEFAULT_API_SERVER_STARTUP_TIMEOUT, ge=0)
    watch_namespace: str | None = None
    aws_region: str | None = None
    aws_vpc_id: str | None = None
    aws_api_throttle: ThrottleConfig = DEFAULT_THROTTLE
    aws_api_endpoints: dict[str, str] = Field(default_factory=dict)
    aws_endpoint_url: str | None = None
    aws_max_retries: int = Field(default=DEFAULT_AWS_MAX_RETRIES, ge=0, le=100)
    ingress_class: str = DEFAULT_INGRESS_CLASS
    ingress_group_namespaces: Literal["single", "params", "any"] = "params"
    load_balancer_class: str = DEFAULT_LOAD_BALANCER_CLASS
    default_tags: dict[str, str] = Field(default_factory=dict)
    external_managed_tags: tuple[str, ...] = ()
    default_target_type: Literal["instance", "ip"] = "instance"
    default_load_balancer_scheme: Literal["internal", "internet-facing"] = "internal"
    default_ssl_policy: str = DEFAULT_SSL_POLICY
    enable_backend_security_group: bool = True
    backend_security_group: str = ""
    enable_manage_backend_security_group_rules: bool = False
    disable_restricted_sg_rules: bool = False
    service_target_eni_security_group_tags: dict[str, str] = Field(default_factory=dict)
    enable_leader_election: bool = True
    leader_election_id: str = DEFAULT_LEADER_ELECTION_ID
    leader_election_namespace: str | None = None
    leader_election_lease_duration: float = Field(default=15.0, gt=0)
    leader_election_renew_deadline: float = Field(default=10.0, gt=0)
    leader_election_retry_period: float = Field(default=2.0, gt=0)
    metrics_bind_addr: str = DEFAULT_METRICS_BIND_ADDR  # "0" disables
    metrics_secure: bool = False
    metrics_cert_dir: str | None = None
    health_probe_bind_addr: str = DEFAULT_HEALTH_PROBE_BIND_ADDR
    ingress_max_concurrent_reconciles: int = Field(
        default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1, le=MAX_CONCURRENT_RECONCILES)
    service_max_concurrent_reconciles: int = Field(
        default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1, le=MAX_CONCURRENT_RECONCILES)
    targetgroupbinding_max_concurrent_reconciles: int = Field(
        default=DEFAULT_MAX_CONCURRENT_RECONCILES, ge=1, le=MAX_CONCURRENT_RECONCILES)
    targetgroupbinding_max_exponential_backoff_delay: float = Field(
        default=DEFAULT_TGB_MAX_BACKOFF, gt=0)
    targetgroupbinding_requeue_duration: float = Field(default=DEFAULT_TGB_REQUEUE_DURATION,
                                                       gt=0)
    enable_pod_readiness_gate_inject: bool = True
    enable_service_mutator_webhook: bool = False
    sync_period: float = Field(default=DEFAULT_SYNC_PERIOD, gt=0)
    log_level: Literal["debug", "info", "warn", "error"] = "info"
    enable_checkpoints: bool = True
    # None: follow the verification budget (its rate; 2 when there is no budget).
    checkpoint_verify_qps: float | None = Field(default=None, gt=0)
    checkpoint_verify_burst: int = Field(default=5, ge=1)
    checkpoint_max_wait: float = Field(default=600.0, gt=0)
    # 0 = no budget: verifications are paced by reconciles only.
    checkpoint_verify_aws_qps: float = Field(default=5.0, ge=0)
    checkpoint_verify_aws_burst: int = Field(default=10, ge=1)
    webhook_bind_port: int = Field(default=DEFAULT_WEBHOOK_BIND_PORT, ge=0, le=65535)  # 0: off
    webhook_bind_host: str = ""  # every interface
    webhook_cert_dir: str = Field(default=DEFAULT_WEBHOOK_CERT_DIR, min_length=1)
    webhook_cert_file: str = Field(default="tls.crt", min_length=1)
    webhook_key_file: str = Field(default="tls.key", min_length=1)
    webhook_tls_mode: Literal["self-managed", "files"] = "self-managed"
    webhook_secret_name: str = Field(default=DEFAULT_WEBHOOK_SECRET_NAME, min_length=1)
    webhook_service_name: str = Field(default=DEFAULT_WEBHOOK_SERVICE_NAME, min_length=1)
    webhook_configuration_name: str = Field(default=DEFAULT_WEBHOOK_CONFIGURATION_NAME,
                                            min_length=1)

    # ---- one value at a time ------------------------------------------------------------------

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str) -> str:
        return _ok(flagrules.cluster_name_problem(value), value)

    @field_validator("watch_namespace", "leader_election_namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        return value if not value else _ok(flagrules.dns_label_problem(value), value)

    @field_validator("leader_election_id")
    @classmethod
    def _lease_name(cls, value: str) -> str:
        return _ok(flagrules.dns_subdomain_problem(value), value)

    @field_validator("ingress_class")
    @classmethod
    def _ingress_class(cls, value: str) -> str:
        # Empty is upstream's "the legacy `alb` annotation value only".
        return value if not value else _ok(flagrules.dns_subdomain_problem(value), value)

    @field_validator("load_balancer_class")
    @classmethod
    def _load_balancer_class(cls, value: str) -> str:
        return _ok(flagrules.qualified_name_problem(value), value)

    @field_validator("aws_region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return value if value is None else _ok(flagrules.region_problem(value), value)

    @field_validator("default_tags")
    @classmethod
    def _default_tags(cls, value: dict[str, str]) -> dict[str, str]:
        return _ok(flagrules.tags_problem(value), value)

    @field_validator("backend_security_group")
    @classmethod
    def _backend_security_group(cls, value: str) -> str:
        if value and _SECURITY_GROUP_ID.fullmatch(value) is None:
            raise ValueError(f"{value!r} is not a security group ID (sg-...)")
        return value

    @field_validator("service_target_eni_security_group_tags")
    @classmethod
    def _eni_tags(cls, value: dict[str, str]) -> dict[str, str]:
        # Tags to match, not to write: any key a group may carry (aws: ones included).
        for key, tag in value.items():
            if len(key) > flagrules.TAG_KEY_MAX or len(tag) > flagrules.TAG_VALUE_MAX:
                raise ValueError(f"tag {key!r}: keys are at most {flagrules.TAG_KEY_MAX} "
                                 f"characters and values at most {flagrules.TAG_VALUE_MAX}")
        return value

    @field_validator("external_managed_tags")
    @classmethod
    def _external_managed_tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _ok(flagrules.tag_keys_problem(value), value)

    @field_validator("metrics_bind_addr", "health_probe_bind_addr")
    @classmethod
    def _bind_address(cls, value: str) -> str:
        parse_bind_address(value)
        return value

    @field_validator("webhook_bind_host")
    @classmethod
    def _webhook_host(cls, value: str) -> str:
        host = value.strip().removeprefix("[").removesuffix("]")
        if not host:
            return host
        try:
            ipaddress.ip_address(host)
        except ValueError:
            _ok(flagrules.dns_subdomain_problem(host), host)
        return host

    @field_validator("metrics_cert_dir")
    @classmethod
    def _cert_dir(cls, value: str | None) -> str | None:
        if not value:
            return None
        path = Path(value)
        if not path.is_dir():
            raise ValueError(f"{value} is not a directory" if path.exists()
                             else f"{value} does not exist")
        for name in (CERT_FILE, KEY_FILE):
            if not (path / name).is_file():
                raise ValueError(f"{value} has no {name}")
        return value

    # ---- values that must agree -------------------------------------------------------------

    @model_validator(mode="after")
    def _consistent(self) -> ControllerConfig:
        if self.backend_security_group and not self.enable_backend_security_group:
            raise ValueError("--backend-security-group: set, but "
                             "--enable-backend-security-group is false")
        shared = sorted(set(self.external_managed_tags) & set(self.default_tags))
        if shared:
            raise ValueError(f"--external-managed-tags: tag key {shared[0]!r} is also in "
                             "--default-tags; a key is either set by the controller or "
                             "managed outside it")
        if self.enable_leader_election:
            _check_leader_election_timings(self)
        metrics = parse_bind_address(self.metrics_bind_addr)
        probes = parse_bind_address(self.health_probe_bind_addr)
        if _overlap(metrics, probes):
            raise ValueError(f"--health-probe-bind-addr: {self.health_probe_bind_addr!r} uses "
                             f"the same port as --metrics-bind-addr ({self.metrics_bind_addr!r})")
        return self


def _ok(problem: str | None, value: _T) -> _T:
    if problem:
        raise ValueError(problem)
    return value


def _check_leader_election_timings(config: ControllerConfig) -> None:
    """client-go's NewLeaderElector rules: the lease outlives the renew deadline, and the renew
    deadline leaves room for more than one (jittered) retry."""
    lease = config.leader_election_lease_duration
    renew = config.leader_election_renew_deadline
    retry = config.leader_election_retry_period
    if lease <= renew:
        raise ValueError(
            f"--leader-election-lease-duration: {format_duration(lease)} must be greater than "
            f"--leader-election-renew-deadline ({format_duration(renew)})")
    if renew <= JITTER_FACTOR * retry:
        raise ValueError(
            f"--leader-election-renew-deadline: {format_duration(renew)} must be greater than "
            f"--leader-election-retry-period x {JITTER_FACTOR:g} "
            f"({format_duration(JITTER_FACTOR * retry)})")


_WILDCARD_HOSTS = (None, "0.0.0.0", "::")


def _overlap(a: BindAddress | None, b: BindAddress | None) -> bool:
    """Two listeners that cannot both bind: the same fixed port on the same host or on a
    wildcard address. Port 0 picks a free port and never clashes."""
    if a is None or b is None or a.port == 0 or a.port != b.port:
        return False
    return a.host in _WILDCARD_HOSTS or b.host in _WILDCARD_HOSTS or a.host == b.host


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register the `aiolbc run` flags; names and defaults follow the upstream controller."""
    a = parser.add_argument

    def boolean(name: str, default: str, help: str | None = None) -> None:
        # Go's bool flags: `--flag`, `--flag=true`, `--flag false`.
        a(name, default=default, nargs="?", const="true", metavar="BOOL", help=help)

    a("--cluster-name", required=True, help="name of the cluster (mandatory); tags every AWS "
      "resource the controller owns")
    a("--kubeconfig", help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    a("--api-server-startup-timeout", default="30s",
      help="how long start-up retries an unreachable API server before exiting (0: try once)")
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
    boolean("--enable-backend-security-group", "true",
            "attach a shared backend security group to load balancers with a managed frontend "
            "group and admit it on the targets' groups")
    a("--backend-security-group", default="",
      help="use this security group (ID) as the shared backend group instead of creating one")
    boolean("--enable-manage-backend-security-group-rules", "false",
            "manage the targets' rules for load balancers with user-given security groups too "
            "(the default of the manage-backend-security-group-rules annotations)")
    boolean("--disable-restricted-sg-rules", "false",
            "admit load balancers on every port of the targets' groups, not only the target "
            "ports")
    a("--service-target-eni-security-group-tags", default="",
      help="key=value,...: of a target ENI's security groups, the one carrying these tags "
      "(besides the cluster tag) gets the rules")
    boolean("--enable-leader-election", "true")
    a("--leader-election-id", default=DEFAULT_LEADER_ELECTION_ID)
    a("--leader-election-namespace", help="namespace of the Lease (default: the pod's)")
    a("--leader-election-lease-duration", default="15s")
    a("--leader-election-renew-deadline", default="10s")
    a("--leader-election-retry-period", default="2s")
    a("--metrics-bind-addr", default=DEFAULT_METRICS_BIND_ADDR)
    boolean("--metrics-secure", "false",
            "serve /metrics over HTTPS, to callers the API server authenticates (TokenReview) "
            "and authorizes for GET /metrics (SubjectAccessReview)")
    a("--metrics-cert-dir", help=f"directory with {CERT_FILE} and {KEY_FILE} for "
      "--metrics-secure (default: a self-signed certificate made at start)")
    a("--health-probe-bind-addr", default=DEFAULT_HEALTH_PROBE_BIND_ADDR)
    for kind in ("ingress", "service", "targetgroupbinding"):
        a(f"--{kind}-max-concurrent-reconciles", default=str(DEFAULT_MAX_CONCURRENT_RECONCILES))
    a("--targetgroupbinding-max-exponential-backoff-delay", default="16m40s")
    a("--targetgroupbinding-requeue-duration", default="15s",
      help="while pods wait for their readiness gates, how often target health is read again")
    boolean("--enable-pod-readiness-gate-inject", "true",
            "add target-health readiness gates to new pods in namespaces labelled "
            "elbv2.k8s.aws/pod-readiness-gate-inject=enabled")
    boolean("--enable-service-mutator-webhook", "false",
            "give LoadBalancer Services without spec.loadBalancerClass --load-balancer-class "
            "(needs the mservice webhook in the MutatingWebhookConfiguration)")
    a("--sync-period", default="10h")
    a("--log-level", default="info")
    boolean("--enable-checkpoints", "true",
            "skip unchanged objects after a restart, verifying them in a paced low-priority lane")
    a("--checkpoint-verify-qps", default=None,
      help="most verification reconciles per second per controller for checkpoint-matched "
           "objects (default: --checkpoint-verify-aws-qps, which paces them by their AWS "
           "calls; 2 when that is 0)")
    a("--checkpoint-verify-burst", default="5")
    a("--checkpoint-max-wait", default="10m",
      help="a deferred verification waits at most this long behind real changes")
    a("--checkpoint-verify-aws-qps", default="5",
      help="AWS calls per second all verifications together may make (0: no limit)")
    a("--checkpoint-verify-aws-burst", default="10")
    a("--webhook-bind-port", default=str(DEFAULT_WEBHOOK_BIND_PORT),
      help="port the admission webhook server listens on (0: no webhook server)")
    a("--webhook-bind-host", default="",
      help="address the webhook server listens on (default: every interface)")
    a("--webhook-cert-dir", default=DEFAULT_WEBHOOK_CERT_DIR,
      help="directory of the webhook serving certificate and key")
    a("--webhook-cert-file", default="tls.crt", help="certificate file in --webhook-cert-dir")
    a("--webhook-key-file", default="tls.key", help="key file in --webhook-cert-dir")
    a("--webhook-tls-mode", default="self-managed",
      help="self-managed: the controller keeps its own CA and certificate in "
      "--webhook-secret-name and injects the CA into its webhook configurations; files: serve "
      "the files in --webhook-cert-dir (e.g. mounted from cert-manager), reloaded on change")
    a("--webhook-secret-name", default=DEFAULT_WEBHOOK_SECRET_NAME,
      help="Secret (in the controller's namespace) of the self-managed certificate")
    a("--webhook-service-name", default=DEFAULT_WEBHOOK_SERVICE_NAME,
      help="Service the API server calls the webhooks through (the certificate's DNS names)")
    a("--webhook-configuration-name", default=DEFAULT_WEBHOOK_CONFIGURATION_NAME,
      help="Mutating- and ValidatingWebhookConfiguration that get the self-managed CA bundle")


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
        flag = _flag(key)
        if key in _BOOL_FLAGS:
            values[key] = _bool(flag, value)
        elif key in _DURATION_FLAGS:
            values[key] = _convert(flag, parse_duration, value)
        elif key in ("default_tags", "service_target_eni_security_group_tags"):
            values[key] = _convert(flag, parse_key_values, value)
        elif key == "external_managed_tags":
            values[key] = tuple(sorted({k.strip() for k in value.split(",") if k.strip()}))
        elif key == "aws_api_endpoints":
            values[key] = _convert(flag, parse_endpoints, value)
        elif key == "aws_api_throttle":
            values[key] = _convert(flag, parse_throttle, value or "")
        elif key in ("kubeconfig", "watch_namespace", "checkpoint_verify_qps") and value == "":
            values[key] = None  # Go's empty flag value: the default
        else:
            values[key] = value
    try:
        return ControllerConfig.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc)) from None


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    if not first["loc"]:  # a rule across flags names its flags itself
        return message
    flag = _flag(str(first["loc"][0]))
    return message if message.startswith(flag) else f"{flag}: {message}"


def parse_config(argv: Sequence[str]) -> ControllerConfig:
    """Parse flags alone (used by tests and by `aiolbc run`)."""
    parser = argparse.ArgumentParser(prog="aiolbc run")
    add_flags(parser)
    return config_from_args(parser.parse_args(list(argv)))
