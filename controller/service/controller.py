"""Wiring of the Service controller into a Manager: informers, indexes, event mapping with the
checkpoint priority, the queue's paced LOW lane, the deployer and the reconciler."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.config import DEFAULT_LOAD_BALANCER_CLASS, ConfigError, ControllerConfig
from controller.deploy import DeployerSettings, StackDeployer
from controller.lanes import paced_controller
from controller.service.annotations import ServiceDefaults
from controller.service.bindings import (
    SERVICE_STACK_INDEX,
    service_for_binding,
    service_stack_index,
)
from controller.service.model import ModelSettings
from controller.service.reconciler import ServiceReconciler
from runtime.controller import Controller
from runtime.handlers import EnqueueFromMap
from runtime.manager import Manager
from runtime.resources import SERVICES

CONTROLLER_NAME = "service"  # upstream's name, so dashboards match


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceSettings:
    cluster_name: str
    region: str
    vpc_id: str
    deployer: DeployerSettings
    load_balancer_class: str = DEFAULT_LOAD_BALANCER_CLASS
    defaults: ServiceDefaults = field(default_factory=ServiceDefaults)
    max_concurrent_reconciles: int = 3
    checkpoints: bool = True
    # False: checkpoint skips without the paced LOW lane — every event NORMAL, one FIFO, as in
    # upstream's unmerged prototype (PR #3821); kept to measure what the lane adds.
    lane: bool = True
    verify_qps: float | None = 2.0  # pace of LOW-lane verifications (None: unpaced)
    verify_burst: int = 5
    verify_max_wait: float | None = 600.0
    cleanup_poll: float = 5.0  # re-check while managed bindings are being deleted

    @classmethod
    def from_config(cls, config: ControllerConfig, *, region: str) -> ServiceSettings:
        """Settings from `aiolbc run`'s flags (`region` as resolved from the flag or the
        environment). The VPC is needed for subnet discovery."""
        if not config.aws_vpc_id:
            raise ConfigError("--aws-vpc-id: required by the Service controller")
        defaults = ServiceDefaults.from_config(config)
        return cls(
            cluster_name=config.cluster_name, region=region, vpc_id=config.aws_vpc_id,
            deployer=DeployerSettings(cluster_name=config.cluster_name),
            load_balancer_class=config.load_balancer_class, defaults=defaults,
            max_concurrent_reconciles=config.service_max_concurrent_reconciles,
            checkpoints=config.enable_checkpoints, verify_qps=config.checkpoint_verify_qps,
            verify_burst=config.checkpoint_verify_burst,
            verify_max_wait=config.checkpoint_max_wait)

    @property
    def low_lane_qps(self) -> float | None:
        """The pace of the queue's LOW lane; None (unpaced) when nothing is ever LOW."""
        return self.verify_qps if self.checkpoints and self.lane else None

    @property
    def model(self) -> ModelSettings:
        return ModelSettings(cluster_name=self.cluster_name, region=self.region,
                             vpc_id=self.vpc_id, load_balancer_class=self.load_balancer_class,
                             defaults=self.defaults)


def setup(manager: Manager, *, pool: AWSClientPool, settings: ServiceSettings,
          deployer: StackDeployer | None = None) -> Controller:
    """Register the Service controller. `deployer` may be shared with another controller;
    by default it gets its own (with its own cache of the ARNs it owns)."""
    services = manager.informer(SERVICES)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    bindings.add_indexer(SERVICE_STACK_INDEX, service_stack_index, exist_ok=True)
    reconciler = ServiceReconciler(
        client=manager.client, services=services.store, bindings=bindings.store,
        deployer=deployer or StackDeployer(pool, settings.deployer, clock=manager.clock),
        recorder=manager.recorder, settings=settings.model, checkpoints=settings.checkpoints,
        lane=settings.lane, clock=manager.clock, cleanup_poll=settings.cleanup_poll)
    controller = paced_controller(
        manager, CONTROLLER_NAME, reconciler,
        max_concurrent_reconciles=settings.max_concurrent_reconciles,
        low_lane_qps=settings.low_lane_qps, verify_burst=settings.verify_burst,
        verify_max_wait=settings.verify_max_wait,
        gate=pool.verification_budget)
    controller.watch(services, EnqueueFromMap(controller, reconciler.requests_for_service,
                                              priority=reconciler.priority))
    # Default priorities: a managed binding deleted or edited by hand wakes its Service at
    # NORMAL (and is put back); initial-list adds and resyncs stay LOW, so that they never lift
    # a Service's paced verification into a NORMAL reconcile the checkpoint would skip.
    controller.watch(bindings, EnqueueFromMap(controller, service_for_binding))
    manager.add_controller(controller)
    return controller


__all__ = ["CONTROLLER_NAME", "ServiceSettings", "setup"]
