"""The frontend NLB (`enable-frontend-nlb`) against the local API server and moto: created with
the ALB registered in its `alb` target groups, its hostname after the ALB's in the status,
updated in place, costing nothing once converged, and removed (NLB and its target groups only)
when the key is turned off."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.standins import AWSFaultProxy
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


async def _by_type(c: Cluster) -> dict[str, dict[str, Any]]:
    return {str(lb["Type"]): lb for lb in await c.aws.load_balancers()}


def _forwarded(listener: dict[str, Any]) -> str:
    action = listener["DefaultActions"][0]
    return str(action.get("TargetGroupArn")
               or action["ForwardConfig"]["TargetGroups"][0]["TargetGroupArn"])


async def _hostnames(c: Cluster) -> list[str]:
    ing = await c.find(INGRESSES, "shop")
    assert ing is not None
    items = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [str(i.get("hostname")) for i in items]


async def test_create_update_and_turn_off(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", paths=[ingress_path("/", "web")], annotations={
        A + "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]',
        A + "enable-frontend-nlb": "true", A + "frontend-nlb-scheme": "internet-facing",
        A + "frontend-nlb-healthcheck-path": "/hz"})
    await c.start()

    async def both() -> dict[str, dict[str, Any]] | None:
        lbs = await _by_type(c)
        return lbs if set(lbs) == {"application", "network"} else None

    lbs = await eventually(both)
    alb, nlb = lbs["application"], lbs["network"]
    assert nlb["LoadBalancerName"] == str(alb["LoadBalancerName"])[:28] + "-nlb"
    assert nlb["Scheme"] == "internet-facing"
    assert alb["Scheme"] == "internal"

    async def statused() -> list[str] | None:
        names = await _hostnames(c)
        return names if len(names) == 2 else None

    assert await eventually(statused) == [alb["DNSName"], str(nlb["DNSName"]).lower()]
    listeners = await c.aws.listeners(str(nlb["LoadBalancerArn"]))
    assert set(listeners) == {80, 8080}
    assert all(li["Protocol"] == "TCP" for li in listeners.values())
    tgs = {tg["TargetGroupArn"]: tg for tg in await c.aws.target_groups()
           if tg["TargetType"] == "alb"}
    assert len(tgs) == 2
    for li in listeners.values():
        arn = _forwarded(li)
        tg = tgs[arn]
        assert (tg["Protocol"], tg["Port"], tg["HealthCheckPath"]) == ("TCP", li["Port"], "/hz")
        assert await c.aws.registered(arn) == {(alb["LoadBalancerArn"], li["Port"])}
    tags = await c.aws.tags([nlb["LoadBalancerArn"]])
    assert tags[nlb["LoadBalancerArn"]]["ingress.k8s.aws/resource"] == "FrontendNlb"

    # Converged: a change the model does not read costs no AWS call.
    await c.settled()
    aws_proxy.clear_log()
    before = c.reconciles()
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {"example.com/note": "x"}}})
    await eventually(lambda: asyncio.sleep(0, c.reconciles() > before))
    await c.settled()
    assert [r.operation for r in aws_proxy.log] == []

    # Update: map NLB port 9000 to the ALB's 8080 only.
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        A + "frontend-nlb-listener-port-mapping": "9000=8080"}}})

    async def remapped() -> bool:
        found = await c.aws.listeners(str(nlb["LoadBalancerArn"]))
        if set(found) != {9000}:
            return False
        arn = _forwarded(found[9000])
        return await c.aws.registered(arn) == {(alb["LoadBalancerArn"], 8080)}

    await eventually(remapped)

    async def one_alb_target_group() -> bool:
        return len([tg for tg in await c.aws.target_groups() if tg["TargetType"] == "alb"]) == 1

    await eventually(one_alb_target_group)

    # Another scheme: the NLB is replaced under its own name (upstream's name ignores the
    # scheme), the old one deleted first; its target group stays and keeps the ALB.
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        A + "frontend-nlb-scheme": "internal"}}})

    async def replaced() -> dict[str, Any] | None:
        found = (await _by_type(c)).get("network")
        return found if found is not None and found["Scheme"] == "internal" else None

    new_nlb = await eventually(replaced)
    assert new_nlb["LoadBalancerName"] == nlb["LoadBalancerName"]
    assert new_nlb["LoadBalancerArn"] != nlb["LoadBalancerArn"]
    assert await eventually(statused) == [alb["DNSName"], str(new_nlb["DNSName"]).lower()]
    found = await c.aws.listeners(str(new_nlb["LoadBalancerArn"]))
    assert set(found) == {9000}
    assert await c.aws.registered(_forwarded(found[9000])) == {(alb["LoadBalancerArn"], 8080)}

    # Off: the NLB and its target groups go; the ALB, its listeners and its own target group
    # stay, and the status names the ALB alone.
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        A + "enable-frontend-nlb": "false"}}})

    async def gone() -> bool:
        lbs = await _by_type(c)
        alb_tgs = [tg for tg in await c.aws.target_groups() if tg["TargetType"] == "alb"]
        return set(lbs) == {"application"} and not alb_tgs
    await eventually(gone)
    assert (await _by_type(c))["application"]["LoadBalancerArn"] == alb["LoadBalancerArn"]
    assert set(await c.aws.listeners(str(alb["LoadBalancerArn"]))) == {80, 8080}
    assert len(await c.aws.target_groups()) == 1
    assert await eventually(lambda: _only_alb(c, str(alb["DNSName"])))

    # Deleting the Ingress deletes everything.
    await c.delete(INGRESSES, "shop")

    async def nothing_left() -> bool:
        return not await c.aws.load_balancers() and not await c.aws.target_groups()

    await eventually(nothing_left)


async def _only_alb(c: Cluster, dns: str) -> bool:
    return await _hostnames(c) == [dns]


async def test_deleting_the_ingress_deletes_both_load_balancers(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", paths=[ingress_path("/", "web")], annotations={
        A + "enable-frontend-nlb": "true"})
    await c.start()

    async def both() -> bool:
        return set(await _by_type(c)) == {"application", "network"} and len(
            await _hostnames(c)) == 2

    await eventually(both)
    await c.delete(INGRESSES, "shop")

    async def nothing_left() -> bool:
        return not await c.aws.load_balancers() and not await c.aws.target_groups()

    await eventually(nothing_left)
