"""A cluster for restart tests: the local API server with the CRDs, moto with a seeded VPC, and
the controller run as `aiolbc run` runs it (flags parsed by the CLI's parser, the manager built
by `controller.app`), each start a new process-level state: a new Kubernetes client and
informers, a new AWS client pool and deployer, nothing remembered from the previous run.

The LOW lane is frozen in every run (a verification may start, then waits about 1,000 s for its
second AWS call), so whatever reaches AWS after a restart was reconciled at NORMAL priority.
`snapshot` reads what AWS holds for a stack, straight from moto (never through the controller's
pool), together with the stack's managed TargetGroupBindings."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError
from prometheus_client import CollectorRegistry

from controller import app
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.config import parse_config
from controller.standins import AwsSeed, MotoStandIn, sync_client
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    ENDPOINTSLICES,
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    NODES,
    SECRETS,
    SERVICES,
    Resource,
)

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"
NLB_CLASS = "service.k8s.aws/nlb"
SVC = "service.beta.kubernetes.io/"
ALB = "alb.ingress.kubernetes.io/"
CHECKPOINT = "elbv2.k8s.aws/checkpoint"

# Every verification waits for the shared budget: one may start, none can finish in a test.
FROZEN_LOW_LANE = ("--checkpoint-verify-qps", "0.001", "--checkpoint-verify-burst", "1",
                   "--checkpoint-max-wait", "100h", "--checkpoint-verify-aws-qps", "0.001",
                   "--checkpoint-verify-aws-burst", "1")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass
class ControllerProcess:
    """One `aiolbc run`: start it, wait, kill it (no graceful anything, as a crash)."""

    argv: list[str]
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    _client: KubeClient | None = None
    _pool: AWSClientPool | None = None

    async def start(self) -> None:
        config = parse_config(self.argv)
        self._client = await KubeClient.load(config.kubeconfig)
        self._pool = AWSClientPool(app.aws_settings(config), registry=CollectorRegistry())
        self.manager = app.build_manager(config, self._client, self._pool,
                                         registry=CollectorRegistry())
        self.task = asyncio.create_task(self.manager.run())

    async def kill(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
        if self._client is not None:
            await self._client.close()
        self.task = self.manager = self._pool = self._client = None


@dataclass
class World:
    server: EnvTestServer
    client: KubeClient
    moto: MotoStandIn
    seed: AwsSeed
    kubeconfig: Path
    namespace: str = "default"
    extra: dict[str, str] = field(default_factory=dict)  # ids the cases created (SGs, TGs, ...)

    # ---- placeholders in case values -----------------------------------------------------

    def values(self, name: str) -> dict[str, str]:
        def oidc(issuer: str) -> str:
            return json.dumps({"issuer": issuer, "authorizationEndpoint": f"{issuer}/auth",
                               "tokenEndpoint": f"{issuer}/token",
                               "userInfoEndpoint": f"{issuer}/me",
                               "secretName": f"{name}-oidc"})
        return {"name": name, "cert": self.seed.certificate_arn,
                "cert2": self.extra.get("cert2", ""),
                "private_subnet": self.seed.private_subnets[0],
                "public_subnets": ",".join(self.seed.public_subnets),
                "security_group": self.extra.get("security_group", ""),
                "oidc": oidc("https://idp.example.com"),
                "oidc2": oidc("https://idp2.example.com"),
                "tg_b": self.extra.get(f"tg:{name}-b", ""),
                "tg_b_name": self.extra.get(f"tg-name:{name}-b", "")}

    def fill(self, items: dict[str, str], name: str) -> dict[str, str]:
        values = self.values(name)
        return {k: _fill_text(v, values) for k, v in items.items()}

    def fill_obj(self, value: Any, name: str = "") -> Any:
        values = self.values(name)
        if isinstance(value, str):
            if value == "{public_subnet_list}":
                return list(self.seed.public_subnets)
            return _fill_text(value, values)
        if isinstance(value, list):
            return [self.fill_obj(v, name) for v in value]
        if isinstance(value, dict):
            return {k: self.fill_obj(v, name) for k, v in value.items()}
        return value

    # ---- the controller -------------------------------------------------------------------

    def argv(self, *flags: str, cluster: str | None = None, region: str | None = None,
             vpc_id: str | None = None) -> list[str]:
        return ["--cluster-name", cluster or self.seed.cluster_name,
                "--kubeconfig", str(self.kubeconfig),
                "--aws-region", region or self.seed.region,
                "--aws-vpc-id", vpc_id or self.seed.vpc_id,
                "--aws-endpoint-url", self.moto.url,
                "--enable-leader-election", "false",
                "--metrics-bind-addr", "0", "--health-probe-bind-addr", "0",
                *FROZEN_LOW_LANE, *flags]

    async def run(self, *flags: str, **where: str) -> ControllerProcess:
        process = ControllerProcess(self.argv(*flags, **where))
        await process.start()
        return process

    # ---- AWS --------------------------------------------------------------------------------

    def aws(self, service: str, region: str | None = None) -> Any:
        return sync_client(service, self.moto.url, region=region or self.seed.region)

    async def snapshot(self, stacks: Sequence[str], *,
                       regions: Iterable[str] | None = None) -> str:
        """What AWS holds for these stacks (`ingress.k8s.aws/stack` or `service.k8s.aws/stack`
        values), and the stacks' managed bindings, as canonical JSON."""
        aws = await asyncio.to_thread(_aws_state, self, list(stacks),
                                      list(regions or [self.seed.region]))
        bindings: dict[str, Any] = {}
        for item in (await self.client.list(TARGETGROUPBINDINGS, self.namespace)).get(
                "items") or []:
            labels = item["metadata"].get("labels") or {}
            stack = labels.get("ingress.k8s.aws/stack") or (
                f"{labels.get('ingress.k8s.aws/stack-namespace')}/"
                f"{labels.get('ingress.k8s.aws/stack-name')}"
                if labels.get("ingress.k8s.aws/stack-name") else None) or (
                f"{labels.get('service.k8s.aws/stack-namespace')}/"
                f"{labels.get('service.k8s.aws/stack-name')}"
                if labels.get("service.k8s.aws/stack-name") else None)
            if stack in stacks:
                bindings[item["metadata"]["name"]] = item.get("spec")
        return json.dumps({"aws": aws, "bindings": bindings}, sort_keys=True, default=str)

    async def targets(self, target_group_arn: str) -> list[tuple[str, int]]:
        def read() -> list[tuple[str, int]]:
            elbv2 = self.aws("elbv2")
            try:
                resp = elbv2.describe_target_health(TargetGroupArn=target_group_arn)
            finally:
                elbv2.close()
            return sorted((d["Target"]["Id"], int(d["Target"]["Port"]))
                          for d in resp["TargetHealthDescriptions"])
        return await asyncio.to_thread(read)

    # ---- Kubernetes objects ---------------------------------------------------------------

    async def get(self, res: Resource, name: str, namespace: str | None = "default"
                  ) -> Obj | None:
        try:
            return await self.client.get(res, name, namespace if res.namespaced else None)
        except NotFound:
            return None

    async def patch(self, res: Resource, name: str, body: Obj) -> Obj:
        return await self.client.patch(res, name, body,
                                       self.namespace if res.namespaced else None)

    async def annotate(self, res: Resource, name: str, annotations: dict[str, str | None]
                       ) -> Obj:
        return await self.patch(res, name, {"metadata": {"annotations": annotations}})

    async def delete(self, res: Resource, name: str) -> None:
        await self.client.delete(res, name, self.namespace if res.namespaced else None)

    async def endpoints(self, service: str, ips: Sequence[str], *, port: int = 8080,
                        port_name: str = "http") -> None:
        """Create or replace the one EndpointSlice of `service`."""
        name = f"{service}-1"
        body: Obj = {
            "metadata": {"name": name, "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"{service}-{ip}",
                                         "uid": f"uid-{service}-{ip}"}} for ip in ips]}
        current = await self.get(ENDPOINTSLICES, name)
        if current is None:
            await self.client.create(ENDPOINTSLICES, body, self.namespace)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await self.client.update(ENDPOINTSLICES, {**current, **body,
                                                      "metadata": {**current["metadata"],
                                                                   **body["metadata"]}})

    async def nlb_service(self, name: str, annotations: dict[str, str] | None = None, *,
                          ports: list[Obj] | None = None, target_type: str | None = "ip",
                          load_balancer_class: str | None = NLB_CLASS,
                          endpoint_ips: Sequence[str] = ("10.0.2.10",)) -> Obj:
        notes = {SVC + k: v for k, v in (annotations or {}).items()}
        if target_type:
            notes.setdefault(SVC + "aws-load-balancer-nlb-target-type", target_type)
        spec: Obj = {"type": "LoadBalancer", "selector": {"app": name},
                     "ports": ports or [{"name": "http", "port": 80, "targetPort": 8080,
                                         "protocol": "TCP"}]}
        if load_balancer_class:
            spec["loadBalancerClass"] = load_balancer_class
        svc = await self.client.create(SERVICES, {
            "metadata": {"name": name, "annotations": notes}, "spec": spec}, self.namespace)
        await self.endpoints(name, endpoint_ips)
        return svc

    async def backend(self, name: str, annotations: dict[str, str] | None = None, *,
                      target_port: int = 8080, endpoint_ips: Sequence[str] = ("10.0.3.10",)
                      ) -> Obj:
        """A NodePort Service an Ingress routes to, with one ready endpoint."""
        svc = await self.client.create(SERVICES, {
            "metadata": {"name": name,
                         "annotations": {ALB + k: v for k, v in (annotations or {}).items()}},
            "spec": {"type": "NodePort", "selector": {"app": name}, "ports": [
                {"name": "http", "port": 80, "targetPort": target_port}]}}, self.namespace)
        await self.endpoints(name, endpoint_ips, port=target_port)
        return svc

    async def ingress(self, name: str, annotations: dict[str, str] | None = None, *,
                      backend: str, class_name: str | None = "alb", host: str | None = None,
                      raw_annotations: dict[str, str] | None = None,
                      backend_port: Obj | None = None) -> Obj:
        rule: Obj = {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": backend, "port": backend_port or {"number": 80}}}}]}}
        if host:
            rule["host"] = host
        spec: Obj = {"rules": [rule]}
        if class_name:
            spec["ingressClassName"] = class_name
        notes = {ALB + k: v for k, v in (annotations or {}).items()}
        notes.update(raw_annotations or {})
        return await self.client.create(INGRESSES, {
            "metadata": {"name": name, "annotations": notes}, "spec": spec}, self.namespace)

    async def ingress_class(self, name: str, *, params: str | None = None) -> Obj:
        spec: Obj = {"controller": "ingress.k8s.aws/alb"}
        if params:
            spec["parameters"] = {"apiGroup": INGRESSCLASSPARAMS.group,
                                  "kind": INGRESSCLASSPARAMS.kind, "name": params}
        return await self.client.create(INGRESSCLASSES, {"metadata": {"name": name},
                                                         "spec": spec})

    async def class_params(self, name: str, spec: Obj) -> Obj:
        return await self.client.create(INGRESSCLASSPARAMS, {
            "apiVersion": INGRESSCLASSPARAMS.api_version, "kind": INGRESSCLASSPARAMS.kind,
            "metadata": {"name": name}, "spec": spec})

    async def secret(self, name: str, data: dict[str, str]) -> Obj:
        encoded = {k: b64(v) for k, v in data.items()}
        current = await self.get(SECRETS, name)
        if current is None:
            return await self.client.create(SECRETS, {"metadata": {"name": name},
                                                      "data": encoded}, self.namespace)
        current["data"] = encoded
        return await self.client.update(SECRETS, current)

    async def node(self, name: str, instance_id: str, labels: dict[str, str] | None = None
                   ) -> None:
        created = await self.client.create(NODES, {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"providerID": f"aws:///{self.seed.region}a/{instance_id}"}})
        created["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        await self.client.update_status(NODES, created)

    async def binding(self, name: str, spec: Obj) -> Obj:
        return await self.client.create(TARGETGROUPBINDINGS, {
            "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": {"name": name}, "spec": spec}, self.namespace)

    async def label_namespace(self, labels: dict[str, str]) -> None:
        current = await self.get(NAMESPACES, self.namespace, None)
        if current is None:
            await self.client.create(NAMESPACES, {"metadata": {"name": self.namespace,
                                                               "labels": labels}})
        else:
            await self.patch(NAMESPACES, self.namespace, {"metadata": {"labels": labels}})

    async def target_group(self, name: str, target_type: str) -> str:
        """A target group made by hand (no controller tags), as users make for bindings."""
        def create() -> dict[str, Any]:
            elbv2 = self.aws("elbv2")
            try:
                created: dict[str, Any] = elbv2.create_target_group(
                    Name=name, Protocol="TCP", Port=80, VpcId=self.seed.vpc_id,
                    TargetType=target_type)["TargetGroups"][0]
                return created
            finally:
                elbv2.close()
        tg = await asyncio.to_thread(create)
        self.extra[f"tg:{name}"] = str(tg["TargetGroupArn"])
        self.extra[f"tg-name:{name}"] = name
        return str(tg["TargetGroupArn"])

    async def checkpoint(self, res: Resource, name: str) -> str:
        obj = await self.get(res, name)
        if obj is None:
            return ""
        return str((obj["metadata"].get("annotations") or {}).get(CHECKPOINT) or "")


def _fill_text(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _aws_state(world: World, stacks: list[str], regions: list[str]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for region in regions:
        elbv2 = world.aws("elbv2", region)
        try:
            state[region] = _region_state(elbv2, set(stacks))
        finally:
            elbv2.close()
    return state


def _tags_of(elbv2: Any, arns: list[str]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for i in range(0, len(arns), 20):
        for d in elbv2.describe_tags(ResourceArns=arns[i:i + 20])["TagDescriptions"]:
            found[d["ResourceArn"]] = {t["Key"]: t["Value"] for t in d["Tags"]}
    return found


def _stack_of(tags: dict[str, str]) -> str | None:
    return tags.get("ingress.k8s.aws/stack") or tags.get("service.k8s.aws/stack")


def _region_state(elbv2: Any, stacks: set[str]) -> dict[str, Any]:
    # Read while the controller runs: a resource listed may be gone a moment later; then the
    # whole reading is taken again.
    for _ in range(10):
        try:
            return _region_state_once(elbv2, stacks)
        except ClientError as exc:
            if "NotFound" not in str(exc.response.get("Error", {}).get("Code", "")):
                raise
    return _region_state_once(elbv2, stacks)


def _region_state_once(elbv2: Any, stacks: set[str]) -> dict[str, Any]:
    lbs = elbv2.describe_load_balancers()["LoadBalancers"]
    tgs = elbv2.describe_target_groups()["TargetGroups"]
    tags = _tags_of(elbv2, [x["LoadBalancerArn"] for x in lbs] +
                    [x["TargetGroupArn"] for x in tgs])
    out: dict[str, Any] = {}
    for lb in lbs:
        stack = _stack_of(tags.get(lb["LoadBalancerArn"], {}))
        if stack not in stacks:
            continue
        arn = lb["LoadBalancerArn"]
        listeners = []
        for li in elbv2.describe_listeners(LoadBalancerArn=arn)["Listeners"]:
            certs = elbv2.describe_listener_certificates(ListenerArn=li["ListenerArn"])
            rules = [r for r in elbv2.describe_rules(ListenerArn=li["ListenerArn"])["Rules"]
                     if not r.get("IsDefault")]
            listeners.append({"listener": li, "certificates": certs["Certificates"],
                              "rules": sorted(rules, key=lambda r: int(r["Priority"]))})
        attrs = elbv2.describe_load_balancer_attributes(LoadBalancerArn=arn)["Attributes"]
        out.setdefault(stack, {}).setdefault("lbs", []).append({
            "lb": {k: v for k, v in lb.items() if k not in ("State", "CreatedTime")},
            "tags": tags.get(arn, {}), "attributes": attrs,
            "listeners": sorted(listeners, key=lambda x: int(x["listener"]["Port"]))})
    for tg in tgs:
        stack = _stack_of(tags.get(tg["TargetGroupArn"], {}))
        if stack not in stacks:
            continue
        arn = tg["TargetGroupArn"]
        attrs = elbv2.describe_target_group_attributes(TargetGroupArn=arn)["Attributes"]
        health = elbv2.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
        out.setdefault(stack, {}).setdefault("tgs", []).append({
            "tg": tg, "tags": tags.get(arn, {}), "attributes": attrs,
            "targets": sorted(f"{d['Target']['Id']}:{d['Target'].get('Port')}" for d in health)})
    for entry in out.values():
        entry.get("lbs", []).sort(key=lambda x: x["lb"]["LoadBalancerArn"])
        entry.get("tgs", []).sort(key=lambda x: x["tg"]["TargetGroupArn"])
    return out
