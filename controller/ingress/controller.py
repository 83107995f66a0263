"""Wiring of the Ingress controller into a Manager: informers, indexes, event mapping, the
queue's LOW lane, the deployer and the reconciler."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.apis import (
    INGRESS_ANNOTATION_PREFIX as PREFIX,
)
from controller.apis import (
    INGRESSCLASSPARAMS,
    TARGETGROUPBINDINGS,
    USE_ANNOTATION,
)
from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer
from controller.ingress import events
from controller.ingress.annotations import oidc_secret_names
from controller.ingress.caches import Caches, Obj, meta
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    index_keys,
)
from controller.ingress.model import BuilderSettings
from controller.ingress.reconciler import (
    BINDING_STACK_INDEX,
    SECRET_INDEX,
    SERVICE_INDEX,
    IngressReconciler,
    binding_stack_index,
)
from controller.lanes import paced_controller
from runtime.controller import Controller
from runtime.handlers import EventKind, Request
from runtime.manager import Manager
from runtime.resources import INGRESSCLASSES, INGRESSES, NAMESPACES, SECRETS, SERVICES
from runtime.workqueue import NORMAL

CONTROLLER_NAME = "ingress"  # upstream's name, so dashboards match


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressSettings:
    cluster_name: str
    region: str
    vpc_id: str
    ingress_class: str = "alb"  # --ingress-class
    default_scheme: Literal["internal", "internet-facing"] = "internal"
    default_target_type: Literal["instance", "ip"] = "instance"
    default_ssl_policy: str = "ELBSecurityPolicy-2016-08"
    default_tags: Mapping[str, str] = field(default_factory=dict)
    external_managed_tags: frozenset[str] = frozenset()
    max_concurrent_reconciles: int = 3
    max_backoff: float = 1000.0
    checkpoints: bool = True
    # False: checkpoint skips without the paced LOW lane — every event NORMAL, one FIFO, as in
    # upstream's unmerged prototype (PR #3821); kept to measure what the lane adds.
    lane: bool = True
    verify_qps: float | None = 2.0
    verify_burst: int = 5
    verify_max_wait: float | None = 600.0
    cleanup_poll: float = 1.0  # re-check for managed bindings still being deleted

    def builder(self) -> BuilderSettings:
        return BuilderSettings(cluster_name=self.cluster_name, region=self.region,
                               vpc_id=self.vpc_id, ingress_class=self.ingress_class,
                               default_scheme=self.default_scheme,
                               default_target_type=self.default_target_type,
                               default_ssl_policy=self.default_ssl_policy,
                               default_tags=dict(self.default_tags),
                               external_managed_tags=self.external_managed_tags)

    @property
    def low_lane_qps(self) -> float | None:
        """The pace of the queue's LOW lane; None (unpaced) when nothing is ever LOW."""
        return self.verify_qps if self.checkpoints and self.lane else None


def group_priority(settings: IngressSettings,
                   checkpointed: events.GroupPriority) -> events.GroupPriority:
    """The handlers' priority function: the checkpoint decision when the LOW lane is on;
    otherwise every event is NORMAL (a matching checkpoint then only makes the reconcile
    skip its AWS calls)."""
    if settings.checkpoints and settings.lane:
        return checkpointed

    def normal(request: Request, kind: EventKind, default: int) -> int:
        return NORMAL

    return normal


def ingress_service_index(ing: Obj) -> list[str]:
    """namespace/name of every Service an Ingress routes to (rules, default backend, forward
    actions in annotations)."""
    namespace = str(meta(ing).get("namespace") or "")
    spec = ing.get("spec") or {}
    names: dict[str, None] = {}
    backends: list[Any] = [spec.get("defaultBackend")]
    for rule in spec.get("rules") or []:
        for path in ((rule or {}).get("http") or {}).get("paths") or []:
            backends.append((path or {}).get("backend"))
    for backend in backends:
        svc = (backend or {}).get("service") if isinstance(backend, dict) else None
        if (isinstance(svc, dict) and svc.get("name")
                and (svc.get("port") or {}).get("name") != USE_ANNOTATION):
            names[str(svc["name"])] = None
    for key, value in (meta(ing).get("annotations") or {}).items():
        if isinstance(key, str) and key.startswith(PREFIX + "actions.") and isinstance(value, str):
            names.update(dict.fromkeys(_forward_services(value)))
    return [f"{namespace}/{name}" for name in names]


def _forward_services(raw: str) -> list[str]:
    try:
        action = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(action, dict):
        return []
    forward = next((v for k, v in action.items() if str(k).lower() == "forwardconfig"), None)
    groups = next((v for k, v in forward.items() if str(k).lower() == "targetgroups"),
                  None) if isinstance(forward, dict) else None
    found: list[str] = []
    for tg in groups if isinstance(groups, list) else []:
        if isinstance(tg, dict):
            name = next((v for k, v in tg.items() if str(k).lower() == "servicename"), None)
            if isinstance(name, str) and name:
                found.append(name)
    return found


def ingress_secret_index(ing: Obj) -> list[str]:
    namespace = str(meta(ing).get("namespace") or "")
    return [f"{namespace}/{name}" for name in oidc_secret_names(ing)]


def setup(manager: Manager, *, pool: AWSClientPool, settings: IngressSettings) -> Controller:
    ingresses = manager.informer(INGRESSES)
    services = manager.informer(SERVICES)
    secrets = manager.informer(SECRETS)
    classes = manager.informer(INGRESSCLASSES)
    params = manager.informer(INGRESSCLASSPARAMS)
    namespaces = manager.informer(NAMESPACES)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    caches = Caches(ingresses=ingresses.store, services=services.store, secrets=secrets.store,
                    classes=classes.store, params=params.store, namespaces=namespaces.store)
    loader = GroupLoader(caches, ingress_class=settings.ingress_class)
    ingresses.add_indexer(GROUP_INDEX, index_keys, exist_ok=True)
    ingresses.add_indexer(CLASS_INDEX, class_keys, exist_ok=True)
    ingresses.add_indexer(SERVICE_INDEX, ingress_service_index, exist_ok=True)
    ingresses.add_indexer(SECRET_INDEX, ingress_secret_index, exist_ok=True)
    bindings.add_indexer(BINDING_STACK_INDEX, binding_stack_index, exist_ok=True)

    deployer = StackDeployer(pool, DeployerSettings(cluster_name=settings.cluster_name),
                             clock=manager.clock)
    reconciler = IngressReconciler(
        client=manager.client, caches=caches, bindings=bindings.store, loader=loader,
        deployer=deployer, pool=pool, settings=settings.builder(),
        recorder=manager.recorder, clock=manager.clock, checkpoints=settings.checkpoints,
        cleanup_poll=settings.cleanup_poll)
    controller = paced_controller(
        manager, CONTROLLER_NAME, reconciler,
        max_concurrent_reconciles=settings.max_concurrent_reconciles,
        low_lane_qps=settings.low_lane_qps, verify_burst=settings.verify_burst,
        verify_max_wait=settings.verify_max_wait, max_backoff=settings.max_backoff,
        gate=pool.verification_budget)
    prio = group_priority(settings, reconciler.priority)
    controller.watch(ingresses, events.GroupHandler(
        controller, reconciler.groups_for_ingress, priority=prio, view=events.ingress_view))
    controller.watch(services, events.GroupHandler(
        controller, reconciler.groups_for_service, priority=prio, view=events.service_view))
    controller.watch(secrets, events.GroupHandler(
        controller, reconciler.groups_for_secret, priority=prio, view=events.secret_view))
    controller.watch(classes, events.GroupHandler(
        controller, reconciler.groups_for_class, priority=prio,
        view=events.spec_and_annotations))
    controller.watch(params, events.GroupHandler(
        controller, reconciler.groups_for_params, priority=prio,
        view=events.spec_and_annotations))
    controller.watch(namespaces, events.GroupHandler(
        controller, reconciler.groups_for_namespace, priority=prio, view=events.labels_view))
    controller.watch(bindings, events.GroupHandler(
        controller, reconciler.group_for_binding, priority=prio, deletes_only=True))
    manager.add_controller(controller)
    return controller
