"""`service.beta.kubernetes.io/actions.<PROTOCOL>-<port>`: an NLB listener's default action
weighted between the Service's own target group and others by ARN, in AWS after create, update
and delete; bad input and a target group the Service may not forward to as one message with
no AWS call."""

from __future__ import annotations

import json
from typing import Any

from controller.annotations import quote
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
KEY = "actions.TCP-80"


def _action(*others: tuple[str, int], base: int | None = 10,
            sticky: bool | None = None) -> str:
    forward: dict[str, Any] = {"targetGroups": [{"targetGroupARN": arn, "weight": weight}
                                                for arn, weight in others]}
    if base is not None:
        forward["baseServiceWeight"] = base
    if sticky is not None:
        forward["targetGroupStickinessConfig"] = {"enabled": sticky}
    return json.dumps({"type": "forward", "forwardConfig": forward})


async def _default_forward(c: Cluster) -> dict[str, Any] | None:
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listener = (await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))).get(80)
    if listener is None:
        return None
    config = listener["DefaultActions"][0].get("ForwardConfig") or {}
    return {"groups": {g["TargetGroupArn"]: g.get("Weight") for g in config["TargetGroups"]},
            "sticky": bool((config.get("TargetGroupStickinessConfig") or {}).get("Enabled"))}


async def _reported(c: Cluster, message: str) -> bool:
    cond = condition(await c.get(SERVICES, "web"), CONDITION_TYPE)
    return cond is not None and cond["message"] == message


async def test_weighted_default_action_follows_create_update_and_delete(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    other = await c.target_group("canary", protocol="TCP", port=8080)
    await c.nlb_service("web", {KEY: _action((other, 20), sticky=True)})
    await c.start()

    async def forward(want: dict[str, Any]) -> bool:
        found = await _default_forward(c)
        if found is None:
            return False
        own = [arn for arn in found["groups"] if arn != other]
        return (len(own) == 1 and found["groups"].get(other) == want["other"]
                and found["groups"][own[0]] == want["base"] and found["sticky"] == want["sticky"])

    await eventually(lambda: forward({"base": 10, "other": 20, "sticky": True}))
    await c.annotate(SERVICES, "web", {P + KEY: _action((other, 90), base=0)})
    await eventually(lambda: forward({"base": 0, "other": 90, "sticky": False}))
    modified = len(aws_proxy.records(operation="ModifyListener"))
    assert modified == 1  # one per change

    async def own_only() -> bool:
        found = await _default_forward(c)
        return found is not None and other not in found["groups"] and len(found["groups"]) == 1

    await c.annotate(SERVICES, "web", {P + KEY: None})
    await eventually(own_only)
    await c.delete(SERVICES, "web")
    await eventually(lambda: c.gone(SERVICES, "web"))
    assert not await c.aws.load_balancers()
    # The other target group is someone else's: forwarded to, never deleted.
    assert other in {g["TargetGroupArn"] for g in await c.aws.target_groups()}


async def test_bad_action_is_one_message_and_no_aws_call(cluster: Cluster,
                                                         aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    raw = json.dumps({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "canary"}]}})
    await c.nlb_service("web", {KEY: raw}, endpoint_ips=())
    await c.start()
    message = (f"annotation {P}{KEY}: {quote(raw)} is invalid "
               "(forwardConfig.targetGroups[0]: missing servicePort)")
    await eventually(lambda: _reported(c, message))
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    assert not aws_proxy.records(operation="CreateTargetGroup")


async def test_forward_to_another_clusters_target_group_is_refused(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    other = await c.target_group("theirs", protocol="TCP", port=8080,
                                 tags={"elbv2.k8s.aws/cluster": "another"})
    await c.nlb_service("web", {KEY: _action((other, 20))}, endpoint_ips=())
    await c.start()
    message = (f"service default/web: forward to {other}: target group theirs belongs to "
               "cluster another (elbv2.k8s.aws/cluster)")

    await eventually(lambda: _reported(c, message))
    assert not aws_proxy.records(operation="CreateLoadBalancer")


async def test_a_backend_service_by_name_gets_its_target_group_and_targets(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    raw = json.dumps({"type": "forward", "forwardConfig": {"baseServiceWeight": 10,
                                                           "targetGroups": [
        {"serviceName": "canary", "servicePort": 81, "weight": 30}]}})
    await c.nlb_service("web", {KEY: raw})
    await c.start()
    message = (f"service default/web: annotation {P}{KEY} forwards to Service default/canary, "
               "which does not exist")
    await eventually(lambda: _reported(c, message))
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    # The backend appears: the Service is woken, and its listener forwards to both.
    await c.create(SERVICES, objects.backend_service("canary", port=81, target_port=9090))
    await c.endpoints("canary", ["10.0.2.40"], ports=(("http", 9090),))

    async def weights() -> list[int] | None:
        found = await _default_forward(c)
        return sorted(found["groups"].values()) if found is not None else None

    async def both() -> bool:
        return await weights() == [10, 30]

    await eventually(both)
    bindings = {b["spec"]["serviceRef"]["name"]: b for b in await c.bindings("web")}
    assert set(bindings) == {"web", "canary"}
    canary_arn = bindings["canary"]["spec"]["targetGroupARN"]

    async def registered() -> bool:
        return await c.aws.registered(canary_arn) == {("10.0.2.40", 9090)}

    await eventually(registered)
    await c.delete(SERVICES, "web")
    await eventually(lambda: c.gone(SERVICES, "web"))
    # Both target groups were the stack's: deleted with it.
    assert not await c.aws.target_groups()
