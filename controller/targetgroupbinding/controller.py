"""Wiring of the TargetGroupBinding controller into a Manager: informers, indexes, event
mapping, the queue's LOW lane and the reconciler."""

from __future__ import annotations

from dataclasses import dataclass

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.lanes import paced_controller
from controller.targetgroupbinding.multicluster import TargetTracker
from controller.targetgroupbinding.reconciler import (
    SERVICE_INDEX,
    SLICE_SERVICE_INDEX,
    TARGET_TYPE_INDEX,
    TargetGroupBindingReconciler,
    slice_service_index,
    tgb_service_index,
    tgb_target_type_index,
)
from controller.targetgroupbinding.targetgroups import TargetGroups
from runtime.controller import Controller
from runtime.handlers import EnqueueForObject, EnqueueFromMap
from runtime.manager import Manager
from runtime.resources import ENDPOINTSLICES, NODES, SERVICES

CONTROLLER_NAME = "targetGroupBinding"  # upstream's name, so dashboards match


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetGroupBindingSettings:
    max_concurrent_reconciles: int = 3
    max_backoff: float = 1000.0  # --targetgroupbinding-max-exponential-backoff-delay
    checkpoints: bool = True
    verify_qps: float | None = 2.0  # pace of LOW-lane verifications (None: unpaced)
    verify_burst: int = 5
    verify_max_wait: float | None = 600.0


def build_reconciler(manager: Manager, *, pool: AWSClientPool,
                     settings: TargetGroupBindingSettings | None = None
                     ) -> TargetGroupBindingReconciler:
    """The reconciler on the manager's shared informers (and their indexes), without a
    controller: `setup` runs it on a queue; benchmarks call it directly."""
    settings = settings or TargetGroupBindingSettings()
    bindings = manager.informer(TARGETGROUPBINDINGS)
    services = manager.informer(SERVICES)
    slices = manager.informer(ENDPOINTSLICES)
    nodes = manager.informer(NODES)
    bindings.add_indexer(SERVICE_INDEX, tgb_service_index, exist_ok=True)
    bindings.add_indexer(TARGET_TYPE_INDEX, tgb_target_type_index, exist_ok=True)
    slices.add_indexer(SLICE_SERVICE_INDEX, slice_service_index, exist_ok=True)
    return TargetGroupBindingReconciler(
        client=manager.client, bindings=bindings.store, services=services.store,
        slices=slices.store, nodes=nodes.store,
        target_groups=TargetGroups(pool, clock=manager.clock),
        tracker=TargetTracker(manager.client), recorder=manager.recorder, clock=manager.clock,
        checkpoints=settings.checkpoints)


def setup(manager: Manager, *, pool: AWSClientPool,
          settings: TargetGroupBindingSettings | None = None) -> Controller:
    settings = settings or TargetGroupBindingSettings()
    reconciler = build_reconciler(manager, pool=pool, settings=settings)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    services = manager.informer(SERVICES)
    slices = manager.informer(ENDPOINTSLICES)
    nodes = manager.informer(NODES)
    controller = paced_controller(
        manager, CONTROLLER_NAME, reconciler,
        max_concurrent_reconciles=settings.max_concurrent_reconciles,
        low_lane_qps=settings.verify_qps if settings.checkpoints else None,
        verify_burst=settings.verify_burst, verify_max_wait=settings.verify_max_wait,
        max_backoff=settings.max_backoff,
        gate=pool.verification_budget)
    controller.watch(bindings, EnqueueForObject(controller, priority=reconciler.priority))
    controller.watch(services, EnqueueFromMap(controller, reconciler.bindings_for_service))
    controller.watch(slices, EnqueueFromMap(controller, reconciler.bindings_for_slice))
    controller.watch(nodes, EnqueueFromMap(controller, reconciler.bindings_for_node))
    manager.add_controller(controller)
    return controller
