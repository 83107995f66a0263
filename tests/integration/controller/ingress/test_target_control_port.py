"""`alb.ingress.kubernetes.io/target-control-port.<service>.<port>`: the ALB Target Optimizer
agent's port on the backend's target group (a change replaces the target group, as AWS cannot
change it), admitted to the targets by the binding's rules; instance targets refused with one
message and no AWS call."""

from __future__ import annotations

from typing import Any

from controller.standins import AWSFaultProxy
from runtime.resources import INGRESSES, SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
KEY = "target-control-port.web.80"


async def _deployed(c: Cluster) -> dict[str, Any] | None:
    tgs = await c.aws.target_groups()
    bindings = await c.bindings()
    if len(tgs) != 1 or len(bindings) != 1:
        return None
    rules = (bindings[0]["spec"].get("networking") or {}).get("ingress") or []
    ports = sorted(p.get("port") for r in rules for p in r.get("ports") or [])
    return {"control": tgs[0].get("TargetControlPort"), "ports": ports,
            "bound": bindings[0]["spec"]["targetGroupARN"] == tgs[0]["TargetGroupArn"]}


async def test_the_control_port_follows_create_update_and_removal(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", paths=[ingress_path("/", "web")],
                    annotations={A + "target-type": "ip", A + KEY: "9000"})
    await c.start()

    async def deployed(want: dict[str, Any]) -> bool:
        return await _deployed(c) == want

    await eventually(lambda: deployed({"control": 9000, "ports": [8080, 9000], "bound": True}))
    # On the backend Service it wins over the Ingress's (upstream merges them so).
    await c.annotate(SERVICES, "web", {A + KEY: "9001"})
    await eventually(lambda: deployed({"control": 9001, "ports": [8080, 9001], "bound": True}))
    await c.annotate(SERVICES, "web", {A + KEY: None})
    await c.annotate(INGRESSES, "shop", {A + KEY: None})
    await eventually(lambda: deployed({"control": None, "ports": [8080], "bound": True}))


async def test_instance_targets_are_refused(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", paths=[ingress_path("/", "web")],
                    annotations={A + "target-type": "instance", A + KEY: "9000"})
    await c.start()
    said = ("Ingress default/shop: Service default/web port 80: target control port is not "
            "supported for instance target target group")

    async def told() -> bool:
        return any(said in str(e.get("message")) for e in await c.events("shop", of=INGRESSES))

    await eventually(told)
    assert not aws_proxy.records(operation="CreateLoadBalancer")
