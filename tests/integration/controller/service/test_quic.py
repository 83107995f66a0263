"""`aws-load-balancer-quic-enabled-ports` on an NLB Service: QUIC listeners and target groups in
AWS, targets registered with their pods' QUIC server IDs (a pod without one is not registered,
and its binding says so), the annotation removed and the Service deleted; a port QUIC cannot
upgrade as one message with no AWS call."""

from __future__ import annotations

import base64
from typing import Any

from controller.apis import QUIC_ENABLED_CONTAINERS_ANNOTATION, TARGETGROUPBINDINGS
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES, PODS, SERVICES
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
ENV = "AWS_LBC_QUIC_SERVER_ID"
QUIC_PORT = [service_port(443, 8443, "quic", protocol="UDP")]
IDS = {"10.0.2.20": bytes.fromhex("0123456789abcdef"),
       "10.0.2.21": bytes.fromhex("00000000000000ff")}
NO_ID = "10.0.2.22"


def _pod(ip: str, server_id: bytes | None) -> Obj:
    container: Obj = {"name": "app", "image": "quic", "ports": [{"containerPort": 8443,
                                                                  "protocol": "UDP"}]}
    annotations = {}
    if server_id is not None:
        container["env"] = [{"name": ENV, "value": base64.b64encode(server_id).decode()}]
        annotations[QUIC_ENABLED_CONTAINERS_ANNOTATION] = "app"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{ip}", "annotations": annotations},
            "spec": {"containers": [container]}}


async def _backends(c: Cluster) -> None:
    """Three pods behind the Service's one slice; two carry a server ID."""
    endpoints = []
    for ip in [*IDS, NO_ID]:
        pod = await c.create(PODS, _pod(ip, IDS.get(ip)))
        endpoint = objects.endpoint(ip, service="web", uid=pod["metadata"]["uid"])
        endpoints.append(endpoint)
    await c.pod_enis([*IDS, NO_ID])
    await c.create(ENDPOINTSLICES, objects.endpoint_slice(
        "web", endpoints=endpoints, ports=(("quic", 8443),)))


async def _deployed(c: Cluster) -> dict[str, Any] | None:
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listener = (await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))).get(443)
    if listener is None:
        return None
    arn = listener["DefaultActions"][0]["ForwardConfig"]["TargetGroups"][0]["TargetGroupArn"]
    [group] = (await c.aws.elbv2("DescribeTargetGroups", TargetGroupArns=[arn]))[
        "TargetGroups"]
    health = await c.aws.elbv2("DescribeTargetHealth", TargetGroupArn=arn)
    return {"listener": listener["Protocol"], "group": group["Protocol"],
            "targets": {(d["Target"]["Id"], d["Target"].get("QuicServerId"))
                        for d in health["TargetHealthDescriptions"]}}


async def test_quic_listener_target_group_and_server_ids(cluster: Cluster,
                                                         aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await _backends(c)
    await c.nlb_service("web", {"aws-load-balancer-quic-enabled-ports": "443"}, ports=QUIC_PORT,
                        endpoint_ips=())
    await c.start()
    want = {(ip, "0x" + raw.hex()) for ip, raw in IDS.items()}

    async def quic() -> bool:
        return await _deployed(c) == {"listener": "QUIC", "group": "QUIC", "targets": want}

    await eventually(quic)
    assert aws_proxy.records(operation="RegisterTargets")

    async def told() -> bool:
        [binding] = await c.bindings("web")
        reasons = {e.get("reason") for e in await c.events(binding["metadata"]["name"],
                                                           of=TARGETGROUPBINDINGS)}
        return "QUICServerIDMissing" in reasons

    await eventually(told)
    # Counted as upstream counts it, per binding (the pod without an ID, each attempt).
    [binding] = await c.bindings("web")
    assert (c.registry.get_sample_value("awslbc_quic_target_missing_server_id", {
        "namespace": binding["metadata"]["namespace"], "name": binding["metadata"]["name"]})
        or 0) >= 1
    # Without the annotation the listener is UDP again, on a new UDP target group, and every
    # pod is registered (without server IDs).
    await c.annotate(SERVICES, "web", {P + "aws-load-balancer-quic-enabled-ports": None})

    async def udp() -> bool:
        return await _deployed(c) == {
            "listener": "UDP", "group": "UDP",
            "targets": {(ip, None) for ip in [*IDS, NO_ID]}}

    await eventually(udp)
    await c.delete(SERVICES, "web")
    await eventually(lambda: c.gone(SERVICES, "web"))
    assert not await c.aws.load_balancers()
    assert not await c.aws.target_groups()


async def test_a_tcp_port_cannot_be_quic(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {"aws-load-balancer-quic-enabled-ports": "80"}, endpoint_ips=())
    await c.start()
    message = (f"service default/web port 80: annotation {P}aws-load-balancer-quic-enabled-ports"
               " names it, but QUIC upgrades UDP and TCP_UDP listeners only, not TCP")

    async def reported() -> bool:
        cond = condition(await c.get(SERVICES, "web"), CONDITION_TYPE)
        return cond is not None and cond["message"] == message

    await eventually(reported)
    assert not aws_proxy.records(operation="CreateLoadBalancer")
