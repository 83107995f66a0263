"""The feature gates where they act (`settings.gates`, declared in `config/featuregates.py`).
Settings built without the process's gates (a test's, or a tool's) have none declared: a gate
then acts in upstream's default state, as `aiolbc run` with no `--feature-gates` does."""

from __future__ import annotations

from typing import Final

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
    "LBCapacityReservation": True,
}


def enabled(gates: FeatureGates, name: str) -> bool:
    try:
        return gates.enabled(name)
    except KeyError:
        return UPSTREAM_DEFAULTS[name]


__all__ = ["UPSTREAM_DEFAULTS", "enabled"]
