"""A cluster for TargetGroupBinding tests: the local API server, a Manager running the TGB
controller against the AWS stand-in, and functions to shape Services, EndpointSlices and Nodes."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry

from controller import targetgroupbinding as tgb_controller
from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import NotFound
from runtime.manager import Manager, ManagerOptions
from runtime.resources import CONFIGMAPS, ENDPOINTSLICES, EVENTS, NODES, SERVICES
from tests.integration.running import RunsManager

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"




@dataclass
class Cluster(RunsManager):
    default_controller: ClassVar[str] = tgb_controller.CONTROLLER_NAME

    server: EnvTestServer
    client: KubeClient
    pool: AWSClientPool
    seed: AwsSeed
    inspect: AWSClientPool | None = None  # the test's own AWS reads (default: `pool`)
    namespace: str = "default"
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    async def start(self, *, settings: tgb_controller.Settings | None = None,
                    options: ManagerOptions | None = None,
                    client: KubeClient | None = None) -> Manager:
        """Run a Manager with the TGB controller, as `client` (default: the test's own), for
        the seeded cluster and VPC unless `settings` say otherwise."""
        chosen = settings or tgb_controller.Settings(cluster_name="", vpc_id="")
        chosen = dataclasses.replace(chosen, cluster_name=chosen.cluster_name or
                                     self.seed.cluster_name,
                                     vpc_id=chosen.vpc_id or self.seed.vpc_id)
        return await self.launch(
            lambda manager: tgb_controller.setup(manager, pool=self.pool, settings=chosen),
            options=options, client=client)

    async def target_group(self, name: str, *, target_type: str = "ip", port: int = 80) -> str:
        resp = await self.pool.call("elbv2", "CreateTargetGroup", Name=name, Protocol="HTTP",
                                    Port=port, VpcId=self.seed.vpc_id, TargetType=target_type)
        return str(resp["TargetGroups"][0]["TargetGroupArn"])

    async def registered(self, arn: str) -> set[tuple[str, int]]:
        resp = await (self.inspect or self.pool).call("elbv2", "DescribeTargetHealth",
                                                      TargetGroupArn=arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}

    async def service(self, name: str, *, port: int = 80, target_port: str | int = "http",
                      svc_type: str = "NodePort") -> dict[str, Any]:
        return await self.client.create(SERVICES, {
            "metadata": {"name": name},
            "spec": {"type": svc_type, "selector": {"app": name}, "ports": [
                {"name": "http", "port": port, "targetPort": target_port}]}}, self.namespace)

    async def endpoints(self, service: str, ips: list[str], *, port: int = 8080,
                        not_ready: tuple[str, ...] = (), slice_name: str | None = None) -> None:
        """Create or replace one EndpointSlice of `service`."""
        name = slice_name or f"{service}-abc"
        body: dict[str, Any] = {
            "metadata": {"name": name, "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip],
                           "conditions": {"ready": ip not in not_ready, "terminating": False},
                           "targetRef": {"kind": "Pod", "name": f"pod-{ip}",
                                         "uid": f"uid-{ip}"}} for ip in ips],
        }
        try:
            current = await self.client.get(ENDPOINTSLICES, name, self.namespace)
        except NotFound:
            await self.client.create(ENDPOINTSLICES, body, self.namespace)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await self.client.update(ENDPOINTSLICES, {**body, "metadata": {
            **body["metadata"], "namespace": self.namespace}})

    async def node(self, name: str, instance_id: str, *, ready: bool = True,
                   unschedulable: bool = False, labels: dict[str, str] | None = None) -> None:
        await self.client.create(NODES, {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"providerID": f"aws:///us-west-2a/{instance_id}",
                     "unschedulable": unschedulable}})
        # status is a subresource: a create drops it, as on a real API server
        await self.set_node_ready(name, ready)

    async def set_node_ready(self, name: str, ready: bool) -> None:
        await self.client.patch(NODES, name, {"status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}},
            subresource="status")

    async def binding(self, name: str, *, service: str, port: int | str = 80,
                      arn: str | None = None, tg_name: str | None = None,
                      target_type: str | None = "ip", multi_cluster: bool = False,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"serviceRef": {"name": service, "port": port}}
        if arn:
            spec["targetGroupARN"] = arn
        if tg_name:
            spec["targetGroupName"] = tg_name
        if target_type:
            spec["targetType"] = target_type
        if multi_cluster:
            spec["multiClusterTargetGroup"] = True
        spec.update(extra or {})
        return await self.client.create(TARGETGROUPBINDINGS, {
            "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": {"name": name}, "spec": spec}, self.namespace)

    async def get_binding(self, name: str) -> dict[str, Any]:
        return await self.client.get(TARGETGROUPBINDINGS, name, self.namespace)

    async def binding_gone(self, name: str) -> bool:
        try:
            await self.get_binding(name)
        except NotFound:
            return True
        return False

    async def tracked(self, binding: str) -> set[str] | None:
        """The multi-cluster tracking ConfigMap's targets, None when it does not exist."""
        try:
            cm = await self.client.get(CONFIGMAPS, f"aws-lbc-targets-{binding}", self.namespace)
        except NotFound:
            return None
        raw = str((cm.get("data") or {}).get("targets") or "")
        return {part for part in raw.split(",") if part}

    async def events(self, binding: str) -> list[dict[str, Any]]:
        """core/v1 Events about the binding, as the API server holds them."""
        listed = await self.client.list(
            EVENTS, self.namespace,
            field_selector=f"involvedObject.name={binding},involvedObject.kind="
                           f"{TARGETGROUPBINDINGS.kind}")
        return list(listed.get("items") or [])
