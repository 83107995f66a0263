"""`aws-load-balancer-target-group-attributes.<port>` and
`aws-load-balancer-proxy-protocol-per-target-group`: each port's target group in AWS after
create, update and delete, and a port the Service lacks as one message with no AWS call."""

from __future__ import annotations

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
PER_TG = "aws-load-balancer-proxy-protocol-per-target-group"
PORT_80 = "aws-load-balancer-target-group-attributes.80"
DELAY = "deregistration_delay.timeout_seconds"
PPV2 = "proxy_protocol_v2.enabled"
PORTS = [service_port(80, 8080, "http"), service_port(3306, 8080, "db")]


async def _attributes(c: Cluster) -> dict[int, dict[str, str]]:
    """Each target group's proxy protocol and deregistration delay, by port."""
    found: dict[int, dict[str, str]] = {}
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return found
    for port, listener in (await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))).items():
        forward = listener["DefaultActions"][0]
        arn = forward.get("TargetGroupArn") or forward["ForwardConfig"]["TargetGroups"][0][
            "TargetGroupArn"]
        resp = await c.aws.elbv2("DescribeTargetGroupAttributes", TargetGroupArn=arn)
        attributes = {a["Key"]: a["Value"] for a in resp["Attributes"]}
        found[port] = {k: attributes[k] for k in (PPV2, DELAY)}
    return found


async def test_each_ports_target_group_follows_its_annotations(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {PER_TG: "3306", PORT_80: f"{DELAY}=30",
                                "aws-load-balancer-target-group-attributes": f"{DELAY}=60"},
                        ports=PORTS)
    await c.start()

    async def attributes_are(wanted: dict[int, dict[str, str]]) -> bool:
        return await _attributes(c) == wanted

    await eventually(lambda: attributes_are({80: {PPV2: "false", DELAY: "30"},
                                             3306: {PPV2: "true", DELAY: "60"}}),
                     message="created target groups do not carry their port's attributes")
    await c.annotate(SERVICES, "web", {P + PER_TG: "80", P + PORT_80: None})
    await eventually(lambda: attributes_are({80: {PPV2: "true", DELAY: "60"},
                                             3306: {PPV2: "false", DELAY: "60"}}),
                     message="updated target groups do not follow")
    # Attributes change in place: the same target groups.
    assert not aws_proxy.records(operation="DeleteTargetGroup")

    await c.delete(SERVICES, "web")

    async def gone() -> bool:
        return not await c.aws.load_balancers() and not await c.aws.target_groups()

    await eventually(gone, message="not deleted")
    assert await c.stop() == 0


async def test_a_port_the_service_lacks_is_one_message(cluster: Cluster,
                                                       aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {PER_TG: "443"}, ports=PORTS, endpoint_ips=())
    await c.start()
    message = (f"service default/web: annotation {P}{PER_TG} names port 443, which is not one "
               "of its ports (80, 3306)")

    async def reported() -> bool:
        svc = await c.get(SERVICES, "web")
        cond = condition(svc, CONDITION_TYPE)
        events = [(e["reason"], e["message"]) for e in await c.events("web")
                  if e["type"] == "Warning"]
        return (cond is not None and cond["message"] == message
                and ("FailedBuildModel", message) in events)

    await eventually(reported)
    await c.settled()
    assert aws_proxy.log == []
    assert await c.stop() == 0
