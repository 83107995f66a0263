"""TCP and UDP on one Service port: one TCP_UDP listener and target group when
`aws-load-balancer-enable-tcp-udp-listener` or the EnableTCPUDPListener gate says so (upstream's
default is off), else one message and no AWS call; AWS's listener after create, update and
delete."""

from __future__ import annotations

from typing import Any

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
SWITCH = "aws-load-balancer-enable-tcp-udp-listener"
DNS = [service_port(53, 5353, "dns", protocol="UDP"), service_port(53, 5353, "dns-tcp")]


def refusal(name: str) -> str:
    return (f"service default/{name} port 53: TCP and UDP on one port need a TCP_UDP "
            f'listener; set annotation {P}{SWITCH}: "true" (or start the controller with '
            "--feature-gates=EnableTCPUDPListener=true)")


async def _protocols(c: Cluster) -> dict[str, Any] | None:
    """The one NLB's listener and target group protocols by port, once both exist."""
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listeners = await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))
    groups = await c.aws.target_groups()
    if not listeners or not groups:
        return None
    return {"listeners": {p: ls["Protocol"] for p, ls in listeners.items()},
            "target_groups": sorted(tg["Protocol"] for tg in groups)}


async def _refused(c: Cluster, name: str) -> bool:
    svc = await c.get(SERVICES, name)
    cond = condition(svc, CONDITION_TYPE)
    events = [(e["reason"], e["message"]) for e in await c.events(name)
              if e["type"] == "Warning"]
    return (cond is not None and cond["status"] == "False"
            and cond["reason"] == "InvalidService" and cond["message"] == refusal(name)
            and ("FailedBuildModel", refusal(name)) in events)


async def test_the_annotation_merges_and_upstreams_default_refuses(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("dns", ports=DNS, endpoint_ips=())
    await c.start()
    await eventually(lambda: _refused(c, "dns"), message="no clear refusal")
    await c.settled()
    assert aws_proxy.log == []  # nothing created for it

    # Create: the annotation asks for TCP_UDP.
    await c.annotate(SERVICES, "dns", {P + SWITCH: "true"})
    merged = {"listeners": {53: "TCP_UDP"}, "target_groups": ["TCP_UDP"]}

    async def is_merged() -> bool:
        return await _protocols(c) == merged

    await eventually(is_merged, message="no TCP_UDP listener")

    # Update: turned off, the Service is refused again and its NLB is left as it is.
    await c.annotate(SERVICES, "dns", {P + SWITCH: "false"})
    await eventually(lambda: _refused(c, "dns"), message="no clear refusal after the update")
    await c.settled()
    assert await _protocols(c) == merged
    assert not aws_proxy.records(operation="DeleteListener")

    # Delete: everything goes, the refusal notwithstanding.
    await c.delete(SERVICES, "dns")

    async def gone() -> bool:
        return not await c.aws.load_balancers() and not await c.aws.target_groups()

    await eventually(gone, message="NLB not deleted")
    assert await c.stop() == 0


async def test_the_gate_merges_every_service_and_the_annotation_wins(cluster: Cluster) -> None:
    c = cluster
    await c.nlb_service("dns", ports=DNS, endpoint_ips=())
    await c.nlb_service("off", {SWITCH: "false"}, ports=DNS, endpoint_ips=())
    await c.start_app("--feature-gates=EnableTCPUDPListener=true")

    async def is_merged() -> bool:
        return await _protocols(c) == {"listeners": {53: "TCP_UDP"},
                                       "target_groups": ["TCP_UDP"]}

    await eventually(is_merged, message="the gate did not merge")
    await eventually(lambda: _refused(c, "off"), message="the annotation did not win")
    assert await c.stop() == 0
