"""The webhook server of `aiolbc run`: TLS (self-managed, or files someone else writes), the
handlers on upstream's paths, on the manager's shared informers."""

from __future__ import annotations

from controller import informers, ingress
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.targetgroupaccess import TARGET_GROUP_INDEX, binding_target_group_index
from controller.targetgroupbinding import BindingAdmission
from controller.webhooks.handlers import (
    MUTATE_POD,
    MUTATE_SERVICE,
    MUTATE_TARGETGROUPBINDING,
    VALIDATE_INGRESS,
    VALIDATE_INGRESSCLASSPARAMS,
    VALIDATE_TARGETGROUPBINDING,
    IngressClassParamsValidator,
    IngressValidator,
    PodReadinessGateMutator,
    ServiceMutator,
    TargetGroupBindingMutator,
    TargetGroupBindingValidator,
)
from controller.webhooks.settings import Settings
from runtime.manager import Manager
from runtime.resources import (
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    SERVICES,
)
from runtime.webhook import SelfManagedCertificates, WebhookServer


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings) -> WebhookServer:
    """The server, with every handler registered, added to the manager (served on every
    replica, in `/readyz`)."""
    certificates = (SelfManagedCertificates(manager.client, settings.tls, clock=manager.clock)
                    if settings.tls is not None else None)
    server = WebhookServer(settings.server, registry=manager.registry, certificates=certificates)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    bindings.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    services = informers.informer(manager, SERVICES)
    admission = BindingAdmission(pool, bindings.store, settings.scope,
                                 networking=settings.networking, services=services.store)
    server.register(MUTATE_POD, PodReadinessGateMutator(
        bindings, services, enabled=settings.config.pod_readiness_gate_inject))
    server.register(MUTATE_TARGETGROUPBINDING, TargetGroupBindingMutator(admission))
    server.register(VALIDATE_TARGETGROUPBINDING, TargetGroupBindingValidator(
        admission, bindings, services))
    ingress_informers = tuple(informers.informer(manager, r) for r in (
        INGRESSES, SERVICES, INGRESSCLASSES, NAMESPACES, INGRESSCLASSPARAMS))
    server.register(VALIDATE_INGRESS, IngressValidator(
        ingress.admission_caches(manager), ingress_informers, settings.ingress.builder(),
        settings.ingress.config.group_namespaces))
    server.register(VALIDATE_INGRESSCLASSPARAMS, IngressClassParamsValidator())
    # Registered even when off, so that a configuration that still names it answers "allowed"
    # instead of a failed call.
    server.register(MUTATE_SERVICE, ServiceMutator(settings.service.load_balancer_class,
                                                   enabled=settings.config.service_mutator))
    manager.add_webhook_server(server)
    return server


__all__ = ["Settings", "setup"]
