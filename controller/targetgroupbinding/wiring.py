"""Wiring of the TargetGroupBinding controller into a Manager (its settings are in
settings.py): the informers and indexes it reads, its watches (with the views that tell changes
from the controller's own writes), the queue's LOW lane and the reconciler."""

from __future__ import annotations

import dataclasses
import math

from controller import gates, informers
from controller.apis import DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, RegionSnapshot, metrics_for
from controller.lbcmetrics import counting_recorder, lbc_metrics_for, talking
from controller.reconcilers import controller_options
from controller.targetgroupaccess import TARGET_GROUP_INDEX, binding_target_group_index
from controller.targetgroupbinding.checks import Scope
from controller.targetgroupbinding.crdguard import CRDGuard, crd_informer
from controller.targetgroupbinding.multicluster import TargetTracker
from controller.targetgroupbinding.networking import BindingNetworking
from controller.targetgroupbinding.pods import (
    GATE_INDEX,
    PodTrimmer,
    bindings_of_pod,
    gate_index,
    pod_view,
)
from controller.targetgroupbinding.reconciler import TargetGroupBindingReconciler
from controller.targetgroupbinding.settings import Settings
from controller.targetgroupbinding.slicecache import SliceRefresher, SliceTrimmer
from controller.targetgroupbinding.targetgroups import TargetGroups
from controller.targetgroupbinding.watches import (
    SERVICE_INDEX,
    SLICE_SERVICE_INDEX,
    TARGET_TYPE_INDEX,
    SliceChanged,
    binding_service_index,
    binding_target_type_index,
    binding_view,
    bindings_of_node,
    bindings_of_service,
    bindings_of_slice,
    node_view,
    service_view,
    slice_service_index,
)
from runtime.builder import ControllerBuilder
from runtime.controller import Controller
from runtime.hotloop import HotLoopOptions
from runtime.informer import SharedInformer
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.predicates import ViewChanged
from runtime.resources import ENDPOINTSLICES, NODES, PODS, SERVICES
from runtime.store import Store

CONTROLLER_NAME = "targetGroupBinding"  # upstream's name, so dashboards match


def hot_loop_options(requeue_duration: float) -> HotLoopOptions:
    """The hot-loop guard must never slow a binding that only follows its own requeues while
    pods wait for their gates: its limit stays above what those requeues add up to."""
    defaults = HotLoopOptions()
    own = math.ceil(2 * defaults.window / requeue_duration)
    return dataclasses.replace(defaults, limit=max(defaults.limit or 0, own))


def pods_informer(manager: Manager, *,
                  quic_env: str = DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME) -> SharedInformer:
    """The shared pod cache, cut down to what readiness gates and QUIC server IDs need
    (pods.py), indexed by the bindings their gates name."""
    pods = informers.informer(manager, PODS, transform=PodTrimmer(quic_env))
    pods.add_indexer(GATE_INDEX, gate_index)
    return pods


# TargetGroupBinding → the ARN it names when it names a role to assume (never raises).
CROSS_ACCOUNT_INDEX = "cross-account-target-group"


def cross_account_target_group_index(obj: Obj) -> list[str]:
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not spec.get("iamRoleArnToAssume"):
        return []
    arn = spec.get("targetGroupARN")
    return [arn] if isinstance(arn, str) and arn else []


def named_arns(bindings: Store) -> list[str]:
    """The target group ARNs the bindings name, for reading their facts ahead: those of the
    controller's own account (another account's are read as its role, never with ours)."""
    elsewhere = set(bindings.list_index_values(CROSS_ACCOUNT_INDEX))
    return [arn for value in bindings.list_index_values(TARGET_GROUP_INDEX)
            if value.startswith("arn:") and (arn := value.removeprefix("arn:")) not in elsewhere]


def build_reconciler(manager: Manager, *, pool: AWSClientPool, settings: Settings,
                     snapshot: RegionSnapshot | None = None) -> TargetGroupBindingReconciler:
    """The reconciler on the manager's shared informers (and their indexes), without a
    controller: `setup` runs it on a queue; benchmarks call it directly. `snapshot`: the
    process's region snapshot, which paced verifications read target groups from."""
    quic_env = settings.config.quic_environment_variable_name
    bindings = manager.informer(TARGETGROUPBINDINGS)
    bindings.add_indexer(SERVICE_INDEX, binding_service_index)
    bindings.add_indexer(TARGET_TYPE_INDEX, binding_target_type_index)
    bindings.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    bindings.add_indexer(CROSS_ACCOUNT_INDEX, cross_account_target_group_index)
    # What the slice cache keeps depends on which Services bindings use: it lists once the
    # bindings' cache holds its initial list (slicecache.py).
    slices = informers.informer(manager, ENDPOINTSLICES, transform=SliceTrimmer(bindings.store),
                                 start_after=[bindings])
    slices.add_indexer(SLICE_SERVICE_INDEX, slice_service_index)
    # On every replica, so that a standby's slice cache is whole for the Services in use.
    bindings.add_handler(SliceRefresher(manager.client, slices))
    networking = None
    policy = settings.networking_policy
    if settings.networking is not None and policy is not None:
        networking = BindingNetworking.create(pool, settings.networking, policy=policy,
                                              clock=manager.clock, bindings=bindings.store.list)
        # Stale rules go as soon as the caches are synced, on every new leader.
        manager.add_leader_runnable(networking.manager.first_pass)
    return TargetGroupBindingReconciler(
        client=manager.client, bindings=bindings.store,
        services=informers.informer(manager, SERVICES).store, slices=slices.store,
        nodes=informers.informer(manager, NODES).store,
        target_groups=TargetGroups(pool, clock=manager.clock,
                                   read_ahead=lambda: named_arns(bindings.store),
                                   snapshot=snapshot),
        tracker=TargetTracker(manager.client),
        recorder=counting_recorder(manager.recorder, manager.registry),
        scope=Scope(cluster_name=settings.cluster.name, vpc_id=settings.cluster.vpc_id),
        clock=manager.clock, checkpoints=settings.lanes.checkpoints,
        pods=pods_informer(manager, quic_env=quic_env).store, quic_env=quic_env,
        requeue_duration=settings.config.requeue_duration,
        networking=networking, targets_trusted_for=settings.targets_trusted_for,
        max_targets_per_target_group=settings.config.max_targets_per_target_group,
        endpoints_fail_open=gates.enabled(settings.gates, "EndpointsFailOpen"),
        target_group_info=metrics_for(manager.registry).target_group_info,
        readiness_gate_ready=lbc_metrics_for(manager.registry).readiness_gate_ready,
        quic_missing_server_ids=lbc_metrics_for(manager.registry).quic_missing_server_ids,
        crd=CRDGuard(manager.client, crd_informer(manager).store))


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings,
          snapshot: RegionSnapshot | None = None) -> Controller:
    reconciler = build_reconciler(manager, pool=pool, settings=settings, snapshot=snapshot)
    quic_env = settings.config.quic_environment_variable_name
    bindings = manager.informer(TARGETGROUPBINDINGS)
    return (ControllerBuilder(manager, CONTROLLER_NAME)
            .for_(bindings, priority=reconciler.priority,
                  predicates=[ViewChanged(binding_view)])
            .watches(informers.informer(manager, SERVICES), bindings_of_service(bindings.store),
                     predicates=[ViewChanged(service_view)])
            .watches(manager.informer(ENDPOINTSLICES), bindings_of_slice(bindings.store),
                     predicates=[SliceChanged(bindings.store, pods_informer(
                         manager, quic_env=quic_env).store)])
            .watches(informers.informer(manager, NODES), bindings_of_node(bindings.store),
                     predicates=[ViewChanged(node_view)])
            .watches(pods_informer(manager, quic_env=quic_env), bindings_of_pod,
                     predicates=[ViewChanged(pod_view)])
            .with_options(dataclasses.replace(controller_options(
                settings.lanes, settings.config.workers, gate=pool.verification_budget),
                hot_loop=hot_loop_options(settings.config.requeue_duration)))
            .complete(talking(manager.registry, manager.clock, CONTROLLER_NAME, reconciler)))


__all__ = ["CONTROLLER_NAME", "Settings", "build_reconciler", "pods_informer", "setup"]
