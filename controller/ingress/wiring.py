"""Wiring of the Ingress controller into a Manager (its settings are in settings.py): the
informers and indexes it reads, its watches (each kind mapped to the groups it concerns,
through views that drop writes the model does not read, each group priced by `priority.py`),
the referenced Secrets (watched by name while leading), the record of vanished members, the
queue's LOW lane, the deployer, the qualify step and the reconciler."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from controller import informers
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, RegionSnapshot
from controller.deploy import StackDeployer
from controller.ingress.admission import PresumedSecrets
from controller.ingress.caches import Caches
from controller.ingress.classes import served_controller
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    former_groups,
    index_keys,
)
from controller.ingress.priority import GroupPriority
from controller.ingress.qualify import Qualifier
from controller.ingress.reconciler import IngressReconciler
from controller.ingress.secrets import ReferencedSecrets
from controller.ingress.settings import Settings
from controller.ingress.vanished import VanishedMembers
from controller.ingress.watches import (
    BINDING_STACK_INDEX,
    SECRET_INDEX,
    SERVICE_INDEX,
    SERVICE_SECRET_INDEX,
    GroupMapper,
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
from controller.lbcmetrics import counting_recorder, talking
from controller.networking.backend import BackendSecurityGroup, StackKey
from controller.reconcilers import controller_options
from controller.targetgroupaccess import (
    TARGET_GROUP_INDEX,
    TargetGroupLookup,
    binding_target_group_index,
)
from runtime.builder import ControllerBuilder
from runtime.controller import Controller
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.predicates import DeletionStarted, ViewChanged
from runtime.resources import INGRESSCLASSES, INGRESSES, NAMESPACES, SERVICES

CONTROLLER_NAME = "ingress"  # upstream's name, so dashboards match


def admission_caches(manager: Manager) -> Caches:
    """What the validating webhook reads: the controller's informer caches, with the group
    indexes the loader needs, and Secrets presumed present (`admission.PresumedSecrets`)."""
    ingresses = informers.informer(manager, INGRESSES)
    ingresses.add_indexer(GROUP_INDEX, index_keys)
    ingresses.add_indexer(CLASS_INDEX, class_keys)
    return Caches(ingresses=ingresses.store,
                  services=informers.informer(manager, SERVICES).store,
                  secrets=PresumedSecrets(),
                  classes=informers.informer(manager, INGRESSCLASSES).store,
                  params=informers.informer(manager, INGRESSCLASSPARAMS).store,
                  namespaces=informers.informer(manager, NAMESPACES).store)


@dataclass(frozen=True)
class Components:
    """What the Ingress controller's watches need beside the informers."""

    reconciler: IngressReconciler
    groups: GroupMapper  # each watched kind → the groups it concerns
    priority: GroupPriority
    secrets: ReferencedSecrets  # the Secrets the members reference, watched by name


def build(manager: Manager, *, pool: AWSClientPool, settings: Settings,
          backend: BackendSecurityGroup | None = None,
          snapshot: RegionSnapshot | None = None) -> Components:
    """The reconciler and what its watches need, on the manager's shared informers (with the
    indexes they read). `backend`: the shared backend security group, when the Service
    controller of this process shares it (the caller then makes one for both); by default the
    Ingress controller's own. `snapshot`: the process's region snapshot, likewise."""
    ingresses = informers.informer(manager, INGRESSES)
    services = informers.informer(manager, SERVICES)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    secrets = ReferencedSecrets(manager.client, clock=manager.clock,
                                settings=manager.options.informer_settings,
                                tls=settings.config.enable_secret_certificates,
                                label_selector=settings.config.required_secrets_label or None)
    caches = Caches(ingresses=ingresses.store, services=services.store, secrets=secrets.store,
                    classes=informers.informer(manager, INGRESSCLASSES).store,
                    params=informers.informer(manager, INGRESSCLASSPARAMS).store,
                    namespaces=informers.informer(manager, NAMESPACES).store)
    loader = GroupLoader(caches, ingress_class=settings.config.ingress_class,
                         controller=served_controller(settings.cluster.controller_id))
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
                                       controller_id=settings.cluster.controller_id,
                                       tags=settings.defaults.tags, clock=manager.clock,
                                       delete_backoff=settings.security_group_backoff)
    backend.add_claimants(lambda: _claimed_stacks(ingresses.store.list()))
    deployer = StackDeployer(pool, settings.deployer, clock=manager.clock, backend=backend,
                             snapshot=snapshot)
    qualifier = Qualifier(caches=caches, settings=settings.builder(),
                          policy=settings.config.group_namespaces, vanished=vanished,
                          target_groups=TargetGroupLookup(pool, clock=manager.clock),
                          bindings_by_index=bindings.store.by_index)
    reconciler = IngressReconciler(
        client=manager.client, caches=caches, bindings=bindings.store, loader=loader,
        qualifier=qualifier, deployer=deployer, vpc_id=settings.cluster.vpc_id,
        recorder=counting_recorder(manager.recorder, manager.registry), clock=manager.clock,
        checkpoints=settings.lanes.checkpoints, cleanup_poll=settings.cleanup_poll,
        stabilization_interval=settings.stabilization_interval,
        secrets=secrets, vanished=vanished, plan=settings.plan_annotation)
    priority = GroupPriority(loader=loader, qualifier=qualifier, bindings=bindings.store,
                             enabled=settings.lanes.prioritised)
    return Components(reconciler=reconciler, groups=GroupMapper(loader, caches),
                      priority=priority, secrets=secrets)


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings,
          backend: BackendSecurityGroup | None = None,
          snapshot: RegionSnapshot | None = None) -> Controller:
    """Register the Ingress controller (`build` says what `backend` and `snapshot` are)."""
    parts = build(manager, pool=pool, settings=settings, backend=backend, snapshot=snapshot)
    groups, priority = parts.groups, parts.priority
    informer = functools.partial(informers.informer, manager)
    return (ControllerBuilder(manager, CONTROLLER_NAME)
            .watches(informer(INGRESSES), groups.groups_for_ingress, priority=priority,
                     predicates=[ViewChanged(ingress_view)])
            .watches(informer(SERVICES), groups.groups_for_service, priority=priority,
                     predicates=[ViewChanged(service_view)])
            .watches(parts.secrets, groups.groups_for_secret, priority=priority,
                     predicates=[ViewChanged(secret_view)])
            .watches(informer(INGRESSCLASSES), groups.groups_for_class, priority=priority,
                     predicates=[ViewChanged(spec_and_annotations)])
            .watches(informer(INGRESSCLASSPARAMS), groups.groups_for_params, priority=priority,
                     predicates=[ViewChanged(spec_and_annotations)])
            .watches(informer(NAMESPACES), groups.groups_for_namespace, priority=priority,
                     predicates=[ViewChanged(labels_view)])
            # A managed binding matters only when it goes (deleted by hand: put back).
            .watches(manager.informer(TARGETGROUPBINDINGS), groups.group_for_binding,
                     priority=priority, predicates=[DeletionStarted()])
            .with_options(controller_options(settings.lanes, settings.config.workers,
                                             gate=pool.verification_budget))
            .complete(talking(manager.registry, manager.clock, CONTROLLER_NAME, parts.reconciler)))


def _claimed_stacks(ingresses: list[Obj]) -> list[StackKey]:
    """Groups whose finalizer an Ingress carries: they may still use the backend group."""
    return [("ingress", request.key) for ing in ingresses for request in former_groups(ing)]


__all__ = ["CONTROLLER_NAME", "Components", "Settings", "admission_caches", "build", "setup"]
