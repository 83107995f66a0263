"""`aiolbc run`: build the process from its configuration and run it until stopped.

One Kubernetes client, one AWS client pool and one metrics registry are shared by every
controller; the Manager owns start-up and shut-down order (see runtime/manager.py)."""

from __future__ import annotations

import os
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from controller import ingress, service, targetgroupbinding, webhooks
from controller.aws import AWSClientPool, AWSSettings, RegionSnapshot
from controller.config import ConfigError, ControllerConfig
from controller.networking.backend import BackendSecurityGroup
from controller.networking.frontend import BackendSettings
from controller.networking.manager import NetworkingSettings
from controller.reconcilers import LaneSettings
from controller.service import ServiceDefaults
from runtime import metrics
from runtime.client import KubeClient
from runtime.heap import HeapSettings
from runtime.httpserver import BindError
from runtime.informer import InformerSettings
from runtime.kubeconfig import KubeConfigError
from runtime.manager import Manager, ManagerOptions
from runtime.servingcerts import CertificateError
from runtime.webhook import SelfManagedTLS, WebhookServerOptions, service_dns_names

log = structlog.get_logger("aiolbc")

_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# Upstream's lease lives here when the controller runs outside a pod.
_FALLBACK_LEADER_NAMESPACE = "kube-system"


def leader_election_namespace(config: ControllerConfig) -> str:
    if config.leader_election_namespace:
        return config.leader_election_namespace
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or _FALLBACK_LEADER_NAMESPACE
    except OSError:
        return _FALLBACK_LEADER_NAMESPACE


def aws_settings(config: ControllerConfig) -> AWSSettings:
    region = config.aws_region or os.environ.get("AWS_REGION") or os.environ.get(
        "AWS_DEFAULT_REGION")
    if not region:
        raise ConfigError("--aws-region: required (or set AWS_REGION)")
    budgeted = config.enable_checkpoints and config.checkpoint_verify_aws_qps > 0
    return AWSSettings(region=region, endpoint_url=config.aws_endpoint_url,
                       endpoints=dict(config.aws_api_endpoints),
                       max_retries=config.aws_max_retries, throttle=config.aws_api_throttle,
                       verify_calls_qps=config.checkpoint_verify_aws_qps if budgeted else None,
                       verify_calls_burst=config.checkpoint_verify_aws_burst)


def manager_options(config: ControllerConfig, *, identity: str | None = None,
                    heap: HeapSettings | None = None) -> ManagerOptions:
    """`heap`: the garbage collector's tuning, process-wide: only `run` (the process's entry
    point) passes one."""
    return ManagerOptions(
        identity=identity,
        leader_election=config.enable_leader_election,
        leader_election_id=config.leader_election_id,
        leader_election_namespace=leader_election_namespace(config),
        lease_duration=config.leader_election_lease_duration,
        renew_deadline=config.leader_election_renew_deadline,
        retry_period=config.leader_election_retry_period,
        metrics_bind_address=config.metrics_bind_addr,
        metrics_secure=config.metrics_secure,
        metrics_cert_dir=config.metrics_cert_dir,
        health_probe_bind_address=config.health_probe_bind_addr,
        event_component="aws-load-balancer-controller",
        watch_namespace=config.watch_namespace,
        informer_settings=InformerSettings(resync_period=config.sync_period),
        heap=heap,
    )


# The lane's own pace when there is no verification budget to follow.
UNBUDGETED_VERIFY_QPS = 2.0


def lane_settings(config: ControllerConfig) -> LaneSettings:
    """By default a lane's pace is the verification budget's rate: every verification costs
    at least one AWS call, so the budget (which lets a verification start only once the calls
    of those before it are paid for) is what paces them, and a fixed count of reconciles per
    second would only hold back cheap ones (a TargetGroupBinding's verification costs about
    one call: at 2/s, 1,000 bindings took 500 s whatever the budget allowed)."""
    qps = config.checkpoint_verify_qps
    if qps is None:
        qps = config.checkpoint_verify_aws_qps or UNBUDGETED_VERIFY_QPS
    return LaneSettings(checkpoints=config.enable_checkpoints,
                        verify_qps=qps,
                        verify_burst=config.checkpoint_verify_burst,
                        verify_max_wait=config.checkpoint_max_wait)


def backend_settings(config: ControllerConfig) -> BackendSettings:
    return BackendSettings(enabled=config.enable_backend_security_group,
                           group_id=config.backend_security_group,
                           manage_rules_default=config.enable_manage_backend_security_group_rules,
                           restricted_rules=not config.disable_restricted_sg_rules)


def service_settings(config: ControllerConfig, *, region: str) -> service.Settings:
    """`region`: as resolved from the flag or the environment. The VPC is needed for subnet
    discovery."""
    if not config.aws_vpc_id:
        raise ConfigError("--aws-vpc-id: required by the Service controller")
    return service.Settings(
        cluster_name=config.cluster_name, region=region, vpc_id=config.aws_vpc_id,
        load_balancer_class=config.load_balancer_class,
        defaults=ServiceDefaults(scheme=config.default_load_balancer_scheme,
                                 target_type=config.default_target_type,
                                 ssl_policy=config.default_ssl_policy, tags=config.default_tags,
                                 external_managed_tags=frozenset(config.external_managed_tags)),
        max_concurrent_reconciles=config.service_max_concurrent_reconciles,
        backend_sg=backend_settings(config), lanes=lane_settings(config))


def ingress_settings(config: ControllerConfig, *, region: str) -> ingress.Settings:
    return ingress.Settings(
        cluster_name=config.cluster_name, region=region, vpc_id=config.aws_vpc_id or "",
        ingress_class=config.ingress_class, default_scheme=config.default_load_balancer_scheme,
        group_namespaces=config.ingress_group_namespaces,
        default_target_type=config.default_target_type,
        default_ssl_policy=config.default_ssl_policy, default_tags=dict(config.default_tags),
        external_managed_tags=frozenset(config.external_managed_tags),
        max_concurrent_reconciles=config.ingress_max_concurrent_reconciles,
        backend_sg=backend_settings(config), lanes=lane_settings(config))


def targetgroupbinding_settings(config: ControllerConfig) -> targetgroupbinding.Settings:
    """The cluster's name and VPC scope which target groups bindings may act on, and where
    and how their `spec.networking` rules are kept."""
    networking = None
    if config.aws_vpc_id:
        networking = NetworkingSettings(
            cluster_name=config.cluster_name, vpc_id=config.aws_vpc_id,
            restricted_rules=not config.disable_restricted_sg_rules,
            eni_security_group_tags=dict(config.service_target_eni_security_group_tags))
    return targetgroupbinding.Settings(
        cluster_name=config.cluster_name, vpc_id=config.aws_vpc_id or "",
        max_concurrent_reconciles=config.targetgroupbinding_max_concurrent_reconciles,
        max_backoff=config.targetgroupbinding_max_exponential_backoff_delay,
        requeue_duration=config.targetgroupbinding_requeue_duration,
        lanes=lane_settings(config), networking=networking,
        targets_trusted_for=targets_trusted_for(config))


def targets_trusted_for(config: ControllerConfig) -> float:
    """Half the sync period: the resync that replays every binding each --sync-period finds
    its last full look older than that and reads its targets again, so each binding's targets
    are read at least once per sync period, and a restart reads those of the bindings not
    looked at in the last half period (upstream's checkpointed bindings skip even that, until
    their deferred reconcile)."""
    return config.sync_period / 2


def webhook_settings(config: ControllerConfig, *, region: str) -> webhooks.Settings | None:
    """None with --webhook-bind-port=0. The self-managed Secret lives in the controller's own
    namespace, with its Lease and the webhook Service."""
    if config.webhook_bind_port == 0:
        return None
    namespace = leader_election_namespace(config)
    tls = None
    if config.webhook_tls_mode == "self-managed":
        tls = SelfManagedTLS(
            secret_namespace=namespace, secret_name=config.webhook_secret_name,
            dns_names=service_dns_names(config.webhook_service_name, namespace),
            mutating_configurations=(config.webhook_configuration_name,),
            validating_configurations=(config.webhook_configuration_name,))
    return webhooks.Settings(
        server=WebhookServerOptions(host=config.webhook_bind_host or None,
                                    port=config.webhook_bind_port,
                                    cert_dir=config.webhook_cert_dir,
                                    cert_name=config.webhook_cert_file,
                                    key_name=config.webhook_key_file),
        tls=tls, ingress=ingress_settings(config, region=region),
        scope=targetgroupbinding.Scope(cluster_name=config.cluster_name,
                                       vpc_id=config.aws_vpc_id or ""),
        pod_readiness_gate_inject=config.enable_pod_readiness_gate_inject,
        service_mutator=config.enable_service_mutator_webhook,
        load_balancer_class=config.load_balancer_class)


def setup_controllers(manager: Manager, pool: AWSClientPool, config: ControllerConfig) -> None:
    """Every controller shares the manager's informers, the AWS pool and the registry. The
    region the models are built for is the one the pool's clients use. This is the one place
    where flags become settings."""
    region = pool.settings.region
    # One backend security group for both kinds of load balancer: each controller's stacks
    # keep it while they use it.
    backend = BackendSecurityGroup(cluster=config.cluster_name, tags=config.default_tags,
                                   clock=manager.clock)
    # One region listing for every controller's verifications after a restart: the deployers'
    # and the bindings' target group lookups read the same load balancers, target groups and tags.
    snapshot = RegionSnapshot(clock=manager.clock)
    targetgroupbinding.setup(manager, pool=pool, settings=targetgroupbinding_settings(config),
                             snapshot=snapshot)
    service.setup(manager, pool=pool, settings=service_settings(config, region=region),
                  backend=backend, snapshot=snapshot)
    ingress.setup(manager, pool=pool, settings=ingress_settings(config, region=region),
                  backend=backend, snapshot=snapshot)
    hooks = webhook_settings(config, region=region)
    if hooks is not None:
        webhooks.setup(manager, pool=pool, settings=hooks)


def build_manager(config: ControllerConfig, client: KubeClient, pool: AWSClientPool, *,
                  registry: CollectorRegistry, identity: str | None = None,
                  heap: HeapSettings | None = None) -> Manager:
    """A Manager with every controller wired, ready to `run()`."""
    manager = Manager(client, options=manager_options(config, identity=identity, heap=heap),
                      registry=registry)
    setup_controllers(manager, pool, config)
    return manager


_BIND_FLAGS = {"metrics": "--metrics-bind-addr", "health probes": "--health-probe-bind-addr",
               "webhooks": "--webhook-bind-port"}


async def _client(config: ControllerConfig, registry: CollectorRegistry) -> KubeClient:
    try:
        return await KubeClient.load(config.kubeconfig, registry=registry)
    except KubeConfigError as exc:
        if config.kubeconfig is None:
            raise ConfigError(str(exc)) from None  # names the file, or the in-cluster setup
        where = f"{exc.path}: " if exc.path else ""
        raise ConfigError(f"--kubeconfig: {where}{exc.reason}") from None


async def run(config: ControllerConfig) -> int:
    """Start-up fails with one line and nothing else on stderr: a flag or the kubeconfig
    (ConfigError), the API server unreachable past --api-server-startup-timeout
    (ApiServerUnavailable), a port that cannot be bound (ConfigError naming its flag)."""
    registry = metrics.default_registry()
    settings = aws_settings(config)
    if not config.aws_vpc_id:
        # Upstream reads it from the instance metadata; outside EC2 there is none to read.
        raise ConfigError("--aws-vpc-id: required (subnet discovery for load balancers)")
    client = await _client(config, registry)
    async with client:
        await client.wait_for_server(timeout=config.api_server_startup_timeout)
        async with AWSClientPool(settings, registry=registry) as pool:
            try:
                manager = build_manager(config, client, pool, registry=registry,
                                        heap=HeapSettings())
            except CertificateError as exc:
                raise ConfigError(f"--metrics-cert-dir: {exc}") from None
            try:
                await manager.serve()
            except BindError as exc:
                raise ConfigError(f"{_BIND_FLAGS.get(exc.kind, exc.kind)}: {exc}") from None
            manager.install_signal_handlers()
            await pool.warm()
            log.info("starting", cluster=config.cluster_name, region=settings.region,
                     leader_election=config.enable_leader_election,
                     checkpoints=config.enable_checkpoints)
            return await manager.run()
