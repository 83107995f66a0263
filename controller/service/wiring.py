"""Wiring of the Service controller into a Manager (its settings are in settings.py): the
informers and indexes it reads, its watches (with the views that tell changes from anyone's
status and checkpoint writes), the queue's paced LOW lane, the deployer and the reconciler."""

from __future__ import annotations

from controller import informers
from controller.apis import SERVICE_FINALIZER, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, RegionSnapshot
from controller.deploy import StackDeployer
from controller.lbcmetrics import counting_recorder, talking
from controller.networking.backend import BackendSecurityGroup, StackKey
from controller.reconcilers import controller_options
from controller.service.reconciler import ServiceReconciler
from controller.service.settings import Settings
from controller.service.watches import (
    BACKEND_SERVICE_INDEX,
    SERVICE_STACK_INDEX,
    backend_service_index,
    backend_view,
    binding_view,
    service_for_binding,
    service_stack_index,
    service_view,
    services_for_backend,
    services_we_build,
)
from controller.targetgroupaccess import (
    TARGET_GROUP_INDEX,
    TargetGroupLookup,
    binding_target_group_index,
)
from runtime.builder import ControllerBuilder
from runtime.controller import Controller
from runtime.manager import Manager
from runtime.objects import Obj, has_finalizer, name_of, namespace_of
from runtime.predicates import ViewChanged
from runtime.resources import SERVICES

CONTROLLER_NAME = "service"  # upstream's name, so dashboards match


def build_reconciler(manager: Manager, *, pool: AWSClientPool, settings: Settings,
                     deployer: StackDeployer | None = None,
                     backend: BackendSecurityGroup | None = None,
                     snapshot: RegionSnapshot | None = None) -> ServiceReconciler:
    """The reconciler on the manager's shared informers (with the indexes it reads).
    `deployer` may be shared with another controller; by default it gets its own (with its own
    cache of the ARNs it owns). `backend`: the shared backend security group, when the Ingress
    controller of this process shares it; `snapshot`: the process's region snapshot,
    likewise."""
    services = informers.informer(manager, SERVICES)
    services.add_indexer(BACKEND_SERVICE_INDEX, backend_service_index)
    if deployer is None:
        if backend is None:
            backend = BackendSecurityGroup(cluster=settings.cluster.name,
                                           controller_id=settings.cluster.controller_id,
                                           tags=settings.defaults.tags, clock=manager.clock,
                                           delete_backoff=settings.security_group_backoff)
        deployer = StackDeployer(pool, settings.deployer, clock=manager.clock, backend=backend,
                                 snapshot=snapshot)
    finalizer = settings.model.finalizer
    deployer.backend.add_claimants(lambda: _claimed_stacks(services.store.list(), finalizer))
    bindings = manager.informer(TARGETGROUPBINDINGS)
    bindings.add_indexer(SERVICE_STACK_INDEX, service_stack_index)
    bindings.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    return ServiceReconciler(
        client=manager.client, services=services.store, bindings=bindings.store,
        deployer=deployer,
        recorder=counting_recorder(manager.recorder, manager.registry), settings=settings.model,
        checkpoints=settings.lanes.checkpoints, lane=settings.lanes.lane, clock=manager.clock,
        cleanup_poll=settings.cleanup_poll,
        stabilization_interval=settings.stabilization_interval,
        target_groups=TargetGroupLookup(pool, clock=manager.clock))


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings,
          deployer: StackDeployer | None = None,
          backend: BackendSecurityGroup | None = None,
          snapshot: RegionSnapshot | None = None) -> Controller:
    """Register the Service controller (`build_reconciler` says what the options are)."""
    reconciler = build_reconciler(manager, pool=pool, settings=settings, deployer=deployer,
                                  backend=backend, snapshot=snapshot)
    return (ControllerBuilder(manager, CONTROLLER_NAME)
            .for_(informers.informer(manager, SERVICES), priority=reconciler.priority,
                  predicates=[services_we_build(
                      settings.config.load_balancer_class,
                      load_balancer_only=settings.model.load_balancer_only,
                      by_annotation=settings.model.by_annotation,
                      finalizer=settings.model.finalizer),
                      ViewChanged(service_view)])
            # Default priorities: a managed binding deleted or edited by hand wakes its Service
            # at NORMAL (and is put back); initial-list adds and resyncs stay LOW, so that they
            # never lift a Service's paced verification into a NORMAL reconcile the checkpoint
            # would skip.
            .watches(manager.informer(TARGETGROUPBINDINGS), service_for_binding,
                     predicates=[ViewChanged(binding_view)])
            # A weighted action's backend Service (any type) wakes the Services naming it.
            .watches(informers.informer(manager, SERVICES),
                     services_for_backend(informers.informer(manager, SERVICES).store),
                     predicates=[ViewChanged(backend_view)])
            .with_options(controller_options(settings.lanes, settings.config.workers,
                                             gate=pool.verification_budget))
            .complete(talking(manager.registry, manager.clock, CONTROLLER_NAME, reconciler)))


def _claimed_stacks(services: list[Obj], finalizer: str = SERVICE_FINALIZER
                    ) -> list[StackKey]:
    """Services carrying our finalizer: their stacks may still use the backend group."""
    return [("service", f"{namespace_of(s)}/{name_of(s)}") for s in services
            if has_finalizer(s, finalizer)]


__all__ = ["CONTROLLER_NAME", "Settings", "build_reconciler", "setup"]
