"""Wiring of the Ingress controller into a Manager (its settings are in settings.py): the
informers and indexes it reads, its watches (each kind mapped to the groups it concerns,
through views that drop writes the model does not read), the referenced Secrets (watched by
name while leading), the record of vanished members, the queue's LOW lane, the deployer and
the reconciler."""

from __future__ import annotations

from controller import transforms
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, RegionSnapshot, StackDeployer
from controller.ingress.admission import PresumedSecrets
from controller.ingress.caches import Caches
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    former_groups,
    index_keys,
)
from controller.ingress.reconciler import IngressReconciler
from controller.ingress.secrets import ReferencedSecrets
from controller.ingress.settings import Settings
from controller.ingress.vanished import VanishedMembers
from controller.ingress.watches import (
    BINDING_STACK_INDEX,
    SECRET_INDEX,
    SERVICE_INDEX,
    SERVICE_SECRET_INDEX,
    GroupHandler,
    GroupMapper,
    GroupPriority,
    MapFn,
    Relevant,
    binding_stack_index,
    ingress_secret_index,
    ingress_service_index,
    ingress_view,
    labels_view,
    secret_view,
    service_secret_index,
    service_view,
    spec_and_annotations,
)
from controller.networking.backend import BackendSecurityGroup, StackKey
from controller.ownership import TARGET_GROUP_INDEX, binding_target_group_index
from controller.reconcilers import LaneSettings, controller_options
from runtime.builder import ControllerBuilder, HandlerFactory
from runtime.controller import Controller
from runtime.handlers import Enqueuer
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.predicates import EventKind
from runtime.reconcile import NORMAL, Request
from runtime.resources import INGRESSCLASSES, INGRESSES, NAMESPACES, SERVICES

CONTROLLER_NAME = "ingress"  # upstream's name, so dashboards match


def group_priority(lanes: LaneSettings, checkpointed: GroupPriority) -> GroupPriority:
    """The handlers' priority function: the checkpoint decision when the LOW lane is on;
    otherwise every event is NORMAL (a matching checkpoint then only makes the reconcile
    skip its AWS calls)."""
    if lanes.prioritised:
        return checkpointed

    def normal(request: Request, kind: EventKind, default: int) -> int:
        return NORMAL

    return normal


def admission_caches(manager: Manager) -> Caches:
    """What the validating webhook reads: the controller's informer caches, with the group
    indexes the loader needs, and Secrets presumed present (`admission.PresumedSecrets`)."""
    ingresses = transforms.informer(manager, INGRESSES)
    ingresses.add_indexer(GROUP_INDEX, index_keys)
    ingresses.add_indexer(CLASS_INDEX, class_keys)
    return Caches(ingresses=ingresses.store,
                  services=transforms.informer(manager, SERVICES).store,
                  secrets=PresumedSecrets(),
                  classes=transforms.informer(manager, INGRESSCLASSES).store,
                  params=transforms.informer(manager, INGRESSCLASSPARAMS).store,
                  namespaces=transforms.informer(manager, NAMESPACES).store)


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings,
          backend: BackendSecurityGroup | None = None,
          snapshot: RegionSnapshot | None = None) -> Controller:
    """`backend`: the shared backend security group, when the Service controller of this
    process shares it (the caller then makes one for both); by default the Ingress
    controller's own. `snapshot`: the process's region snapshot, likewise."""
    ingresses = transforms.informer(manager, INGRESSES)
    services = transforms.informer(manager, SERVICES)
    classes = transforms.informer(manager, INGRESSCLASSES)
    params = transforms.informer(manager, INGRESSCLASSPARAMS)
    namespaces = transforms.informer(manager, NAMESPACES)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    secrets = ReferencedSecrets(manager.client, clock=manager.clock,
                                settings=manager.options.informer_settings)
    caches = Caches(ingresses=ingresses.store, services=services.store, secrets=secrets.store,
                    classes=classes.store, params=params.store, namespaces=namespaces.store)
    loader = GroupLoader(caches, ingress_class=settings.config.ingress_class)
    ingresses.add_indexer(GROUP_INDEX, index_keys)
    ingresses.add_indexer(CLASS_INDEX, class_keys)
    ingresses.add_indexer(SERVICE_INDEX, ingress_service_index)
    ingresses.add_indexer(SECRET_INDEX, ingress_secret_index)
    services.add_indexer(SERVICE_SECRET_INDEX, service_secret_index)
    bindings.add_indexer(BINDING_STACK_INDEX, binding_stack_index)
    bindings.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    # On every replica: which Secrets are referenced, and which members vanished (a standby
    # that takes over must know). The Secrets themselves are read only while leading.
    ingresses.add_handler(secrets.ingress_events(services.store, ingress_service_index))
    services.add_handler(secrets.service_events(ingresses.store, SERVICE_INDEX))
    manager.add_leader_runnable(secrets.run)
    vanished = VanishedMembers(registry=manager.registry)
    ingresses.add_handler(vanished)

    if backend is None:
        backend = BackendSecurityGroup(cluster=settings.cluster.name,
                                       tags=settings.defaults.tags, clock=manager.clock,
                                       delete_backoff=settings.security_group_backoff)
    backend.add_claimants(lambda: _claimed_stacks(ingresses.store.list()))
    deployer = StackDeployer(
        pool, DeployerSettings(cluster_name=settings.cluster.name,
                               in_use_backoff=settings.in_use_backoff,
                               security_group_backoff=settings.security_group_backoff),
        clock=manager.clock, backend=backend, snapshot=snapshot)
    reconciler = IngressReconciler(
        client=manager.client, caches=caches, bindings=bindings.store, loader=loader,
        deployer=deployer, pool=pool, settings=settings.builder(),
        recorder=manager.recorder, clock=manager.clock,
        checkpoints=settings.lanes.checkpoints, cleanup_poll=settings.cleanup_poll,
        group_namespaces=settings.config.group_namespaces, secrets=secrets, vanished=vanished)
    groups = GroupMapper(loader, caches)
    prio = group_priority(settings.lanes, reconciler.priority)

    def handler(map_fn: MapFn, view: Relevant | None = None, *,
                deletes_only: bool = False) -> HandlerFactory:
        def factory(controller: Enqueuer) -> GroupHandler:
            return GroupHandler(controller, map_fn, priority=prio, view=view,
                                deletes_only=deletes_only)
        return factory

    return (ControllerBuilder(manager, CONTROLLER_NAME)
            .watches_handler(ingresses, handler(groups.groups_for_ingress, ingress_view))
            .watches_handler(services, handler(groups.groups_for_service, service_view))
            .watches_handler(secrets, handler(groups.groups_for_secret, secret_view))
            .watches_handler(classes, handler(groups.groups_for_class, spec_and_annotations))
            .watches_handler(params, handler(groups.groups_for_params, spec_and_annotations))
            .watches_handler(namespaces, handler(groups.groups_for_namespace, labels_view))
            .watches_handler(bindings, handler(groups.group_for_binding, deletes_only=True))
            .with_options(controller_options(settings.lanes, settings.config.workers,
                                             gate=pool.verification_budget))
            .complete(reconciler))


def _claimed_stacks(ingresses: list[Obj]) -> list[StackKey]:
    """Groups whose finalizer an Ingress carries: they may still use the backend group."""
    return [("ingress", request.key) for ing in ingresses for request in former_groups(ing)]


__all__ = ["CONTROLLER_NAME", "Settings", "admission_caches", "group_priority", "setup"]
