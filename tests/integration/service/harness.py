"""A cluster for Service tests: the local API server with the CRDs, one Manager running the
Service and TargetGroupBinding controllers against moto behind the fault proxy, functions to
shape Services and EndpointSlices, and read-only inspection of moto (a plain client that
bypasses the proxy, so inspecting never shows up in the proxy's log)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry

from controller import service as service_controller
from controller import targetgroupbinding as tgb_controller
from controller.apis import (
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
    TARGETGROUPBINDINGS,
)
from controller.aws import AWSClientPool
from controller.reconcilers import LaneSettings
from controller.service.annotations import PREFIX
from controller.standins import AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES, EVENTS, SERVICES
from tests.integration.running import RunsManager

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"
NLB_CLASS = "service.k8s.aws/nlb"




def service_settings(seed: AwsSeed, **overrides: Any) -> service_controller.Settings:
    """Settings for tests; lane settings (`lane=`, `verify_qps=`, ...) may be given flat."""
    lanes = {k: overrides.pop(k) for k in list(overrides) if k in LaneSettings.__dataclass_fields__}
    values: dict[str, Any] = {
        "cluster_name": seed.cluster_name,
        "region": seed.region, "vpc_id": seed.vpc_id,
        "in_use_backoff": 0.01,
        "cleanup_poll": 0.2,
        "lanes": LaneSettings(**lanes),
    }
    values.update(overrides)
    return service_controller.Settings(**values)


@dataclass
class Cluster(RunsManager):
    default_controller: ClassVar[str] = service_controller.CONTROLLER_NAME

    server: EnvTestServer
    client: KubeClient
    pool: AWSClientPool
    seed: AwsSeed
    elbv2: Any  # a plain botocore client on moto, for inspection
    namespace: str = "default"
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    async def start(self, *, settings: service_controller.Settings | None = None,
                    tgb_settings: tgb_controller.Settings | None = None
                    ) -> Manager:
        def setup(manager: Manager) -> None:
            service_controller.setup(manager, pool=self.pool,
                                     settings=settings or service_settings(self.seed))
            tgb_controller.setup(manager, pool=self.pool, settings=tgb_settings or
                                 tgb_controller.Settings(cluster_name=self.seed.cluster_name,
                                                         vpc_id=self.seed.vpc_id))

        return await self.launch(setup)

    # ---- Kubernetes objects ---------------------------------------------------------------

    async def service(self, name: str, *, annotations: dict[str, str] | None = None,
                      ports: list[Obj] | None = None, target_type: str | None = "ip",
                      load_balancer_class: str | None = NLB_CLASS) -> Obj:
        notes = {(k if "/" in k else PREFIX + k): v for k, v in (annotations or {}).items()}
        if target_type:
            notes.setdefault(PREFIX + "aws-load-balancer-nlb-target-type", target_type)
        spec: Obj = {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": ports or [http_port()]}
        if load_balancer_class:
            spec["loadBalancerClass"] = load_balancer_class
        return await self.client.create(SERVICES, {
            "metadata": {"name": name, "annotations": notes}, "spec": spec}, self.namespace)

    async def get_service(self, name: str) -> Obj:
        return await self.client.get(SERVICES, name, self.namespace)

    async def patch_service(self, name: str, body: Obj, patch_type: str = "merge") -> Obj:
        return await self.client.patch(SERVICES, name, body, self.namespace,
                                       patch_type=patch_type)  # type: ignore[arg-type]

    async def service_gone(self, name: str) -> bool:
        try:
            await self.get_service(name)
        except NotFound:
            return True
        return False

    async def endpoints(self, service: str, ips: list[str], *,
                        ports: tuple[tuple[str, int], ...] = (("http", 8080),)) -> None:
        """Create or replace the one EndpointSlice of `service`."""
        name = f"{service}-abc"
        body: Obj = {
            "metadata": {"name": name, "namespace": self.namespace,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True,
                                                             "terminating": False},
                           "targetRef": {"kind": "Pod", "name": f"pod-{ip}",
                                         "uid": f"uid-{ip}"}} for ip in ips],
        }
        try:
            current = await self.client.get(ENDPOINTSLICES, name, self.namespace)
        except NotFound:
            await self.client.create(ENDPOINTSLICES, body, self.namespace)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await self.client.update(ENDPOINTSLICES, body)

    async def bindings(self, service: str) -> list[Obj]:
        selector = (f"{SERVICE_STACK_NAME_LABEL}={service},"
                    f"{SERVICE_STACK_NAMESPACE_LABEL}={self.namespace}")
        listed = await self.client.list(TARGETGROUPBINDINGS, self.namespace,
                                        label_selector=selector)
        return list(listed["items"])

    async def events(self, name: str) -> list[Obj]:
        listed = await self.client.list(EVENTS, self.namespace,
                                        field_selector=f"involvedObject.name={name}")
        return list(listed["items"])

    # ---- AWS, read directly from moto -------------------------------------------------------

    def load_balancer(self, name: str) -> Obj | None:
        found = [lb for lb in self.elbv2.describe_load_balancers()["LoadBalancers"]
                 if lb["LoadBalancerName"] == name]
        return found[0] if found else None

    def load_balancers(self) -> list[Obj]:
        return list(self.elbv2.describe_load_balancers()["LoadBalancers"])

    def load_balancer_at(self, dns_name: str | None) -> Obj | None:
        found = [lb for lb in self.load_balancers() if lb["DNSName"] == dns_name]
        return found[0] if found else None

    def listeners(self, lb_arn: str) -> dict[int, Obj]:
        return {int(lis["Port"]): lis for lis in
                self.elbv2.describe_listeners(LoadBalancerArn=lb_arn)["Listeners"]}

    def target_groups(self) -> dict[str, Obj]:
        return {tg["TargetGroupName"]: tg
                for tg in self.elbv2.describe_target_groups()["TargetGroups"]}

    def registered(self, arn: str) -> set[tuple[str, int]]:
        resp = self.elbv2.describe_target_health(TargetGroupArn=arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}


def http_port(port: int = 80, target: int = 8080, name: str = "http") -> Obj:
    return {"name": name, "port": port, "targetPort": target, "protocol": "TCP"}


def hostname(svc: Obj) -> str | None:
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return ingress[0].get("hostname") if ingress else None


def condition(svc: Obj, type_: str) -> Obj | None:
    for cond in (svc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None
