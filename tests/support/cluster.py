"""The one integration harness: a local API server (with the CRDs), AWS (moto, behind the fault
proxy for the controllers; `aws` for the test's own looks), the objects a test makes, and the
controllers under test.

A `Cluster` is made with the controllers it runs (`SERVICE`, `INGRESS`, `TARGETGROUPBINDING`;
set up in the order given, so the first is the one `reconciles()` counts by default).
`start()` runs one Manager with them, each with its test settings unless given others;
`stop()` is SIGTERM, `kill()` a crash; `settled()` waits until no controller has had anything
to do for a while. `start_app(*flags)` runs every controller as `aiolbc run` sets them up from
flags, in the test's Manager; `run(*flags)` runs `aiolbc run` itself (support/process.py), for
tests of the CLI path.

Objects come from `objects.py` and are created in `namespace`. The harness's defaults are the
integration tests': an NLB Service or an Ingress backend gets one ready endpoint at
`endpoint_ip(name)` unless told otherwise, and the API server assigns nodePorts.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import ipaddress
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from controller import app
from controller import ingress as ingress_controller
from controller import service as service_controller
from controller import targetgroupbinding as tgb_controller
from controller.apis import (
    ALB_CONTROLLER,
    CHECKPOINT_ANNOTATION,
    INGRESSCLASSPARAMS,
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
    TARGETGROUPBINDINGS,
)
from controller.aws import AWSClientPool, RegionSnapshot
from controller.config import parse_config
from controller.standins import AwsSeed, create_pod_enis
from runtime.client import KubeClient, PatchType
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager, ManagerOptions
from runtime.objects import Obj
from runtime.resources import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    EVENTS,
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    Resource,
)
from tests.support import objects
from tests.support.aws import AwsInspector
from tests.support.paths import CRDS
from tests.support.process import ControllerRun
from tests.support.settings import ingress_settings, service_settings, tgb_settings
from tests.support.waiting import eventually

SERVICE = "service"
INGRESS = "ingress"
TARGETGROUPBINDING = "targetgroupbinding"
Controllers = tuple[str, ...]
ALL_CONTROLLERS: Controllers = (SERVICE, INGRESS, TARGETGROUPBINDING)
# The `controller` label of each controller's metrics.
METRIC_NAMES = {SERVICE: service_controller.CONTROLLER_NAME,
                INGRESS: ingress_controller.CONTROLLER_NAME,
                TARGETGROUPBINDING: tgb_controller.CONTROLLER_NAME}
RESULTS = ("success", "error", "requeue", "requeue_after")
# What the API server assigns: a create must not carry it.
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")


@dataclass
class Cluster:
    server: EnvTestServer
    client: KubeClient  # the test's own client (an administrator)
    pool: AWSClientPool  # the controllers' AWS, through the fault proxy
    seed: AwsSeed
    aws: AwsInspector  # the test's own AWS, straight to moto
    controllers: Controllers = ALL_CONTROLLERS
    kubeconfig: Path | None = None  # the test client's, for `run()`
    namespace: str = "default"
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    _subnets: list[Any] | None = None

    # ---- the controllers --------------------------------------------------------------------

    async def start(self, *, service: service_controller.Settings | None = None,
                    ingress: ingress_controller.Settings | None = None,
                    targetgroupbinding: tgb_controller.Settings | None = None,
                    options: ManagerOptions | None = None, client: KubeClient | None = None,
                    on_setup: Callable[[Manager], object] | None = None,
                    region_snapshot: bool = True) -> Manager:
        """Run a new Manager with this cluster's controllers (as `client`, default the test's
        own; `on_setup` sees it before it runs) and return once it leads. The controllers
        share one region snapshot, as `aiolbc run` wires them, unless `region_snapshot` is
        false (each deployer its own, the bindings' lookups none)."""
        given = {SERVICE: service, INGRESS: ingress, TARGETGROUPBINDING: targetgroupbinding}
        unused = [name for name, value in given.items()
                  if value is not None and name not in self.controllers]
        if unused:
            raise ValueError(f"settings for {unused}, which this cluster does not run")

        def setup(manager: Manager) -> None:
            snapshot = RegionSnapshot(clock=manager.clock) if region_snapshot else None
            for name in self.controllers:
                if name == SERVICE:
                    service_controller.setup(manager, pool=self.pool,
                                             settings=service or service_settings(self.seed),
                                             snapshot=snapshot)
                elif name == INGRESS:
                    ingress_controller.setup(manager, pool=self.pool,
                                             settings=ingress or ingress_settings(self.seed),
                                             snapshot=snapshot)
                elif name == TARGETGROUPBINDING:
                    tgb_controller.setup(manager, pool=self.pool,
                                         settings=targetgroupbinding or tgb_settings(self.seed),
                                         snapshot=snapshot)
                else:
                    raise ValueError(f"unknown controller {name!r}")
            if on_setup is not None:
                on_setup(manager)

        return await self._launch(setup, options=options, client=client)

    async def start_app(self, *flags: str, client: KubeClient | None = None,
                        on_setup: Callable[[Manager], object] | None = None) -> Manager:
        """Run a new Manager with every controller as `aiolbc run` sets them up
        (`controller.app`) from this cluster's flags and then `flags`, on this cluster's AWS
        pool (through the fault proxy), as `client` (`on_setup` sees it before it runs, e.g.
        a `WebhookHarness`); return once it leads."""
        config = parse_config([*self._flags(), *flags])

        def setup(manager: Manager) -> None:
            app.setup_controllers(manager, self.pool, config)
            if on_setup is not None:
                on_setup(manager)

        # /metrics as the flags serve it (off unless `flags` say otherwise), the namespaces
        # the flags serve.
        options = ManagerOptions(metrics_bind_address=config.metrics.bind_addr,
                                 watch_namespaces=config.runtime.watch_namespace,
                                 namespace_selector=config.runtime.selector,
                                 informer_selectors=app.informer_selectors(config))
        return await self._launch(setup, client=client, options=options)

    async def _launch(self, setup: Callable[[Manager], None], *,
                      options: ManagerOptions | None = None,
                      client: KubeClient | None = None) -> Manager:
        self.registry = CollectorRegistry()
        manager = Manager(client or self.client, options=options or ManagerOptions(),
                          registry=self.registry)
        setup(manager)
        self.manager = manager
        self.task = asyncio.create_task(manager.run())
        await eventually(lambda: asyncio.sleep(0, self.manager is not None
                                               and self.manager.leading))
        return manager

    async def stop(self) -> int:
        """Stop gracefully (as on SIGTERM); the exit code."""
        assert self.manager is not None
        assert self.task is not None
        self.manager.stop()
        code = await asyncio.wait_for(self.task, 15)
        self.manager, self.task = None, None
        return code

    async def kill(self) -> None:
        """Lose the process: nothing graceful, in-memory caches gone."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.manager, self.task = None, None

    async def close(self) -> None:
        if self.task is not None:
            await self.kill()

    def reconciles(self, controller: str | None = None, result: str | None = None) -> float:
        """Reconciles finished so far by one controller (its metrics name; default the first
        of this cluster's), with one result or any."""
        name = controller or METRIC_NAMES[self.controllers[0]]
        return sum(self.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": name, "result": r}) or 0.0
            for r in ((result,) if result else RESULTS))

    def _all_reconciles(self) -> float:
        if self.manager is None:
            return 0.0
        return sum(self.reconciles(c.name) for c in self.manager.controllers)

    async def settled(self, quiet: float = 0.4, *, timeout: float = 120.0) -> None:
        """Wait until no controller has had anything to do for `quiet` seconds; fail, naming
        what kept them busy, after `timeout` (rather than hang the suite)."""
        assert self.manager is not None
        loop = asyncio.get_running_loop()
        last, since = self._all_reconciles(), loop.time()
        deadline = since + timeout
        while True:
            await asyncio.sleep(0.05)
            busy = [f"{c.name}: {len(c.queue)} queued, {c.queue.in_flight} in flight, "
                    f"{len(c.decisions)} to decide"
                    for c in self.manager.controllers
                    if len(c.queue) or c.queue.in_flight or len(c.decisions)]
            now = loop.time()
            if busy or self._all_reconciles() != last:
                last, since = self._all_reconciles(), now
            elif now - since >= quiet:
                return
            if now > deadline:
                raise AssertionError(f"the controllers did not settle within {timeout:g}s: "
                                     + ("; ".join(busy) or "still reconciling"))

    def argv(self, *flags: str, cluster: str | None = None, region: str | None = None,
             vpc_id: str | None = None, through_proxy: bool = False) -> list[str]:
        """`aiolbc run` flags for this cluster, straight to moto (through the fault proxy, so
        that `aws_proxy.log` holds its calls, with `through_proxy`), without leader election
        or HTTP servers; `flags` last."""
        return [*self._flags(cluster=cluster, region=region, vpc_id=vpc_id),
                *self._where(through_proxy=through_proxy), *flags]

    def _where(self, *, through_proxy: bool) -> list[str]:
        """Where the API server and AWS are."""
        assert self.kubeconfig is not None, "this cluster has no kubeconfig to run with"
        endpoint = (self.pool if through_proxy else self.aws.pool).settings.endpoint_url
        return ["--kubeconfig", str(self.kubeconfig), "--aws-endpoint-url", str(endpoint)]

    def _flags(self, *, cluster: str | None = None, region: str | None = None,
               vpc_id: str | None = None) -> list[str]:
        return ["--cluster-name", cluster or self.seed.cluster_name,
                "--aws-region", region or self.seed.region,
                "--aws-vpc-id", vpc_id or self.seed.vpc_id,
                "--enable-leader-election", "false",
                "--metrics-bind-addr", "0", "--health-probe-bind-addr", "0",
                "--webhook-bind-port", "0"]

    async def run(self, *flags: str, through_proxy: bool = False, bare: bool = False,
                  **where: str) -> ControllerRun:
        """Start `aiolbc run` with `argv(*flags, through_proxy=..., **where)`; `bare`: only
        where the API server and AWS are, then `flags` (a command line as a deployment renders
        it)."""
        argv = ([*self._where(through_proxy=through_proxy), *flags] if bare
                else self.argv(*flags, through_proxy=through_proxy, **where))
        return await ControllerRun(argv).start()

    # ---- reading and writing objects --------------------------------------------------------

    def _namespace_of(self, res: Resource) -> str | None:
        return self.namespace if res.namespaced else None

    async def create(self, res: Resource, obj: Obj) -> Obj:
        """Create a factory's object in this cluster's namespace, without what the server
        assigns."""
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        for key in _SERVER_FIELDS:
            meta.pop(key, None)
        meta.pop("namespace", None)
        return await self.client.create(res, body, self._namespace_of(res))

    async def get(self, res: Resource, name: str) -> Obj:
        return await self.client.get(res, name, self._namespace_of(res))

    async def find(self, res: Resource, name: str) -> Obj | None:
        try:
            return await self.get(res, name)
        except NotFound:
            return None

    async def gone(self, res: Resource, name: str) -> bool:
        return await self.find(res, name) is None

    async def patch(self, res: Resource, name: str, body: Any,
                    patch_type: PatchType = "merge") -> Obj:
        return await self.client.patch(res, name, body, self._namespace_of(res),
                                       patch_type=patch_type)

    async def annotate(self, res: Resource, name: str,
                       annotations: Mapping[str, str | None]) -> Obj:
        return await self.patch(res, name, {"metadata": {"annotations": dict(annotations)}})

    async def delete(self, res: Resource, name: str) -> None:
        await self.client.delete(res, name, self._namespace_of(res))

    async def _replace(self, res: Resource, obj: Obj) -> Obj:
        """Create `obj`, or replace the one of that name (its resourceVersion guards it)."""
        current = await self.find(res, obj["metadata"]["name"])
        if current is None:
            return await self.create(res, obj)
        body = copy.deepcopy(obj)
        body["metadata"] = {**current["metadata"], **{
            k: v for k, v in body["metadata"].items() if k not in _SERVER_FIELDS}}
        body["metadata"]["namespace"] = current["metadata"].get("namespace")
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return await self.client.update(res, body)

    async def checkpoint(self, res: Resource, name: str) -> str:
        """The object's checkpoint annotation ("" when it has none or is gone)."""
        return objects.annotation(await self.find(res, name), CHECKPOINT_ANNOTATION)

    async def events(self, name: str, *, of: Resource | None = None) -> list[Obj]:
        """core/v1 Events about the object `name` (of that kind, if given)."""
        selector = f"involvedObject.name={name}"
        if of is not None:
            selector += f",involvedObject.kind={of.kind}"
        listed = await self.client.list(EVENTS, self.namespace, field_selector=selector)
        return list(listed.get("items") or [])

    # ---- Services and their endpoints ---------------------------------------------------------

    async def service(self, name: str, *, port: int = 80, target_port: int | str = 8080,
                      type_: str = "NodePort", annotations: Mapping[str, str] | None = None
                      ) -> Obj:
        """A Service with one port named `http` and no endpoints (`endpoints()` adds them)."""
        return await self.create(SERVICES, objects.backend_service(
            name, annotations, port=port, target_port=target_port, node_port=None,
            type_=type_))

    async def backend(self, name: str, annotations: Mapping[str, str] | None = None, *,
                      port: int = 80, target_port: int = 8080,
                      endpoint_ips: Sequence[str] | None = None) -> Obj:
        """A NodePort Service an Ingress routes to, with one ready endpoint (at
        `endpoint_ip(name)` unless `endpoint_ips` says otherwise)."""
        svc = await self.service(name, port=port, target_port=target_port,
                                 annotations=annotations)
        await self._initial_endpoints(name, endpoint_ips, target_port)
        return svc

    async def nlb_service(self, name: str, annotations: Mapping[str, str] | None = None, *,
                          ports: Sequence[Obj] | None = None, target_type: str | None = "ip",
                          load_balancer_class: str | None = objects.NLB_CLASS,
                          endpoint_ips: Sequence[str] | None = None, **spec: Any) -> Obj:
        """A Service asking for an NLB (ip targets, port 80 -> 8080 by default), with one ready
        endpoint (at `endpoint_ip(name)` unless `endpoint_ips` says otherwise); `spec` adds to
        its spec."""
        svc = await self.create(SERVICES, objects.nlb_service(
            name, annotations, ports=ports, target_type=target_type,
            load_balancer_class=load_balancer_class, **spec))
        await self._initial_endpoints(name, endpoint_ips, 8080)
        return svc

    async def _initial_endpoints(self, service: str, ips: Sequence[str] | None,
                                 port: int) -> None:
        ips = (objects.endpoint_ip(service),) if ips is None else ips
        if ips:
            await self.endpoints(service, ips, ports=(("http", port),))

    async def endpoints(self, service: str, ips: Sequence[str], *,
                        ports: Sequence[tuple[str, int]] = (("http", 8080),),
                        not_ready: Sequence[str] = (), slice_name: str | None = None) -> None:
        """Create or replace one EndpointSlice of `service` (by default its only one). As the
        kubelet and the VPC CNI would, each pod address gets a network interface in the
        seeded VPC's node group first (addresses outside the VPC's subnets get none)."""
        await self.pod_enis(ips)
        await self._replace(ENDPOINTSLICES, objects.endpoint_slice(
            service, ips, name=slice_name, ports=ports, not_ready=not_ready))

    async def pod_enis(self, ips: Sequence[str]) -> None:
        """Pod network interfaces for the addresses of `ips` that fall in the VPC's subnets."""
        inside = [ip for ip in ips if any(ipaddress.ip_address(ip) in net
                                          for net in await self._subnet_networks())]
        if inside:
            url = str(self.aws.pool.settings.endpoint_url)
            await asyncio.to_thread(create_pod_enis, url, self.seed, inside)

    async def _subnet_networks(self) -> list[Any]:
        if self._subnets is None:
            resp = await self.aws.call("ec2", "DescribeSubnets", Filters=[
                {"Name": "vpc-id", "Values": [self.seed.vpc_id]}])
            self._subnets = [ipaddress.ip_network(s["CidrBlock"]) for s in resp["Subnets"]]
        return self._subnets

    async def node(self, name: str, instance_id: str, *, ready: bool = True,
                   unschedulable: bool = False, labels: Mapping[str, str] | None = None) -> Obj:
        created = await self.create(NODES, objects.node(
            name, instance_id, zone=f"{self.seed.region}a", unschedulable=unschedulable,
            labels=labels))
        # status is a subresource: the create dropped it, as on a real API server
        await self.set_node_ready(name, ready)
        return created

    async def set_node_ready(self, name: str, ready: bool) -> None:
        await self.client.patch(NODES, name, {"status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}},
            subresource="status")

    async def pod(self, name: str, *, labels: Mapping[str, str] | None = None,
                  gates: Sequence[str] = (), conditions: Mapping[str, str] | None = None,
                  ip: str | None = None) -> Obj:
        """A pod with readiness `gates`; its status (`conditions` {type: status}, `ip`) is a
        subresource, written after the create as the kubelet would."""
        await self.create(PODS, objects.pod(name, labels=labels, gates=gates))
        status = objects.pod(name, conditions=conditions, ip=ip)["status"]
        return await self.client.patch(PODS, name, {"status": status}, self.namespace,
                                       subresource="status")

    async def label_namespace(self, labels: Mapping[str, str]) -> None:
        if await self.find(NAMESPACES, self.namespace) is None:
            await self.client.create(NAMESPACES, {"metadata": {"name": self.namespace,
                                                               "labels": dict(labels)}})
        else:
            await self.patch(NAMESPACES, self.namespace, {"metadata": {"labels": dict(labels)}})

    # ---- Ingresses ----------------------------------------------------------------------------

    async def ingress(self, name: str, annotations: Mapping[str, str | None] | None = None, *,
                      paths: Sequence[Obj] | None = None, backend: str | None = None,
                      backend_port: int | str = 80, host: str | None = None,
                      class_name: str | None = "alb", tls_hosts: Sequence[str] | None = None,
                      rules: Sequence[Obj] | None = None) -> Obj:
        """An Ingress with `paths`, or one path `/` to `backend`."""
        if paths is None and backend is not None:
            paths = [objects.ingress_path("/", backend, backend_port)]
        return await self.create(INGRESSES, objects.ingress(
            name, annotations, paths=paths if paths is not None else [], host=host,
            class_name=class_name, tls_hosts=tls_hosts, rules=rules))

    async def ingress_class(self, name: str = "alb", *, params: str | None = None,
                            default: bool = False,
                            controller: str = ALB_CONTROLLER) -> Obj:
        return await self.create(INGRESSCLASSES, objects.ingress_class(
            name, params=params, default=default, controller=controller))

    async def class_params(self, name: str, spec: Obj) -> Obj:
        return await self.create(INGRESSCLASSPARAMS, objects.class_params(name, spec))

    async def secret(self, name: str, data: Mapping[str, str]) -> Obj:
        """Create the Secret, or replace its data."""
        return await self._replace(SECRETS, objects.secret(name, data))

    # ---- TargetGroupBindings ------------------------------------------------------------------

    async def target_group(self, name: str, *, target_type: str = "ip",
                           protocol: str = "HTTP", port: int = 80, vpc_id: str | None = None,
                           tags: dict[str, str] | None = None) -> str:
        """A target group made by hand (in the seeded VPC unless `vpc_id` says otherwise);
        its ARN."""
        return await self.aws.create_target_group(name, vpc_id=vpc_id or self.seed.vpc_id,
                                                  target_type=target_type, protocol=protocol,
                                                  port=port, tags=tags)

    async def binding(self, name: str, *, service: str, port: int | str = 80,
                      arn: str | None = None, tg_name: str | None = None,
                      target_type: str | None = "ip", multi_cluster: bool = False,
                      extra: Obj | None = None) -> Obj:
        return await self.create(TARGETGROUPBINDINGS, objects.target_group_binding(
            name, service=service, port=port, arn=arn, tg_name=tg_name,
            target_type=target_type, multi_cluster=multi_cluster, extra=extra))

    async def bindings(self, service: str | None = None) -> list[Obj]:
        """The TargetGroupBindings in the namespace; with `service`, those its NLB manages."""
        selector = None
        if service is not None:
            selector = (f"{SERVICE_STACK_NAME_LABEL}={service},"
                        f"{SERVICE_STACK_NAMESPACE_LABEL}={self.namespace}")
        listed = await self.client.list(TARGETGROUPBINDINGS, self.namespace,
                                        label_selector=selector)
        return list(listed.get("items") or [])

    async def tracked(self, binding: str) -> set[str] | None:
        """The multi-cluster tracking ConfigMap's targets, None when it does not exist."""
        cm = await self.find(CONFIGMAPS, f"aws-lbc-targets-{binding}")
        if cm is None:
            return None
        raw = str((cm.get("data") or {}).get("targets") or "")
        return {part for part in raw.split(",") if part}


@contextlib.asynccontextmanager
async def local_cluster(*, seed: AwsSeed, pool: AWSClientPool, aws: AwsInspector,
                        directory: Path, controllers: Controllers = ALL_CONTROLLERS,
                        cls: type[Cluster] = Cluster) -> AsyncIterator[Cluster]:
    """A cluster on a new local API server with the CRDs; its kubeconfig goes in `directory`.
    A Manager still running at the end is killed."""
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            cluster = cls(server=server, client=client, pool=pool, seed=seed, aws=aws,
                          controllers=controllers, kubeconfig=kubeconfig)
            try:
                yield cluster
            finally:
                await cluster.close()
