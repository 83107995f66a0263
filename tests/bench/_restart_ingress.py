"""The Ingress variant of the restart benchmark (`restart.py --kind ingress`).

Set-up: N Ingresses (class `alb`, ip targets, one host rule each to its own backend Service,
whose EndpointSlice holds 2 ready pods) in groups of 1 to 5 members, sizes cycling 1, 2, 3, 4,
5: a group of one is an implicit group (no `group.name`), larger ones share one ALB through
`alb.ingress.kubernetes.io/group.name` with `group.order` set. One Manager running the
Ingress and TargetGroupBinding controllers deploys and checkpoints them all. Everything else
(stand-ins as child processes, the three modes, server-side limits during the measured phase,
re-convergence between modes, the figures) is the Service variant's, in `restart.py`; the new
object created right after the restart is one new Ingress, a new implicit group.

`fresh_change_latency_s`: restart → the new Ingress's ALB is `active`, its hostname is in the
Ingress status and its target group holds both pods. `pace` counts, per unchanged group, the
first DescribeListeners of its ALB and, per unchanged binding, its first DescribeTargetHealth.
The JSON adds `groups` (how many ALB stacks the N Ingresses form) to the Service variant's
shape.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from prometheus_client import CollectorRegistry

from controller import checkpoint, targetgroupbinding
from controller import ingress as ingress_controller
from controller.apis import ALB_CONTROLLER
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.aws import RegionSnapshot
from controller.ingress.caches import Caches
from controller.ingress.groups import CLASS_INDEX, GROUP_INDEX, GroupLoader, class_keys, index_keys
from controller.ingress.merge import BuildError
from controller.ingress.model import BUILDER_VERSION, build_group
from controller.settings import ClusterScope
from controller.standins import ServerLimits
from runtime.client import KubeClient
from runtime.errors import AlreadyExists, NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.reconcile import Request
from runtime.resources import ENDPOINTSLICES, INGRESSCLASSES, INGRESSES, SERVICES

if TYPE_CHECKING:  # the type checker sees tests/ as a package; a script sees its own directory
    from tests.bench import restart
else:
    import restart

NAMESPACE, REGION = restart.NAMESPACE, restart.REGION

CLASS = "alb"
GROUP_SIZES = (1, 2, 3, 4, 5)
TGB = restart.tgb_settings


@dataclass(frozen=True)
class IngressMode(restart.Mode):
    ingress: Mapping[str, Any] = field(default_factory=dict)  # IngressSettings overrides


MODES = (
    IngressMode("off", {}, TGB(checkpoints=False), ingress={"checkpoints": False}),
    IngressMode("skip", {}, TGB(checkpoints=False), ingress={"checkpoints": True,
                                                             "lane": False}),
    IngressMode("lane", {}, TGB(verify_qps=restart.VERIFY_QPS,
                                verify_burst=restart.VERIFY_BURST,
                                verify_max_wait=restart.VERIFY_MAX_WAIT,
                                targets_trusted_for=restart.TARGETS_TRUSTED_FOR), budget=True),
)
CONVERGE = IngressMode(
    "converge", {}, TGB(verify_qps=None, max_concurrent_reconciles=restart.CONVERGE_WORKERS),
    throttle=restart.CONVERGE.throttle,
    ingress={"lane": False, "max_concurrent_reconciles": restart.CONVERGE_WORKERS})


def groups_of(n: int) -> list[list[int]]:
    """Ingress indexes per group, sizes cycling through GROUP_SIZES (the last one cut at n)."""
    groups: list[list[int]] = []
    start = 0
    while start < n:
        size = min(GROUP_SIZES[len(groups) % len(GROUP_SIZES)], n - start)
        groups.append(list(range(start, start + size)))
        start += size
    return groups


def unchanged_name(i: int) -> str:
    return f"ing-{i:04d}"


@dataclass
class IngressBench(restart.Bench):
    kind: ClassVar[str] = "ingress"

    @classmethod
    def shape(cls, n: int) -> dict[str, Any]:
        return {"groups": len(groups_of(n))}

    def stacks(self) -> int:
        """One stack per ALB group."""
        return len(groups_of(self.n))
    groups: list[list[int]] = field(default_factory=list)


    def ingress_settings(self, **overrides: Any) -> ingress_controller.Settings:
        values: dict[str, Any] = {
            "cluster": ClusterScope(name=restart.CLUSTER, region=self.seed.region,
                                    vpc_id=self.seed.vpc_id),
            "ingress_class": CLASS, "verify_qps": restart.VERIFY_QPS,
            "verify_burst": restart.VERIFY_BURST, "verify_max_wait": restart.VERIFY_MAX_WAIT}
        values.update(overrides)
        return ingress_controller.Settings(
            **restart.split_lanes(values, ingress_controller.IngressConfig))

    async def start(self, mode: restart.Mode) -> restart.Run:
        assert isinstance(mode, IngressMode)
        client = await KubeClient.from_kubeconfig(self.kubeconfig)
        pool, pool_registry = mode.pool(self.proxy.url)
        manager = Manager(client, options=restart.manager_options(),
                          registry=CollectorRegistry())
        # One region snapshot for both, as `aiolbc run` wires them (controller/app.py).
        snapshot = RegionSnapshot(clock=manager.clock)
        targetgroupbinding.setup(manager, pool=pool, settings=self.tgb_settings(mode),
                                 snapshot=snapshot)
        ingress_controller.setup(manager, pool=pool,
                                 settings=self.ingress_settings(**mode.ingress),
                                 snapshot=snapshot)
        await pool.warm()  # as `aiolbc run` does before its manager runs
        return restart.Run(manager, asyncio.create_task(manager.run()), client, pool,
                           pool_registry)

    # ---- Kubernetes objects -----------------------------------------------------------------

    async def create_service(self, name: str, index: int,
                             annotations: Mapping[str, str] | None = None) -> None:
        """An Ingress `name` (one host rule) and its backend Service `name` with 2 ready
        pods; `annotations` add group membership."""
        service: Obj = {
            "metadata": {"name": name},
            "spec": {"type": "ClusterIP", "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                "protocol": "TCP"}]}}
        endpoints = restart.endpoint_slice(name, index)
        ingress: Obj = {
            "metadata": {"name": name, "annotations": {
                PREFIX + "target-type": "ip", **(annotations or {})}},
            "spec": {"ingressClassName": CLASS, "rules": [{
                "host": f"{name}.example.com", "http": {"paths": [{
                    "path": "/", "pathType": "Prefix", "backend": {"service": {
                        "name": name, "port": {"number": 80}}}}]}}]}}
        for resource, obj in ((SERVICES, service), (ENDPOINTSLICES, endpoints),
                              (INGRESSES, ingress)):
            with contextlib.suppress(AlreadyExists):
                await self.client.create(resource, obj, NAMESPACE)

    async def ingresses(self) -> dict[str, Obj]:
        listed = await self.client.list(INGRESSES, NAMESPACE)
        return {str(i["metadata"]["name"]): i for i in listed["items"]}

    async def caches(self, ingresses: Iterable[Obj] | None = None, *,
                     services: Iterable[Obj] | None = None) -> Caches:
        """The pure stage's inputs, read from the API server as the controller's caches
        hold them (`services`: only these, instead of every Service listed)."""
        caches = Caches()
        caches.ingresses.add_indexer(GROUP_INDEX, index_keys)
        caches.ingresses.add_indexer(CLASS_INDEX, class_keys)
        for ing in ingresses if ingresses is not None else (await self.ingresses()).values():
            caches.ingresses.upsert(ing)
        if services is None:
            services = (await self.client.list(SERVICES, NAMESPACE))["items"]
        for svc in services:
            caches.services.upsert(svc)
        for cls in (await self.client.list(INGRESSCLASSES))["items"]:
            caches.classes.upsert(cls)
        return caches

    async def unchanged_checkpointed(self) -> int:
        """How many of the N unchanged Ingresses carry their group's checkpoint, with their
        hostname in status and a checkpointed binding for their backend."""
        caches = await self.caches()
        loader = GroupLoader(caches, ingress_class=CLASS)
        builder = self.ingress_settings().builder()
        bound = {str(b["spec"]["serviceRef"]["name"]) for b in await self.bindings()
                 if checkpoint.stored(b)}
        done = 0
        for group in self.groups:
            request = _request(group)
            try:
                value = checkpoint.compute(
                    build_group(loader.load(request), caches, builder).stack,
                    version=BUILDER_VERSION)
            except BuildError:
                continue
            for i in group:
                ing = caches.ingresses.get(f"{NAMESPACE}/{unchanged_name(i)}")
                if (ing is not None and checkpoint.stored(ing) == value and _hostname(ing)
                        and unchanged_name(i) in bound):
                    done += 1
        return done

    # ---- set-up and re-convergence --------------------------------------------------------

    async def converge(self, *, delete: str | None = None) -> None:
        run = await self.start(CONVERGE)
        try:
            if delete is not None:
                for resource, name in ((INGRESSES, delete), (SERVICES, delete),
                                       (ENDPOINTSLICES, f"{delete}-abc")):
                    with contextlib.suppress(NotFound):
                        await self.client.delete(resource, name, NAMESPACE)
            last = restart.CLOCK.now()
            while True:
                await asyncio.sleep(1.0)
                done = await self.unchanged_checkpointed()
                gone = delete is None or delete not in await self.ingresses()
                if done == self.n and gone and await restart._held(run.idle, restart.IDLE_HOLD):
                    return
                if restart.CLOCK.now() - last >= 3:
                    restart.log(f"converging: {done}/{self.n} checkpointed"
                        + ("" if gone else f", {delete} still being deleted"))
                    last = restart.CLOCK.now()
        finally:
            await run.kill()

    async def setup(self) -> None:
        self.groups = groups_of(self.n)
        restart.log(f"creating {self.n} Ingresses in {len(self.groups)} groups")
        await self.pod_enis()
        with contextlib.suppress(AlreadyExists):
            await self.client.create(INGRESSCLASSES, {"metadata": {"name": CLASS},
                                                      "spec": {"controller": ALB_CONTROLLER}})
        members: list[tuple[int, dict[str, str]]] = []
        for group in self.groups:
            for order, i in enumerate(group):
                members.append((i, {} if len(group) == 1 else {
                    PREFIX + "group.name": _request(group).name,
                    PREFIX + "group.order": str(order + 1)}))
        for start in range(0, self.n, 64):
            await asyncio.gather(*(self.create_service(unchanged_name(i), i, annotations)
                                   for i, annotations in members[start:start + 64]))
        await self.converge()
        self.unchanged_arns = await asyncio.to_thread(self._collect_arns)
        restart.log(f"set-up done: {len(self.unchanged_arns)} ARNs of unchanged stacks")

    # ---- one measured mode ------------------------------------------------------------------

    async def fresh_ready(self, name: str) -> bool:
        try:
            ing = await self.client.get(INGRESSES, name, NAMESPACE)
        except NotFound:
            return False
        if not _hostname(ing):
            return False
        # Its backend Services only: this check runs every 0.1 s in the controller's process,
        # and listing all N Services each time would load the loop it measures.
        backends = []
        for name_ in sorted(_backends(ing)):
            try:
                backends.append(await self.client.get(SERVICES, name_, NAMESPACE))
            except NotFound:
                return False
        caches = await self.caches([ing], services=backends)
        loader = GroupLoader(caches, ingress_class=CLASS)
        try:
            stack = build_group(loader.load(Request(NAMESPACE, name)), caches,
                                self.ingress_settings().builder()).stack
        except BuildError:
            return False
        return await self.stack_ready(stack)


def _request(group: list[int]) -> Request:
    if len(group) == 1:
        return Request(NAMESPACE, unchanged_name(group[0]))
    return Request("", f"grp-{group[0]:04d}")


def _backends(ing: Obj) -> set[str]:
    """The Service names the Ingress's rules send to."""
    return {str(path["backend"]["service"]["name"])
            for rule in (ing.get("spec") or {}).get("rules") or []
            for path in (rule.get("http") or {}).get("paths") or []
            if (path.get("backend") or {}).get("service")}


def _hostname(ing: Obj) -> str:
    entries = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return str(entries[0].get("hostname") or "") if entries else ""


async def run(n: int, cap: float, modes: Iterable[str], *,
              limits: ServerLimits) -> dict[str, Any]:
    """`restart.run` for Ingresses; `modes` are names out of off, skip, lane."""
    by_name = {m.name: m for m in MODES}
    return await restart.run(n, cap, [by_name[name] for name in modes], limits=limits,
                             bench_type=IngressBench)
