"""The feature gates where they act (`settings.gates`, declared in `config/featuregates.py`).
Settings built without the process's gates (a test's, or a tool's) have none declared: a gate
then acts in upstream's default state, as `aiolbc run` with no `--feature-gates` does."""

from __future__ import annotations

from typing import Final, TypedDict

from runtime.featuregates import FeatureGates

# Upstream v3.5.0's defaults of the gates aiolbc acts on (`pkg/config/feature_gates.go`).
UPSTREAM_DEFAULTS: Final = {
    "EnableServiceController": True,
    "EnableIPTargetType": True,
    "NLBSecurityGroup": True,
    "EnableDefaultTagsLowPriority": False,
    "EndpointsFailOpen": True,
    "ServiceTypeLoadBalancerOnly": False,
    "EnableTCPUDPListener": False,
    "EnableCertificateManagement": False,
    "EnableRGTAPI": False,
    "ListenerRulesTagging": True,
    "WeightedTargetGroups": True,
    "SubnetsClusterTagCheck": True,
    "ALBSingleSubnet": False,
    "NLBHealthCheckAdvancedConfig": True,
    "SubnetDiscoveryByReachability": True,
    "IngressPlanAnnotation": False,
    "LBCapacityReservation": True,
    "ALBTargetControlAgent": False,
}


def enabled(gates: FeatureGates, name: str) -> bool:
    try:
        return gates.enabled(name)
    except KeyError:
        return UPSTREAM_DEFAULTS[name]


class StackContextGates(TypedDict):
    """The gates the deployer and the resolve stage act on, carried by each stack's context
    (`controller.model.StackContext`), so that a changed gate is a changed stack."""

    listener_rules_tagging: bool
    subnets_cluster_tag_check: bool
    alb_single_subnet: bool
    nlb_health_check_advanced_config: bool
    subnet_discovery_by_reachability: bool


def stack_context(gates: FeatureGates) -> StackContextGates:
    return StackContextGates(
        listener_rules_tagging=enabled(gates, "ListenerRulesTagging"),
        subnets_cluster_tag_check=enabled(gates, "SubnetsClusterTagCheck"),
        alb_single_subnet=enabled(gates, "ALBSingleSubnet"),
        nlb_health_check_advanced_config=enabled(gates, "NLBHealthCheckAdvancedConfig"),
        subnet_discovery_by_reachability=enabled(gates, "SubnetDiscoveryByReachability"))


__all__ = ["UPSTREAM_DEFAULTS", "StackContextGates", "enabled", "stack_context"]
