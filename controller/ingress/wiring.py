"""Wiring of the Ingress controller into a Manager: its settings, the informers and indexes it
reads, its watches (each kind mapped to the groups it concerns, through views that drop
writes the model does not read, each group priced by `priority.py`), the referenced Secrets
(watched by name while leading), the record of vanished members, the queue's LOW lane, the
deployer, the qualify step and the reconciler."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from controller import transforms
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, RegionSnapshot
from controller.defaults import DEFAULT_INGRESS_CLASS, DEFAULT_SSL_POLICY
from controller.deploy import DeployerSettings, StackDeployer
from controller.ingress.admission import PresumedSecrets
from controller.ingress.caches import Caches
from controller.ingress.exclusions import GroupNamespaces
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    former_groups,
    index_keys,
)
from controller.ingress.model import BuilderSettings
from controller.ingress.priority import GroupPriority
from controller.ingress.qualify import Qualifier
from controller.ingress.reconciler import IngressReconciler
from controller.ingress.secrets import ReferencedSecrets
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
from controller.networking.backend import BackendSecurityGroup, StackKey
from controller.networking.frontend import BackendSettings
from controller.ownership import (
    TARGET_GROUP_INDEX,
    TargetGroupLookup,
    binding_target_group_index,
)
from controller.reconcilers import LaneSettings, controller_options
from runtime.builder import ControllerBuilder
from runtime.controller import Controller
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.predicates import DeletionStarted, ViewChanged
from runtime.resources import INGRESSCLASSES, INGRESSES, NAMESPACES, SERVICES

CONTROLLER_NAME = "ingress"  # upstream's name, so dashboards match


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    cluster_name: str
    region: str
    vpc_id: str
    ingress_class: str = DEFAULT_INGRESS_CLASS  # --ingress-class
    default_scheme: Literal["internal", "internet-facing"] = "internal"
    default_target_type: Literal["instance", "ip"] = "instance"
    default_ssl_policy: str = DEFAULT_SSL_POLICY
    default_tags: Mapping[str, str] = field(default_factory=dict)
    external_managed_tags: frozenset[str] = frozenset()
    max_concurrent_reconciles: int = 3
    max_backoff: float = 1000.0
    lanes: LaneSettings = field(default_factory=LaneSettings)
    cleanup_poll: float = 1.0  # re-check for managed bindings still being deleted
    in_use_backoff: float = 0.2  # a target group still in use: first retry after this
    # --ingress-group-namespaces: which namespaces a group may span (exclusions.py).
    group_namespaces: GroupNamespaces = "params"
    backend_sg: BackendSettings = field(default_factory=BackendSettings)
    security_group_backoff: float = 1.0  # a group still in use: first retry after this

    def builder(self) -> BuilderSettings:
        return BuilderSettings(cluster_name=self.cluster_name, region=self.region,
                               vpc_id=self.vpc_id, ingress_class=self.ingress_class,
                               default_scheme=self.default_scheme,
                               default_target_type=self.default_target_type,
                               default_ssl_policy=self.default_ssl_policy,
                               default_tags=dict(self.default_tags),
                               external_managed_tags=self.external_managed_tags,
                               backend_sg=self.backend_sg)


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
    loader = GroupLoader(caches, ingress_class=settings.ingress_class)
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
        backend = BackendSecurityGroup(cluster=settings.cluster_name,
                                       tags=settings.default_tags, clock=manager.clock,
                                       delete_backoff=settings.security_group_backoff)
    backend.add_claimants(lambda: _claimed_stacks(ingresses.store.list()))
    deployer = StackDeployer(
        pool, DeployerSettings(cluster_name=settings.cluster_name,
                               in_use_backoff=settings.in_use_backoff,
                               security_group_backoff=settings.security_group_backoff),
        clock=manager.clock, backend=backend, snapshot=snapshot)
    qualifier = Qualifier(caches=caches, settings=settings.builder(),
                          policy=settings.group_namespaces, vanished=vanished,
                          target_groups=TargetGroupLookup(pool, clock=manager.clock),
                          bindings_by_index=bindings.store.by_index)
    reconciler = IngressReconciler(
        client=manager.client, caches=caches, bindings=bindings.store, loader=loader,
        qualifier=qualifier, deployer=deployer, vpc_id=settings.vpc_id,
        recorder=manager.recorder, clock=manager.clock,
        checkpoints=settings.lanes.checkpoints, cleanup_poll=settings.cleanup_poll,
        secrets=secrets, vanished=vanished)
    groups = GroupMapper(loader, caches)
    priority = GroupPriority(loader=loader, qualifier=qualifier, bindings=bindings.store,
                             enabled=settings.lanes.prioritised)
    return (ControllerBuilder(manager, CONTROLLER_NAME)
            .watches(ingresses, groups.groups_for_ingress, priority=priority,
                     predicates=[ViewChanged(ingress_view)])
            .watches(services, groups.groups_for_service, priority=priority,
                     predicates=[ViewChanged(service_view)])
            .watches(secrets, groups.groups_for_secret, priority=priority,
                     predicates=[ViewChanged(secret_view)])
            .watches(classes, groups.groups_for_class, priority=priority,
                     predicates=[ViewChanged(spec_and_annotations)])
            .watches(params, groups.groups_for_params, priority=priority,
                     predicates=[ViewChanged(spec_and_annotations)])
            .watches(namespaces, groups.groups_for_namespace, priority=priority,
                     predicates=[ViewChanged(labels_view)])
            # A managed binding matters only when it goes (deleted by hand: put back).
            .watches(bindings, groups.group_for_binding, priority=priority,
                     predicates=[DeletionStarted()])
            .with_options(controller_options(
                settings.lanes, max_concurrent_reconciles=settings.max_concurrent_reconciles,
                max_backoff=settings.max_backoff, gate=pool.verification_budget))
            .complete(reconciler))


def _claimed_stacks(ingresses: list[Obj]) -> list[StackKey]:
    """Groups whose finalizer an Ingress carries: they may still use the backend group."""
    return [("ingress", request.key) for ing in ingresses for request in former_groups(ing)]


__all__ = ["CONTROLLER_NAME", "Settings", "admission_caches", "setup"]
