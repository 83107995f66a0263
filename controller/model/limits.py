"""What AWS would refuse, known before any call: the attribute keys each kind of load balancer
and target group takes (the ELBv2 API reference's LoadBalancerAttribute and
TargetGroupAttribute), the lengths of rule condition values, and the account quotas a stack must
fit in (AWS's default quotas, which an account may have raised: `Quotas` is configurable).

A stack that breaks one fails in the pure stage with one message, so a bad object gets no AWS
resource at all instead of a load balancer and target groups followed by a call that fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Load balancer attributes by type.
_LB_COMMON: Final = frozenset({
    "deletion_protection.enabled", "access_logs.s3.enabled", "access_logs.s3.bucket",
    "access_logs.s3.prefix", "ipv6.deny_all_igw_traffic", "zonal_shift.config.enabled",
})
LOAD_BALANCER_ATTRIBUTES: Final[dict[str, frozenset[str]]] = {
    "application": _LB_COMMON | {
        "idle_timeout.timeout_seconds", "client_keep_alive.seconds",
        "connection_logs.s3.enabled", "connection_logs.s3.bucket", "connection_logs.s3.prefix",
        "health_check_logs.s3.enabled", "health_check_logs.s3.bucket",
        "health_check_logs.s3.prefix", "routing.http.desync_mitigation_mode",
        "routing.http.drop_invalid_header_fields.enabled",
        "routing.http.preserve_host_header.enabled",
        "routing.http.x_amzn_tls_version_and_cipher_suite.enabled",
        "routing.http.xff_client_port.enabled", "routing.http.xff_header_processing.mode",
        "routing.http2.enabled", "waf.fail_open.enabled",
    },
    "network": _LB_COMMON | {
        "load_balancing.cross_zone.enabled", "dns_record.client_routing_policy",
        "secondary_ips.auto_assigned.per_subnet",
    },
}

# Target group attributes by the kind of load balancer the protocol belongs to.
_TG_COMMON: Final = frozenset({
    "deregistration_delay.timeout_seconds", "stickiness.enabled", "stickiness.type",
    "load_balancing.cross_zone.enabled",
    "target_group_health.dns_failover.minimum_healthy_targets.count",
    "target_group_health.dns_failover.minimum_healthy_targets.percentage",
    "target_group_health.unhealthy_state_routing.minimum_healthy_targets.count",
    "target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage",
})
TARGET_GROUP_ATTRIBUTES: Final[dict[str, frozenset[str]]] = {
    "application": _TG_COMMON | {
        "load_balancing.algorithm.type", "load_balancing.algorithm.anomaly_mitigation",
        "slow_start.duration_seconds", "stickiness.app_cookie.cookie_name",
        "stickiness.app_cookie.duration_seconds", "stickiness.lb_cookie.duration_seconds",
    },
    "network": _TG_COMMON | {
        "deregistration_delay.connection_termination.enabled", "preserve_client_ip.enabled",
        "proxy_protocol_v2.enabled",
        "target_health_state.unhealthy.connection_termination.enabled",
        "target_health_state.unhealthy.draining_interval_seconds",
    },
}
ALB_PROTOCOLS: Final = frozenset({"HTTP", "HTTPS"})

# Rule conditions (ListenerRule / RuleCondition): each value at most 128 characters.
MAX_CONDITION_VALUE_LENGTH: Final = 128


def unknown_attributes(keys: set[str] | frozenset[str], allowed: frozenset[str]) -> list[str]:
    return sorted(set(keys) - allowed)


@dataclass(frozen=True, slots=True, kw_only=True)
class Quotas:
    """AWS's default quotas (Elastic Load Balancing quotas, per load balancer); the ALB ones an
    Ingress group is planned against come from the Ingress flags (`IngressConfig`)."""

    listeners_per_load_balancer: int = 50
    rules_per_application_load_balancer: int = 100  # not counting default rules
    target_groups_per_application_load_balancer: int = 100
    certificates_per_application_load_balancer: int = 25  # not counting default certificates
    security_groups_per_load_balancer: int = 5
    rules_per_listener: int = 100  # not counting the default rule
    certificates_per_listener: int = 25  # not counting the default certificate
    condition_values_per_rule: int = 5


class QuotaExceeded(ValueError):
    """A stack past one of AWS's quotas: which (`quota`, as the docs name it), its value, how
    much the stack needs and the flag that sets it."""

    def __init__(self, *, where: str, quota: str, limit: int, needed: int,
                 flag: str | None = None) -> None:
        self.where, self.quota, self.limit, self.needed, self.flag = (
            where, quota, limit, needed, flag)
        setting = f" ({flag})" if flag else ""
        super().__init__(f"{where}: {needed} {quota}, more than the quota of {limit}{setting}")


__all__ = [
    "ALB_PROTOCOLS",
    "LOAD_BALANCER_ATTRIBUTES",
    "MAX_CONDITION_VALUE_LENGTH",
    "TARGET_GROUP_ATTRIBUTES",
    "QuotaExceeded",
    "Quotas",
    "unknown_attributes",
]
