"""The Service controller's settings: its flags (`ServiceConfig`: one declaration each, next to
the field it fills) and `Settings`, what `setup` takes: those flags whole, with the pieces every
controller shares nested (cluster scope, stack defaults, backend security group, lanes, feature
gates)."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller import flagrules
from controller.defaults import DEFAULT_LOAD_BALANCER_CLASS, DEFAULT_MAX_CONCURRENT_RECONCILES
from controller.reconcilers import MAX_CONCURRENT_RECONCILES, Workers
from controller.service.model import ModelSettings
from controller.stacksettings import StackSettings
from runtime import flagvalues
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
class Settings(StackSettings):
    config: ServiceConfig = field(default_factory=ServiceConfig)
    cleanup_poll: float = 5.0  # re-check while managed bindings are being deleted

    @property
    def model(self) -> ModelSettings:
        return ModelSettings(cluster=self.cluster,
                             load_balancer_class=self.config.load_balancer_class,
                             defaults=self.defaults, backend_sg=self.backend_sg, gates=self.gates)


__all__ = ["ServiceConfig", "Settings"]
