"""The bindings the Service and Ingress controllers write stay within the networking policy with
no grant at all: with the backend group off they admit their load balancer's frontend group (a
Service's, an Ingress's, an Ingress group's, whose namespace its target group's tags name) on
the target port and the health-check port, and get those rules on the node group, none refused.
The controller is set up from `aiolbc run` flags."""

from __future__ import annotations

from functools import partial

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AwsSeed
from tests.support.aws import Rules
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.waiting import eventually

OURS = "elbv2.k8s.aws/cluster=test-cluster,elbv2.k8s.aws/targetGroupBinding=shared"
A = "alb.ingress.kubernetes.io/"


async def _frontend(c: Cluster, stack: str, kind: str = "ingress") -> str:
    async def one() -> str | None:
        groups = await c.aws.stack_security_groups(stack, kind=kind)
        return str(groups[0]["GroupId"]) if len(groups) == 1 else None
    return str(await eventually(one, timeout=60))


async def test_managed_bindings_admit_their_frontend_groups_without_a_grant(
        cluster: Cluster, aws_seed: AwsSeed) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.nlb_service("web", {"aws-load-balancer-healthcheck-port": "8081"})
    await c.backend("site-be", endpoint_ips=["10.0.4.41"])
    await c.ingress("site", {A + "target-type": "ip"}, backend="site-be")
    await c.backend("team-be", endpoint_ips=["10.0.4.42"], target_port=8082)
    await c.ingress("team", {A + "target-type": "ip", A + "group.name": "team-web"},
                    backend="team-be")
    await c.start_app("--enable-backend-security-group=false")
    web = await _frontend(c, "default/web", "service")
    site = await _frontend(c, "default/site")
    team = await _frontend(c, "team-web")
    wanted: Rules = {("tcp", 8080, 8081, web, OURS), ("tcp", 8080, 8080, site, OURS),
                     ("tcp", 8082, 8082, team, OURS)}

    async def placed() -> bool:
        rules = await c.aws.group_rules(aws_seed.node_security_group_id)
        return {r for r in rules if r[4] == OURS} == wanted
    await eventually(placed, timeout=60, message="the managed bindings' rules were not placed")

    bindings = await c.bindings()
    assert len(bindings) == 3
    for binding in bindings:
        await eventually(partial(_ready, c, binding["metadata"]["name"]), timeout=30)
    assert not [e for b in bindings for e in await c.events(b["metadata"]["name"])
                if e.get("reason") == "NetworkingNotAllowed"]


async def _ready(c: Cluster, name: str) -> bool:
    ready = condition(await c.get(TARGETGROUPBINDINGS, name), "Ready") or {}
    return ready.get("status") == "True"
