"""What every controller of load-balancer stacks (Service, Ingress, and Gateway next) is set up
with beside its own flags: the pieces shared whole (cluster scope, stack defaults, backend
security group, lanes, feature gates) and the deployer's retry pacing. Each kind's `Settings`
extends it with its own flag section and what only it needs."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.defaults import DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL
from controller.deploy import DeployerSettings
from controller.gates import enabled as gate_enabled
from controller.networking.settings import BackendSettings
from controller.reconcilers import LaneSettings
from controller.settings import ClusterScope, StackDefaults
from runtime.featuregates import FeatureGates


@dataclass(frozen=True, slots=True, kw_only=True)
class StackSettings:
    cluster: ClusterScope
    defaults: StackDefaults = field(default_factory=StackDefaults)
    backend_sg: BackendSettings = field(default_factory=BackendSettings)
    lanes: LaneSettings = field(default_factory=LaneSettings)
    gates: FeatureGates = field(default_factory=FeatureGates)
    in_use_backoff: float = 0.2  # a target group still in use: first retry after this
    security_group_backoff: float = 1.0  # a group still in use: first retry after this
    # --lb-stabilization-monitor-interval: a load balancer still provisioning is looked at
    # again after this long, before its capacity reservation is set.
    stabilization_interval: float = DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL

    @property
    def deployer(self) -> DeployerSettings:
        return DeployerSettings(cluster_name=self.cluster.name,
                                in_use_backoff=self.in_use_backoff,
                                security_group_backoff=self.security_group_backoff,
                                rgt_api=gate_enabled(self.gates, "EnableRGTAPI"))


__all__ = ["StackSettings"]
