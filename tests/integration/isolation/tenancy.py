"""A cluster shared by tenants: the local API server with authorization on, the whole
controller (every controller of `aiolbc run`, built from flags) running as its ServiceAccount
with only the shipped RBAC, moto behind the fault proxy, a victim team's objects created by an
administrator in namespace `shop`, and an attacker: a ServiceAccount with rights in namespace
`attacker` only."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry

from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.app import setup_controllers
from controller.aws import AWSClientPool
from controller.config import parse_config
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    ENDPOINTSLICES,
    EVENTS,
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    SECRETS,
    SERVICES,
    Resource,
)
from tests.integration.running import RunsManager

VICTIM = "shop"
ATTACKER = "attacker"
_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(_RBAC, "v1", "roles", "Role")
ROLEBINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding")
# What a namespace user may do in their own namespace (EndpointSlices stand for the pods they
# run; a real endpoint controller would write them).
TENANT_RULES = [
    {"apiGroups": ["", "networking.k8s.io", "discovery.k8s.io", "elbv2.k8s.aws"],
     "resources": ["services", "endpointslices", "ingresses", "targetgroupbindings", "secrets",
                   "configmaps", "events"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
]


def http_path(p: str, service: str, port: int = 80) -> Obj:
    return {"path": p, "pathType": "Prefix",
            "backend": {"service": {"name": service, "port": {"number": port}}}}


@dataclass
class Tenancy(RunsManager):
    default_controller: ClassVar[str] = "ingress"

    server: EnvTestServer
    client: KubeClient  # the administrator
    controller: KubeClient  # the controller's ServiceAccount
    pool: AWSClientPool  # the controller's AWS pool, through the fault proxy
    inspect: AWSClientPool  # the test's own looks at AWS, straight to moto
    proxy: AWSFaultProxy
    seed: AwsSeed
    tmp: Path
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    async def start(self, *flags: str) -> Manager:
        config = parse_config([
            "--cluster-name", self.seed.cluster_name, "--aws-region", self.seed.region,
            "--aws-vpc-id", self.seed.vpc_id, "--aws-endpoint-url", self.proxy.url,
            "--enable-leader-election", "false", "--metrics-bind-addr", "0",
            "--health-probe-bind-addr", "0", "--default-target-type", "ip", *flags])
        return await self.launch(lambda manager: setup_controllers(manager, self.pool, config),
                                 client=self.controller)

    # ---- tenants -----------------------------------------------------------------------------

    async def namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        await self.client.create(NAMESPACES, {"metadata": {"name": name,
                                                           "labels": labels or {}}})

    async def tenant(self, namespace: str, user: str = "mallory") -> KubeClient:
        """A client for a ServiceAccount that may work in `namespace` only."""
        await self.client.create(ROLES, {"metadata": {"name": "tenant"},
                                         "rules": TENANT_RULES}, namespace)
        await self.client.create(ROLEBINDINGS, {
            "metadata": {"name": "tenant"},
            "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": "tenant"},
            "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": namespace}]},
            namespace)
        token = self.server.add_service_account(namespace, user)
        kubeconfig = self.server.write_kubeconfig(self.tmp / f"{namespace}-{user}", token=token)
        return await KubeClient.from_kubeconfig(kubeconfig)

    # ---- objects, as whoever `client` is ----------------------------------------------------

    @staticmethod
    async def backend(client: KubeClient, namespace: str, name: str, ips: Sequence[str], *,
                      port: int = 80, target_port: int = 8080) -> None:
        await client.create(SERVICES, {
            "metadata": {"name": name},
            "spec": {"type": "ClusterIP", "selector": {"app": name}, "ports": [
                {"name": "http", "port": port, "targetPort": target_port}]}}, namespace)
        await client.create(ENDPOINTSLICES, {
            "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": target_port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"{name}-{i}",
                                         "uid": f"uid-{name}-{i}"}}
                          for i, ip in enumerate(ips)]}, namespace)

    @staticmethod
    async def ingress(client: KubeClient, namespace: str, name: str, paths: list[Obj], *,
                      annotations: dict[str, str] | None = None,
                      class_name: str | None = "alb") -> Obj:
        spec: Obj = {"rules": [{"http": {"paths": paths}}]}
        if class_name:
            spec["ingressClassName"] = class_name
        return await client.create(INGRESSES, {
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec},
            namespace)

    @staticmethod
    async def binding(client: KubeClient, namespace: str, name: str, *, service: str,
                      arn: str, **spec: Any) -> Obj:
        return await client.create(TARGETGROUPBINDINGS, {
            "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": {"name": name},
            "spec": {"targetGroupARN": arn, "targetType": "ip",
                     "serviceRef": {"name": service, "port": 80}, **spec}}, namespace)

    async def ingress_class(self, name: str = "alb", params: str | None = None) -> None:
        spec: Obj = {"controller": "ingress.k8s.aws/alb"}
        if params:
            spec["parameters"] = {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams",
                                  "name": params}
        await self.client.create(INGRESSCLASSES, {"metadata": {"name": name}, "spec": spec})

    async def class_params(self, name: str, spec: Obj) -> None:
        await self.client.create(INGRESSCLASSPARAMS, {
            "apiVersion": INGRESSCLASSPARAMS.api_version, "kind": INGRESSCLASSPARAMS.kind,
            "metadata": {"name": name}, "spec": spec})

    async def secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        await self.client.create(SECRETS, {"metadata": {"name": name}, "data": {
            k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}, namespace)

    async def get(self, resource: Resource, name: str, namespace: str) -> Obj | None:
        try:
            return await self.client.get(resource, name, namespace)
        except NotFound:
            return None

    @staticmethod
    async def events(client: KubeClient, namespace: str, name: str,
                     reason: str | None = None) -> list[Obj]:
        """Warning Events about object `name`, as `client` (the attacker sees its own)."""
        listed = await client.list(EVENTS, namespace,
                                   field_selector=f"involvedObject.name={name}")
        return [e for e in listed.get("items") or [] if e.get("type") == "Warning"
                and (reason is None or e.get("reason") == reason)]

    # ---- AWS ------------------------------------------------------------------------------

    async def elbv2(self, op: str, **params: Any) -> Any:
        return await self.inspect.call("elbv2", op, **params)

    async def target_group(self, name: str, *, vpc_id: str | None = None,
                           tags: dict[str, str] | None = None) -> str:
        extra: dict[str, Any] = {}
        if tags:
            extra["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
        resp = await self.elbv2("CreateTargetGroup", Name=name, Protocol="HTTP", Port=80,
                                VpcId=vpc_id or self.seed.vpc_id, TargetType="ip", **extra)
        return str(resp["TargetGroups"][0]["TargetGroupArn"])

    async def registered(self, arn: str) -> set[tuple[str, int]]:
        resp = await self.elbv2("DescribeTargetHealth", TargetGroupArn=arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}

    async def register(self, arn: str, *targets: tuple[str, int]) -> None:
        await self.elbv2("RegisterTargets", TargetGroupArn=arn,
                         Targets=[{"Id": i, "Port": p} for i, p in targets])

    def mutations(self) -> list[tuple[str, dict[str, Any]]]:
        """The controller's mutating AWS calls since the proxy log was last cleared."""
        return [(r.operation, r.params) for r in self.proxy.log if r.mutating]

    async def load_balancers(self) -> list[Obj]:
        return list((await self.elbv2("DescribeLoadBalancers"))["LoadBalancers"])

    async def rules(self, lb_arn: str, port: int = 80) -> list[tuple[int, list[str], list[str]]]:
        """(priority, paths, forwarded target group ARNs) of a listener's rules."""
        listeners = (await self.elbv2("DescribeListeners", LoadBalancerArn=lb_arn))["Listeners"]
        listener = next((li for li in listeners if li["Port"] == port), None)
        if listener is None:
            return []
        rules = (await self.elbv2("DescribeRules", ListenerArn=listener["ListenerArn"]))["Rules"]
        found = []
        for rule in rules:
            if rule.get("IsDefault"):
                continue
            paths = sorted(v for c in rule["Conditions"] if c["Field"] == "path-pattern"
                           for v in (c.get("PathPatternConfig") or {}).get("Values")
                           or c.get("Values") or [])
            arns = sorted({t["TargetGroupArn"] for a in rule["Actions"]
                           for t in ((a.get("ForwardConfig") or {}).get("TargetGroups") or
                                     ([{"TargetGroupArn": a["TargetGroupArn"]}]
                                      if a.get("TargetGroupArn") else []))})
            found.append((int(rule["Priority"]), paths, arns))
        return sorted(found)
