"""The webhook server of `aiolbc run`: TLS (self-managed, or files someone else writes), the
handlers on upstream's paths with the shipped configurations' failurePolicy, on the manager's
shared informers, reading AWS through one `ReadCache` (controller/aws/readcache.py)."""

from __future__ import annotations

from controller import gates, informers, ingress, service
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, Caller, DirectReader, ReadCache
from controller.lbcmetrics import lbc_metrics_for
from controller.targetgroupaccess import TARGET_GROUP_INDEX, binding_target_group_index
from controller.targetgroupbinding import BindingAdmission, ServerIdGenerator, WorkerIds
from controller.webhooks.handlers import (
    MUTATE_POD,
    MUTATE_POD_SERVER_ID,
    MUTATE_SERVICE,
    MUTATE_TARGET_CONTROL_NAMESPACE,
    MUTATE_TARGET_CONTROL_OBJECT,
    MUTATE_TARGETGROUPBINDING,
    VALIDATE_INGRESS,
    VALIDATE_INGRESSCLASSPARAMS,
    VALIDATE_TARGETGROUPBINDING,
    ALBTargetControlAgentMutator,
    IngressClassParamsValidator,
    IngressValidator,
    PodReadinessGateMutator,
    PodServerIdMutator,
    ServiceMutator,
    SkippedReads,
    TargetGroupBindingMutator,
    TargetGroupBindingValidator,
    failure_policy,
)
from controller.webhooks.settings import Settings
from runtime.manager import Manager
from runtime.resources import (
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    SERVICES,
)
from runtime.webhook import Handler, SelfManagedCertificates, WebhookServer


def setup(manager: Manager, *, pool: AWSClientPool, settings: Settings) -> WebhookServer:
    """The server, with every handler registered, added to the manager (served on every
    replica, in `/readyz`)."""
    certificates = (SelfManagedCertificates(manager.client, settings.tls, clock=manager.clock)
                    if settings.tls is not None else None)
    server = WebhookServer(settings.server, registry=manager.registry, certificates=certificates)
    bindings = manager.informer(TARGETGROUPBINDINGS)
    bindings.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    services = informers.informer(manager, SERVICES)
    # Anyone who reaches the port can ask for reviews: AWS is read through a cache with one
    # read per target group (or security group) in flight and a bounded rate of misses.
    reads = ReadCache(DirectReader(Caller(pool)), clock=manager.clock)
    admission = BindingAdmission(reads, bindings.store, settings.scope,
                                 networking=settings.networking, services=services.store)
    skipped = SkippedReads(clock=manager.clock)
    ingress_informers = tuple(informers.informer(manager, r) for r in (
        INGRESSES, SERVICES, INGRESSCLASSES, NAMESPACES, INGRESSCLASSPARAMS))
    handlers: dict[str, Handler] = {
        MUTATE_POD: PodReadinessGateMutator(
            bindings, services, enabled=settings.config.pod_readiness_gate_inject),
        MUTATE_TARGETGROUPBINDING: TargetGroupBindingMutator(admission, skipped),
        VALIDATE_TARGETGROUPBINDING: TargetGroupBindingValidator(admission, bindings, services,
                                                                 skipped),
        VALIDATE_INGRESS: IngressValidator(
            ingress.admission_caches(manager), ingress_informers, settings.ingress.builder(),
            settings.ingress.config.group_namespaces, reads, skipped,
            disable_class_annotation=settings.ingress.config.disable_class_annotation,
            disable_group_name_annotation=settings.ingress.config.disable_group_name_annotation),
        VALIDATE_INGRESSCLASSPARAMS: IngressClassParamsValidator(),
        # Registered even when off, so that a configuration that still names it answers
        # "allowed" instead of a failed call.
        MUTATE_SERVICE: ServiceMutator(
            settings.service.load_balancer_class, enabled=settings.config.service_mutator,
            model=service.ModelSettings(
                cluster=settings.ingress.cluster,
                load_balancer_class=settings.service.load_balancer_class,
                defaults=settings.ingress.defaults, backend_sg=settings.ingress.backend_sg,
                gates=settings.gates), services=services.store),
    }
    generator = ServerIdGenerator(WorkerIds(manager.client).take, clock=manager.clock)
    handlers[MUTATE_POD_SERVER_ID] = PodServerIdMutator(settings.quic_env, generator.generate)
    if gates.enabled(settings.gates, "ALBTargetControlAgent"):
        # Only with the gate on, as upstream: off, a configuration that still names these paths
        # fails closed, and the pods it selects wait for the gate (or the configuration's
        # removal) rather than start without the sidecar they asked for.
        agent = ALBTargetControlAgentMutator(
            manager.client, informers.informer(manager, NAMESPACES),
            settings.controller_namespace)
        handlers[MUTATE_TARGET_CONTROL_NAMESPACE] = agent
        handlers[MUTATE_TARGET_CONTROL_OBJECT] = agent
    metrics = lbc_metrics_for(manager.registry)
    for path, handler in handlers.items():
        server.register(path, metrics.counting_failures(path, handler),
                        failure_policy=failure_policy(path))
    manager.add_webhook_server(server)
    return server


__all__ = ["Settings", "setup"]
