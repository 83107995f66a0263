"""The settings pieces several controllers share, nested whole in each kind's settings instead of
repeated field by field: which cluster, region and VPC the controller acts for
(`ClusterScope`), what a stack takes when its annotations leave a value out (`StackDefaults`,
which declares its flags: one default, one parser, one help each), and how a new load balancer
is waited for (`StabilizationMonitor`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller import flagrules
from controller.defaults import DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL, DEFAULT_SSL_POLICY
from controller.model.loadbalancer import Scheme
from controller.model.targetgroup import TargetType
from runtime import flags, flagvalues
from runtime.featuregates import FeatureGates
from runtime.flags import flag


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterScope:
    """`name`: the cluster the controller tags what it owns with. `region`: the region its AWS
    clients use, as resolved from the flag or the environment. `vpc_id`: the cluster's VPC
    ("" when not given: controllers that need it refuse to start without it). `controller_id`:
    which of several controllers of the cluster this is ("": the default one, whose rules and
    groups are named as before there was a choice)."""

    name: str
    region: str = ""
    vpc_id: str = ""
    controller_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StabilizationMonitor:
    """How the Ingress and Service controllers wait for a new load balancer to leave
    `provisioning` before they set its capacity reservation: they come back after the interval
    (never part of a stack: it says when, not what)."""

    interval: float = flag(
        "--lb-stabilization-monitor-interval",
        default=DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0),
        help="how often a load balancer still provisioning is looked at again before its "
        "capacity reservation is set")


@dataclass(frozen=True, slots=True, kw_only=True)
class StackDefaults:
    """Controller-wide settings that fill in what an Ingress's or a Service's annotations leave
    out; part of the pure stage, so of the checkpoint."""

    scheme: Scheme = flag(
        "--default-load-balancer-scheme", default="internal",
        parse=flagvalues.choice("internal", "internet-facing"),
        help="scheme of load balancers whose annotations do not name one")
    target_type: TargetType = flag(
        "--default-target-type", default="instance", parse=flagvalues.choice("instance", "ip"),
        help="target type of target groups whose annotations do not name one")
    ssl_policy: str = flag(
        "--default-ssl-policy", default=DEFAULT_SSL_POLICY, parse=str,
        help="SSL policy of TLS listeners whose annotations do not name one")
    # On every resource, winning over the tags annotations (as upstream).
    tags: Mapping[str, str] = flag(
        "--default-tags", default={}, parse=flagvalues.parse_key_values,
        check=flagrules.tags_problem, help="tags on every AWS resource: key=value,...")
    external_managed_tags: frozenset[str] = flag(
        "--external-managed-tags", default=frozenset(), parse=flagvalues.parse_names,
        check=flagrules.tag_keys_problem,
        help="tag keys managed outside the controller: never removed, refused in annotations")

    def __post_init__(self) -> None:
        flags.freeze(self)

    def check(self) -> str | None:
        shared = sorted(set(self.external_managed_tags) & set(self.tags))
        if shared:
            return (f"--external-managed-tags: tag key {shared[0]!r} is also in --default-tags; "
                    "a key is either set by the controller or managed outside it")
        return None


def enhanced_default_behavior(gates: FeatureGates) -> bool:
    """Upstream's EnhancedDefaultBehavior gate: removing the mutual-authentication or ALPN
    annotation turns the setting off. Settings made without the controller's declared gates
    (unit tests, tools) get upstream's default, off."""
    if not gates.declared:
        return False
    return gates.enabled("EnhancedDefaultBehavior")


__all__ = ["ClusterScope", "StackDefaults", "enhanced_default_behavior"]
