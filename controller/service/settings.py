"""The Service controller's settings: its flags (`ServiceConfig`: one declaration each, next to
the field it fills) and `Settings`, what `setup` takes: those flags whole, with the pieces every
controller shares nested (cluster scope, stack defaults, backend security group, lanes, feature
gates)."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller import flagrules
from controller.defaults import DEFAULT_LOAD_BALANCER_CLASS, DEFAULT_MAX_CONCURRENT_RECONCILES
from controller.deploy import DeployerSettings
from controller.networking.settings import BackendSettings
from controller.reconcilers import MAX_CONCURRENT_RECONCILES, LaneSettings, Workers
from controller.service.model import ModelSettings
from controller.settings import ClusterScope, StackDefaults
from runtime import flagvalues
from runtime.featuregates import FeatureGates
from runtime.flags import flag


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    load_balancer_class: str = flag(
        "--load-balancer-class", default=DEFAULT_LOAD_BALANCER_CLASS, parse=str,
        check=flagrules.qualified_name_problem,
        help="the spec.loadBalancerClass of the LoadBalancer Services this controller serves")
    max_concurrent_reconciles: int = flag(
        "--service-max-concurrent-reconciles", default=DEFAULT_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many Services are reconciled at once")

    @property
    def workers(self) -> Workers:
        return Workers(max_concurrent_reconciles=self.max_concurrent_reconciles)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    cluster: ClusterScope
    config: ServiceConfig = field(default_factory=ServiceConfig)
    defaults: StackDefaults = field(default_factory=StackDefaults)
    backend_sg: BackendSettings = field(default_factory=BackendSettings)
    lanes: LaneSettings = field(default_factory=LaneSettings)
    gates: FeatureGates = field(default_factory=FeatureGates)
    cleanup_poll: float = 5.0  # re-check while managed bindings are being deleted
    in_use_backoff: float = 0.2  # a target group still in use: first retry after this
    security_group_backoff: float = 1.0  # a group still in use: first retry after this

    @property
    def model(self) -> ModelSettings:
        return ModelSettings(cluster=self.cluster,
                             load_balancer_class=self.config.load_balancer_class,
                             defaults=self.defaults, backend_sg=self.backend_sg, gates=self.gates)

    @property
    def deployer(self) -> DeployerSettings:
        return DeployerSettings(cluster_name=self.cluster.name,
                                in_use_backoff=self.in_use_backoff,
                                security_group_backoff=self.security_group_backoff)


__all__ = ["ServiceConfig", "Settings"]
