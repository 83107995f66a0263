"""A cluster for Ingress tests: the local API server, one Manager running the Ingress and
TargetGroupBinding controllers against moto behind the fault proxy, and object factories."""

from __future__ import annotations

import asyncio
import base64
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry

from controller import ingress as ingress_controller
from controller import targetgroupbinding as tgb_controller
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.ingress import CONTROLLER_NAME
from controller.reconcilers import LaneSettings
from controller.standins import AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES, INGRESSCLASSES, INGRESSES, SECRETS, SERVICES
from tests.integration.running import RunsManager
from tests.waiting import eventually

__all__ = ["CRDS", "IngressCluster", "eventually"]

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"





def _n(name: str) -> int:
    return zlib.crc32(name.encode())


def endpoint_ip(service: str) -> str:
    """The one endpoint `IngressCluster.service` gives a Service."""
    return f"10.0.2.{10 + _n(service) % 200}"


def path(p: str, service: str, port: int | str = 80, path_type: str = "Prefix") -> Obj:
    port_ref = {"number": port} if isinstance(port, int) else {"name": port}
    return {"path": p, "pathType": path_type,
            "backend": {"service": {"name": service, "port": port_ref}}}


@dataclass
class IngressCluster(RunsManager):
    default_controller: ClassVar[str] = CONTROLLER_NAME

    server: EnvTestServer
    client: KubeClient
    pool: AWSClientPool
    seed: AwsSeed
    namespace: str = "default"
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    async def start(self, *, on_setup: Callable[[Manager], None] | None = None,
                    **overrides: Any) -> Manager:
        lanes = {k: overrides.pop(k) for k in list(overrides)
                 if k in LaneSettings.__dataclass_fields__}
        settings = ingress_controller.Settings(
            cluster_name=self.seed.cluster_name, region=self.seed.region,
            vpc_id=self.seed.vpc_id, default_target_type="ip", cleanup_poll=0.2,
            in_use_backoff=0.01, lanes=LaneSettings(**lanes), **overrides)

        def setup(manager: Manager) -> None:
            ingress_controller.setup(manager, pool=self.pool, settings=settings)
            tgb_controller.setup(manager, pool=self.pool, settings=tgb_controller.Settings(
                cluster_name=self.seed.cluster_name, vpc_id=self.seed.vpc_id))
            if on_setup is not None:
                on_setup(manager)

        return await self.launch(setup)

    # ---- Kubernetes objects -----------------------------------------------------------------

    async def service(self, name: str, *, port: int = 80, target_port: int = 8080,
                      annotations: dict[str, str] | None = None) -> Obj:
        svc = await self.client.create(SERVICES, {
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"type": "NodePort", "selector": {"app": name}, "ports": [
                {"name": "http", "port": port, "targetPort": target_port,
                 "nodePort": 30000 + _n(name) % 2000}]}}, self.namespace)
        await self.client.create(ENDPOINTSLICES, {
            "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": target_port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [endpoint_ip(name)], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"{name}-pod",
                                         "uid": f"uid-{name}"}}]}, self.namespace)
        return svc

    async def ingress(self, name: str, *, paths: list[Obj] | None = None, host: str | None = None,
                      annotations: dict[str, str] | None = None,
                      class_name: str | None = "alb", tls_hosts: list[str] | None = None,
                      rules: list[Obj] | None = None) -> Obj:
        body: Obj = {"metadata": {"name": name, "annotations": annotations or {}},
                     "spec": self._spec(paths=paths, host=host, class_name=class_name,
                                        tls_hosts=tls_hosts, rules=rules)}
        return await self.client.create(INGRESSES, body, self.namespace)

    @staticmethod
    def _spec(*, paths: list[Obj] | None, host: str | None, class_name: str | None,
              tls_hosts: list[str] | None, rules: list[Obj] | None) -> Obj:
        spec: Obj = {}
        if class_name:
            spec["ingressClassName"] = class_name
        if rules is None:
            rule: Obj = {"http": {"paths": paths or []}}
            if host:
                rule["host"] = host
            rules = [rule]
        spec["rules"] = rules
        if tls_hosts:
            spec["tls"] = [{"hosts": tls_hosts}]
        return spec

    async def patch_ingress(self, name: str, body: Obj) -> Obj:
        return await self.client.patch(INGRESSES, name, body, self.namespace)

    async def get_ingress(self, name: str) -> Obj | None:
        try:
            return await self.client.get(INGRESSES, name, self.namespace)
        except NotFound:
            return None

    async def delete_ingress(self, name: str) -> None:
        await self.client.delete(INGRESSES, name, self.namespace)

    async def ingress_class(self, name: str = "alb", *, params: str | None = None,
                            default: bool = False, controller: str = "ingress.k8s.aws/alb") -> Obj:
        spec: Obj = {"controller": controller}
        if params:
            spec["parameters"] = {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams",
                                  "name": params}
        metadata: Obj = {"name": name}
        if default:
            metadata["annotations"] = {"ingressclass.kubernetes.io/is-default-class": "true"}
        return await self.client.create(INGRESSCLASSES, {"metadata": metadata, "spec": spec})

    async def class_params(self, name: str, spec: Obj) -> Obj:
        return await self.client.create(INGRESSCLASSPARAMS, {
            "apiVersion": INGRESSCLASSPARAMS.api_version, "kind": INGRESSCLASSPARAMS.kind,
            "metadata": {"name": name}, "spec": spec})

    async def secret(self, name: str, data: dict[str, str]) -> Obj:
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        try:
            current = await self.client.get(SECRETS, name, self.namespace)
        except NotFound:
            return await self.client.create(SECRETS, {"metadata": {"name": name},
                                                      "data": encoded}, self.namespace)
        current["data"] = encoded
        return await self.client.update(SECRETS, current)

    async def bindings(self) -> list[Obj]:
        return list((await self.client.list(TARGETGROUPBINDINGS, self.namespace)).get(
            "items") or [])

    # ---- AWS --------------------------------------------------------------------------------

    async def elbv2(self, op: str, **params: Any) -> Any:
        return await self.pool.call("elbv2", op, **params)

    async def load_balancers(self) -> list[Obj]:
        return list((await self.elbv2("DescribeLoadBalancers"))["LoadBalancers"])

    async def target_groups(self) -> list[Obj]:
        return list((await self.elbv2("DescribeTargetGroups"))["TargetGroups"])

    async def listeners(self, lb_arn: str) -> dict[int, Obj]:
        resp = await self.elbv2("DescribeListeners", LoadBalancerArn=lb_arn)
        return {int(li["Port"]): li for li in resp["Listeners"]}

    async def rules(self, listener_arn: str) -> list[Obj]:
        """Non-default rules by priority."""
        resp = await self.elbv2("DescribeRules", ListenerArn=listener_arn)
        rules = [r for r in resp["Rules"] if not r.get("IsDefault")]
        return sorted(rules, key=lambda r: int(r["Priority"]))

    async def registered(self, tg_arn: str) -> set[tuple[str, int]]:
        resp = await self.elbv2("DescribeTargetHealth", TargetGroupArn=tg_arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}


def rule_paths(rule: Obj) -> list[str]:
    for cond in rule["Conditions"]:
        if cond["Field"] == "path-pattern":
            values = cond.get("PathPatternConfig", {}).get("Values") or cond.get("Values")
            return sorted(values)
    return []


def rule_hosts(rule: Obj) -> list[str]:
    for cond in rule["Conditions"]:
        if cond["Field"] == "host-header":
            values = cond.get("HostHeaderConfig", {}).get("Values") or cond.get("Values")
            return sorted(values)
    return []
