"""`aiolbc run`: build the process from its configuration and run it until stopped.

One Kubernetes client, one AWS client pool and one metrics registry are shared by every
controller; the Manager owns start-up and shut-down order (see runtime/manager.py)."""

from __future__ import annotations

import dataclasses
import os
import weakref
from importlib import metadata
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry, Gauge

from controller import gates, informers, ingress, service, targetgroupbinding, webhooks
from controller.apis import TARGETGROUPBINDINGS, controller_selector
from controller.aws import AWSClientPool, AWSSettings, RegionSnapshot
from controller.aws.assumerole import session_name
from controller.aws.discovery import (
    DiscoveryError,
    InstanceMetadata,
    discover_vpc,
    region_from_metadata,
)
from controller.config import ConfigError, ControllerConfig
from controller.defaults import DEFAULT_LEADER_ELECTION_ID
from controller.lbcmetrics import lbc_metrics_for
from controller.networking.backend import BackendSecurityGroup
from controller.networking.settings import NetworkingSettings
from controller.settings import ClusterScope
from runtime import metrics
from runtime.client import KubeClient
from runtime.heap import HeapSettings
from runtime.httpserver import BindError
from runtime.informer import InformerSettings
from runtime.kubeconfig import KubeConfigError
from runtime.manager import Manager, ManagerOptions
from runtime.resources import INGRESSES, SERVICES, Resource
from runtime.servingcerts import CertificateError

log = structlog.get_logger("aiolbc")

_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# Upstream's lease lives here when the controller runs outside a pod.
_FALLBACK_LEADER_NAMESPACE = "kube-system"


def leader_election_id(config: ControllerConfig) -> str:
    """`--leader-election-id`; left at its default by a controller with a `--controller-id`,
    the default with the id appended: two controllers of a cluster sharing one Lease would
    leave one of them waiting for good."""
    lease, controller_id = config.runtime.leader_election_id, config.cluster.controller_id
    if controller_id and lease == DEFAULT_LEADER_ELECTION_ID:
        return f"{lease}-{controller_id}"
    return lease


def leader_election_namespace(config: ControllerConfig) -> str:
    if config.runtime.leader_election_namespace:
        return config.runtime.leader_election_namespace
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or _FALLBACK_LEADER_NAMESPACE
    except OSError:
        return _FALLBACK_LEADER_NAMESPACE


def _given_region(config: ControllerConfig) -> str | None:
    return (config.aws.region or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION"))


def _with_aws(config: ControllerConfig, *, region: str | None = None,
              vpc_id: str | None = None) -> ControllerConfig:
    aws = config.aws
    return dataclasses.replace(config, aws=dataclasses.replace(
        aws, region=region or aws.region, vpc_id=vpc_id or aws.vpc_id))


async def locate_region(config: ControllerConfig) -> ControllerConfig:
    """`config` with its region, upstream's way: the flag, the environment, else the instance
    metadata service. Raises ConfigError."""
    if _given_region(config):
        return config
    metadata = InstanceMetadata.configured(config.aws.api_endpoints)
    try:
        region = await region_from_metadata(metadata)
    except DiscoveryError as exc:
        raise ConfigError(str(exc)) from None
    log.info("region from the instance metadata service", region=region)
    return _with_aws(config, region=region)


async def locate_vpc(config: ControllerConfig, pool: AWSClientPool) -> ControllerConfig:
    """`config` with its VPC, upstream's way: `--aws-vpc-id`, the one VPC with
    `--aws-vpc-tags`, else the instance metadata service (then `NODENAME`'s instance). Raises
    ConfigError."""
    aws = config.aws
    if aws.vpc_id:
        return config
    if aws.vpc_tag_key != "Name":
        log.warning("--aws-vpc-tag-key is deprecated: every tag of --aws-vpc-tags is used")
    try:
        vpc_id = await discover_vpc(pool, tags=aws.vpc_tags,
                                    metadata=InstanceMetadata.configured(aws.api_endpoints))
    except DiscoveryError as exc:
        raise ConfigError(str(exc)) from None
    log.info("VPC discovered", vpc_id=vpc_id,
             by="--aws-vpc-tags" if aws.vpc_tags else "instance metadata")
    return _with_aws(config, vpc_id=vpc_id)


def aws_settings(config: ControllerConfig) -> AWSSettings:
    aws = config.aws
    region = _given_region(config)
    if not region:
        raise ConfigError("--aws-region: required (or set AWS_REGION)")
    return AWSSettings(region=region, endpoint_url=aws.endpoint_url,
                       endpoints=dict(aws.api_endpoints), max_retries=aws.max_retries,
                       throttle=aws.api_throttle,
                       verify_calls_qps=config.checkpoints.budget_qps,
                       verify_calls_burst=config.checkpoints.verify_aws_burst,
                       role_session_name=session_name(config.cluster.name))


def manager_options(config: ControllerConfig, *, identity: str | None = None,
                    heap: HeapSettings | None = None) -> ManagerOptions:
    """`heap`: the garbage collector's tuning, process-wide: only `run` (the process's entry
    point) passes one."""
    runtime, served = config.runtime, config.metrics
    return ManagerOptions(
        identity=identity,
        leader_election=runtime.leader_election,
        leader_election_id=leader_election_id(config),
        leader_election_namespace=leader_election_namespace(config),
        lease_duration=runtime.lease_duration,
        renew_deadline=runtime.renew_deadline,
        retry_period=runtime.retry_period,
        metrics_bind_address=served.bind_addr,
        metrics_secure=served.secure,
        metrics_cert_dir=served.cert_dir,
        health_probe_bind_address=served.health_probe_bind_addr,
        event_component="aws-load-balancer-controller",
        watch_namespaces=runtime.watch_namespace,
        namespace_selector=runtime.selector,
        informer_selectors=informer_selectors(config),
        informer_settings=InformerSettings(resync_period=runtime.sync_period),
        heap=heap,
    )


def informer_selectors(config: ControllerConfig) -> dict[Resource, str]:
    """Of several controllers of a cluster, each serves the TargetGroupBindings labelled with
    its `--controller-id` (the default one: those labelled with none)."""
    return {TARGETGROUPBINDINGS: controller_selector(config.cluster.controller_id)}


def cluster_scope(config: ControllerConfig, *, region: str) -> ClusterScope:
    """`region`: as resolved from the flag or the environment."""
    return ClusterScope(name=config.cluster.name, region=region, vpc_id=config.aws.vpc_id or "",
                        controller_id=config.cluster.controller_id)


def service_settings(config: ControllerConfig, *, region: str) -> service.Settings:
    """The VPC is needed for subnet discovery."""
    if not config.aws.vpc_id:
        raise ConfigError("--aws-vpc-id: required by the Service controller")
    return service.Settings(
        cluster=cluster_scope(config, region=region), config=config.service,
        defaults=config.defaults, backend_sg=config.networking,
        lanes=config.checkpoints.lanes(), gates=config.gates,
        stabilization_interval=config.stabilization.interval)


def ingress_settings(config: ControllerConfig, *, region: str) -> ingress.Settings:
    return ingress.Settings(
        cluster=cluster_scope(config, region=region), config=config.ingress,
        defaults=config.defaults, backend_sg=config.networking,
        lanes=config.checkpoints.lanes(), gates=config.gates,
        stabilization_interval=config.stabilization.interval)


def targetgroupbinding_settings(config: ControllerConfig, *,
                                region: str = "") -> targetgroupbinding.Settings:
    """The cluster's name and VPC scope which target groups bindings may act on, and where
    and how their `spec.networking` rules are kept."""
    cluster = cluster_scope(config, region=region)
    networking = None
    if cluster.vpc_id:
        networking = NetworkingSettings(cluster=cluster, backend=config.networking)
    return targetgroupbinding.Settings(
        cluster=cluster, config=config.targetgroupbinding, lanes=config.checkpoints.lanes(),
        gates=config.gates, networking=networking,
        targets_trusted_for=targets_trusted_for(config))


def targets_trusted_for(config: ControllerConfig) -> float:
    """Half the sync period: the resync that replays every binding each --sync-period finds
    its last comparison older than that and reads its targets again, so each binding's targets
    are read at least once per sync period; a restart compares every binding's targets once
    whatever its last look (upstream's checkpointed bindings wait for their deferred
    reconcile, 30 to 45 minutes later)."""
    return config.runtime.sync_period / 2


def webhook_settings(config: ControllerConfig, *, region: str) -> webhooks.Settings | None:
    """None with --webhook-bind-port=0. The self-managed Secret lives in the controller's own
    namespace, with its Lease and the webhook Service."""
    hooks = config.webhooks
    if hooks.bind_port == 0:
        return None
    cluster = cluster_scope(config, region=region)
    return webhooks.Settings(
        server=hooks.server_options(),
        tls=hooks.self_managed_tls(leader_election_namespace(config)),
        ingress=ingress_settings(config, region=region),
        scope=targetgroupbinding.Scope(cluster_name=cluster.name, vpc_id=cluster.vpc_id),
        networking=targetgroupbinding_settings(config, region=region).networking_policy,
        config=hooks, service=config.service, gates=config.gates,
        quic_env=config.targetgroupbinding.quic_environment_variable_name,
        controller_namespace=leader_election_namespace(config))


def setup_controllers(manager: Manager, pool: AWSClientPool, config: ControllerConfig) -> None:
    """Every controller shares the manager's informers, the AWS pool and the registry (which
    also gets `aiolbc_build_info`). The
    region the models are built for is the one the pool's clients use. This is the one place
    where flags become settings."""
    build_info(manager.registry)
    region = pool.settings.region
    # One backend security group for both kinds of load balancer: each controller's stacks
    # keep it while they use it.
    backend = BackendSecurityGroup(cluster=config.cluster.name, tags=config.defaults.tags,
                                   controller_id=config.cluster.controller_id,
                                   clock=manager.clock)
    # One region listing for every controller's verifications after a restart: the deployers'
    # and the bindings' target group lookups read the same load balancers, target groups and tags.
    snapshot = RegionSnapshot(clock=manager.clock)
    targetgroupbinding.setup(manager, pool=pool,
                             settings=targetgroupbinding_settings(config, region=region),
                             snapshot=snapshot)
    # EnableServiceController off (upstream's switch): no Service is served, none is touched.
    if gates.enabled(config.gates, "EnableServiceController"):
        service.setup(manager, pool=pool, settings=service_settings(config, region=region),
                      backend=backend, snapshot=snapshot)
    ingress.setup(manager, pool=pool, settings=ingress_settings(config, region=region),
                  backend=backend, snapshot=snapshot)
    hooks = webhook_settings(config, region=region)
    if hooks is not None:
        webhooks.setup(manager, pool=pool, settings=hooks)
    # awslbc_controller_cache_object_total, read from the caches at each scrape.
    stores = {"ingress": informers.informer(manager, INGRESSES).store,
              "service": informers.informer(manager, SERVICES).store,
              "targetgroupbinding": manager.informer(TARGETGROUPBINDINGS).store}
    lbc_metrics_for(manager.registry).count_cache_objects(
        {resource: store.__len__ for resource, store in stores.items()})


_BUILD_INFO: weakref.WeakKeyDictionary[CollectorRegistry, Gauge] = weakref.WeakKeyDictionary()


def version() -> str:
    try:
        return metadata.version("aiolbc")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_info(registry: CollectorRegistry) -> Gauge:
    """`aiolbc_build_info{version}` = 1, so that dashboards can tell which release runs
    (registered once per registry)."""
    gauge = _BUILD_INFO.get(registry)
    if gauge is None:
        gauge = Gauge("aiolbc_build_info", "The aiolbc release running (value 1).",
                      ["version"], registry=registry)
        _BUILD_INFO[registry] = gauge
    gauge.labels(version()).set(1)
    return gauge


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
        return await KubeClient.load(config.runtime.kubeconfig, registry=registry,
                                     ca_file=config.runtime.kube_ca_pem_filepath)
    except KubeConfigError as exc:
        ca_file = config.runtime.kube_ca_pem_filepath
        if ca_file and "TLS material" in exc.reason:
            raise ConfigError(f"--kube-ca-pem-filepath: {ca_file}: {exc.reason}") from None
        if config.runtime.kubeconfig is None:
            raise ConfigError(str(exc)) from None  # names the file, or the in-cluster setup
        where = f"{exc.path}: " if exc.path else ""
        raise ConfigError(f"--kubeconfig: {where}{exc.reason}") from None


async def run(config: ControllerConfig) -> int:
    """Start-up fails with one line and nothing else on stderr: a flag or the kubeconfig
    (ConfigError; the region and VPC not given and not found), the API server unreachable past
    --api-server-startup-timeout
    (ApiServerUnavailable), a port that cannot be bound (ConfigError naming its flag)."""
    registry = metrics.default_registry()
    config = await locate_region(config)
    settings = aws_settings(config)
    client = await _client(config, registry)
    async with client:
        await client.wait_for_server(timeout=config.runtime.api_server_startup_timeout)
        async with AWSClientPool(settings, registry=registry) as pool:
            config = await locate_vpc(config, pool)
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
            log.info("starting", cluster=config.cluster.name, region=settings.region,
                     leader_election=config.runtime.leader_election,
                     checkpoints=config.checkpoints.enabled)
            return await manager.run()
