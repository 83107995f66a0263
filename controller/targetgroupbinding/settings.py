"""The TargetGroupBinding controller's settings: its flags (`TargetGroupBindingConfig`: one
declaration each, next to the field it fills) and `Settings`, what `setup` takes: those flags
whole, with the pieces every controller shares nested (cluster scope, lanes, feature gates,
where `spec.networking` rules are kept)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from controller import flagrules
from controller.apis import DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME
from controller.defaults import (
    DEFAULT_MAX_BACKOFF,
    DEFAULT_MAX_CONCURRENT_RECONCILES,
    DEFAULT_TGB_REQUEUE_DURATION,
)
from controller.networking.policy import EVERY_NAMESPACE, NetworkingPolicy
from controller.networking.settings import NetworkingSettings
from controller.reconcilers import MAX_CONCURRENT_RECONCILES, LaneSettings, Workers
from controller.settings import ClusterScope
from runtime import flagvalues
from runtime.featuregates import FeatureGates
from runtime.flags import flag

# What a container's environment variable may be named (Kubernetes' C identifier rule, which
# `kubectl` and the API server check for env[].name).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(name: str) -> str | None:
    if not _ENV_NAME.fullmatch(name):
        return f"{name!r} is not an environment variable name (letters, digits and '_', " \
               "not starting with a digit)"
    return None


def _namespaces(names: frozenset[str]) -> str | None:
    for name in sorted(names):
        problem = None if name == EVERY_NAMESPACE else flagrules.dns_label_problem(name)
        if problem:
            return problem
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetGroupBindingConfig:
    max_concurrent_reconciles: int = flag(
        "--targetgroupbinding-max-concurrent-reconciles",
        default=DEFAULT_MAX_CONCURRENT_RECONCILES, parse=flagvalues.parse_int,
        check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many TargetGroupBindings are reconciled at once")
    max_exponential_backoff_delay: float = flag(
        "--targetgroupbinding-max-exponential-backoff-delay", default=DEFAULT_MAX_BACKOFF,
        parse=flagvalues.parse_duration, check=flagvalues.greater_than(0),
        help="the longest wait before a failed TargetGroupBinding is retried")
    # The administrator's grant: these namespaces' bindings may ask `spec.networking` for any
    # source and port (controller/networking/policy.py); "*" is every namespace.
    networking_unrestricted_namespaces: frozenset[str] = flag(
        "--targetgroupbinding-networking-unrestricted-namespaces", default=frozenset(),
        parse=flagvalues.parse_names, check=_namespaces,
        help="namespaces whose TargetGroupBindings' spec.networking may admit any CIDR, "
        "security group and port ('*': every namespace, as upstream); other namespaces may "
        "admit only their own load balancers' security groups on their target and "
        "health-check ports")
    # How soon a binding whose pods wait for their readiness gates looks at target health again.
    requeue_duration: float = flag(
        "--targetgroupbinding-requeue-duration", default=DEFAULT_TGB_REQUEUE_DURATION,
        parse=flagvalues.parse_duration, check=flagvalues.greater_than(0),
        help="while pods wait for their readiness gates, how often target health is read again")

    max_targets_per_target_group: int = flag(
        "--max-targets-per-target-group", default=0, parse=flagvalues.parse_int,
        check=flagvalues.within(0, 1_000_000),
        help="the most targets a binding fills its target group to, so that a target group "
        "quota does not block reconciliation; new targets past it wait (0: no limit)")
    # aiolbc reads EndpointSlices only (the Endpoints API is deprecated since Kubernetes 1.33).
    enable_endpoint_slices: bool = flag(
        "--enable-endpoint-slices", default=True, parse=flagvalues.parse_bool,
        check=lambda on: None if on else "false is not supported: aiolbc reads ip targets from "
        "EndpointSlices only",
        help="read ip targets from EndpointSlices (the only source aiolbc reads)")

    # Read by the pod webhook too, which injects the IDs (app.py hands it this section's value).
    quic_environment_variable_name: str = flag(
        "--quic-environment-variable-name", default=DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME,
        parse=str, check=_env_name,
        help="the environment variable a pod's QUIC server ID is injected into and read from "
        "(targets of QUIC and TCP_QUIC target groups are registered with it)")

    @property
    def workers(self) -> Workers:
        return Workers(max_concurrent_reconciles=self.max_concurrent_reconciles,
                       max_backoff=self.max_exponential_backoff_delay)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """`cluster`: target groups tagged for another cluster are refused, and so are those
    outside its VPC unless a binding names theirs in `vpcID`."""

    cluster: ClusterScope
    config: TargetGroupBindingConfig = field(default_factory=TargetGroupBindingConfig)
    lanes: LaneSettings = field(default_factory=LaneSettings)
    gates: FeatureGates = field(default_factory=FeatureGates)
    # How long after its last full look (the checkpoint-timestamp) a verification takes an
    # unchanged binding's registered targets and networking rules as they were, reading only
    # its target group; None: every verification reads them (reconciler.py, "verifications").
    targets_trusted_for: float | None = None
    # Where `spec.networking` rules are kept (the cluster and VPC); None: not acted on.
    networking: NetworkingSettings | None = None

    @property
    def networking_policy(self) -> NetworkingPolicy | None:
        """What `spec.networking` may ask for (None: not acted on)."""
        if self.networking is None:
            return None
        return NetworkingPolicy(
            cluster=self.networking.cluster.name, vpc_id=self.networking.cluster.vpc_id,
            controller_id=self.networking.cluster.controller_id,
            unrestricted_namespaces=self.config.networking_unrestricted_namespaces,
            backend_group_id=self.networking.backend.group_id,
            every_port=not self.networking.backend.restricted_rules)


__all__ = ["Settings", "TargetGroupBindingConfig"]
