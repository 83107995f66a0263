"""Feature gates that change what the controllers deploy, each in both states, through the
whole controller (`aiolbc run`'s set-up) against the local API server and moto."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.aws import AWSClientPool
from controller.model import LISTENER_RULE, LOAD_BALANCER
from controller.standins import AwsSeed
from runtime.objects import Obj
from runtime.resources import INGRESSES, SERVICES
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.objects import hostname, ingress_path
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

RESOURCE_TAG = "ingress.k8s.aws/resource"


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        yield c


async def _load_balancer(c: Cluster, name: str) -> Obj:
    async def deployed() -> Obj | None:
        ing = await c.find(INGRESSES, name)
        return await c.aws.load_balancer_at(hostname(ing)) if ing and hostname(ing) else None

    lb: Obj = await eventually(deployed, timeout=60)
    return lb


async def _listener_and_rules(c: Cluster, lb: Obj) -> tuple[Obj, list[Obj]]:
    listener = (await c.aws.listeners(str(lb["LoadBalancerArn"])))[80]
    return listener, await c.aws.rules(listener["ListenerArn"])


def _paths(rules: list[Obj]) -> list[str]:
    """Each rule's first path pattern."""
    return [next(v for cond in r["Conditions"] for v in
             (cond.get("PathPatternConfig") or {}).get("Values", [])) for r in rules]


# ---- ListenerRulesTagging -------------------------------------------------------------------

@pytest.mark.parametrize("tagging", [True, False])
async def test_listener_rules_tagging(cluster: Cluster, tagging: bool) -> None:
    """On (upstream's default), listeners and rules carry the tracking tags; off, they are
    created untagged and stay so, and rules are still matched (by content, then priority)
    so that a reordering moves them instead of replacing them."""
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.backend("api")
    await c.ingress("shop", paths=[ingress_path("/api", "api"), ingress_path("/", "web")])
    await c.start_app(f"--feature-gates=ListenerRulesTagging={str(tagging).lower()}")
    lb = await _load_balancer(c, "shop")
    listener, rules = await eventually(lambda: _listener_and_rules(c, lb))
    assert _paths(rules) == ["/api", "/*"]
    arns = [listener["ListenerArn"], *(r["RuleArn"] for r in rules)]
    tags = await c.aws.tags([lb["LoadBalancerArn"], *arns])
    assert tags[lb["LoadBalancerArn"]][RESOURCE_TAG] == "LoadBalancer"
    for arn in arns:
        assert (RESOURCE_TAG in tags[arn]) is tagging, (arn, tags[arn])
        if not tagging:
            assert tags[arn] == {}

    # A new path in front. Untagged, the two existing rules are recognised by their content:
    # they move down, neither is replaced (tagged, a rule's identity is its position).
    await c.backend("new")
    await c.patch(INGRESSES, "shop", {"spec": {"rules": [{"http": {"paths": [
        ingress_path("/new", "new"), ingress_path("/api", "api"), ingress_path("/", "web")]}}]}})

    async def reordered() -> list[Obj] | None:
        _, now = await _listener_and_rules(c, lb)
        return now if _paths(now) == ["/new", "/api", "/*"] else None

    now = await eventually(reordered, timeout=60)
    await c.settled()
    _, now = await _listener_and_rules(c, lb)
    assert len(now) == 3
    if not tagging:
        assert [r["RuleArn"] for r in now[1:]] == [r["RuleArn"] for r in rules]
    tags = await c.aws.tags(r["RuleArn"] for r in now)
    assert all((RESOURCE_TAG in t) is tagging for t in tags.values()), tags
    await c.stop()


# ---- WeightedTargetGroups -------------------------------------------------------------------

def _weighted() -> dict[str, str]:
    return {"alb.ingress.kubernetes.io/actions.split": json.dumps({
        "type": "forward", "forwardConfig": {"targetGroups": [
            {"serviceName": "blue", "servicePort": 80, "weight": 80},
            {"serviceName": "green", "servicePort": 80, "weight": 20}]}})}


async def test_weighted_target_groups_on_forwards_to_both(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("blue")
    await c.backend("green")
    await c.ingress("canary", _weighted(),
                    paths=[ingress_path("/", "split", "use-annotation")])
    await c.start_app("--feature-gates=WeightedTargetGroups=true")
    lb = await _load_balancer(c, "canary")
    _, rules = await eventually(lambda: _listener_and_rules(c, lb))
    (rule,) = rules
    (forward,) = rule["Actions"]
    assert sorted(g["Weight"] for g in forward["ForwardConfig"]["TargetGroups"]) == [20, 80]
    await c.stop()


async def test_weighted_target_groups_off_refuses_with_upstreams_message(
        cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("blue")
    await c.backend("green")
    await c.backend("web")
    await c.ingress("canary", _weighted(),
                    paths=[ingress_path("/", "split", "use-annotation")])
    await c.ingress("plain", {"alb.ingress.kubernetes.io/group.name": "other"}, backend="web")
    await c.start_app("--feature-gates=WeightedTargetGroups=false")
    message = ("Ingress default/canary: a forward action over 2 target groups: weighted target "
               "groups feature is disabled (feature gate WeightedTargetGroups)")

    async def refused() -> list[Obj]:
        return [e for e in warnings(await c.events("canary")) if message in e["message"]]

    await eventually(refused, timeout=60)
    # One target group is still a forward; the refused Ingress got nothing.
    await _load_balancer(c, "plain")
    await c.settled()
    ing = await c.get(INGRESSES, "canary")
    assert not hostname(ing)
    assert not ing["metadata"].get("finalizers")
    assert len(await c.aws.load_balancers()) == 1
    await c.stop()


# ---- SubnetsClusterTagCheck -----------------------------------------------------------------

async def _retag(c: Cluster, subnet: str, *, remove: tuple[str, ...] = (),
                 add: dict[str, str] | None = None) -> None:
    if remove:
        await c.aws.call("ec2", "DeleteTags", Resources=[subnet],
                         Tags=[{"Key": k} for k in remove])
    if add:
        await c.aws.call("ec2", "CreateTags", Resources=[subnet],
                         Tags=[{"Key": k, "Value": v} for k, v in add.items()])


async def _refused(c: Cluster, name: str, text: str) -> list[Obj]:
    return [e for e in warnings(await c.events(name)) if text in e["message"]]


@pytest.mark.parametrize("check", [True, False])
async def test_subnets_cluster_tag_check(cluster: Cluster, check: bool) -> None:
    """A subnet tagged for another cluster only: left out with the check on (upstream's
    default), so the internal ALB has one zone and is refused; used with it off."""
    c = cluster
    other = c.seed.private_subnets[0]
    await _retag(c, other, remove=(f"kubernetes.io/cluster/{c.seed.cluster_name}",),
                 add={"kubernetes.io/cluster/someone-else": "owned"})
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", backend="web")
    await c.start_app(f"--feature-gates=SubnetsClusterTagCheck={str(check).lower()}")
    if check:
        await eventually(lambda: _refused(c, "shop", "needs subnets in at least two "
                                                     "availability zones, got 1"), timeout=60)
        assert not await c.aws.load_balancers()
    else:
        lb = await _load_balancer(c, "shop")
        assert sorted(z["SubnetId"] for z in lb["AvailabilityZones"]) == sorted(
            c.seed.private_subnets)
    await c.stop()


# ---- ALBSingleSubnet ------------------------------------------------------------------------

@pytest.mark.parametrize("single", [True, False])
async def test_alb_single_subnet(cluster: Cluster, single: bool) -> None:
    """Off (upstream's default), an ALB given one subnet is refused before any AWS call; on,
    it is created in that subnet."""
    c = cluster
    subnet = c.seed.private_subnets[0]
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {"alb.ingress.kubernetes.io/subnets": subnet}, backend="web")
    await c.start_app(f"--feature-gates=ALBSingleSubnet={str(single).lower()}")
    if single:
        lb = await _load_balancer(c, "shop")
        assert [z["SubnetId"] for z in lb["AvailabilityZones"]] == [subnet]
    else:
        await eventually(lambda: _refused(c, "shop", "needs subnets in at least two "
                                                     "availability zones, got 1"), timeout=60)
        assert not await c.aws.load_balancers()
    await c.stop()


# ---- NLBHealthCheckAdvancedConfig -----------------------------------------------------------

async def _service_target_groups(c: Cluster) -> list[Obj]:
    return [tg for tg in await c.aws.target_groups()
            if tg.get("VpcId") == c.seed.vpc_id and tg.get("Protocol") == "TCP"]


@pytest.mark.parametrize("advanced", [True, False])
async def test_nlb_health_check_advanced_config(cluster: Cluster, advanced: bool) -> None:
    """On (upstream's default), the timeout and success codes are the annotations' and a
    changed interval modifies the target group; off, they are not read (the default timeout,
    no matcher) and a changed interval replaces the target group, as upstream."""
    c = cluster
    await c.nlb_service("web", {
        "aws-load-balancer-healthcheck-protocol": "HTTP",
        "aws-load-balancer-healthcheck-timeout": "7",
        "aws-load-balancer-healthcheck-success-codes": "200-299",
        "aws-load-balancer-healthcheck-interval": "10"})
    await c.start_app(f"--feature-gates=NLBHealthCheckAdvancedConfig={str(advanced).lower()}")
    (tg,) = await eventually(lambda: _service_target_groups(c), timeout=60)
    assert tg["HealthCheckTimeoutSeconds"] == (7 if advanced else 10)
    if advanced:
        assert tg["Matcher"] == {"HttpCode": "200-299"}
    else:
        # Not silently: the keys left unread are told.
        async def told() -> set[str]:
            said = {e["message"] for e in await _refused(
                c, "web", "not acted on while the NLBHealthCheckAdvancedConfig feature gate")}
            return said if len(said) == 2 else set()

        assert await eventually(told) == {
            f"service.beta.kubernetes.io/aws-load-balancer-healthcheck-{key}: not acted on "
            "while the NLBHealthCheckAdvancedConfig feature gate is off"
            for key in ("timeout", "success-codes")}
    await c.settled()

    await c.annotate(SERVICES, "web", {
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval": "20"})

    async def changed() -> Obj | None:
        tgs = await _service_target_groups(c)
        return tgs[0] if len(tgs) == 1 and tgs[0]["HealthCheckIntervalSeconds"] == 20 else None

    now = await eventually(changed, timeout=60)
    assert (now["TargetGroupArn"] == tg["TargetGroupArn"]) is advanced
    await c.stop()


# ---- SubnetDiscoveryByReachability ----------------------------------------------------------

async def _public_by_route_only(c: Cluster) -> None:
    """The public subnets lose their role tag and get a route table with a default route to
    an internet gateway; every other subnet stays on the VPC's main table (local only)."""
    for subnet in c.seed.public_subnets:
        await _retag(c, subnet, remove=("kubernetes.io/role/elb",))
    igw = (await c.aws.call("ec2", "CreateInternetGateway"))["InternetGateway"]
    await c.aws.call("ec2", "AttachInternetGateway", VpcId=c.seed.vpc_id,
                     InternetGatewayId=igw["InternetGatewayId"])
    table = (await c.aws.call("ec2", "CreateRouteTable",
                              VpcId=c.seed.vpc_id))["RouteTable"]["RouteTableId"]
    await c.aws.call("ec2", "CreateRoute", RouteTableId=table, DestinationCidrBlock="0.0.0.0/0",
                     GatewayId=igw["InternetGatewayId"])
    for subnet in c.seed.public_subnets:
        await c.aws.call("ec2", "AssociateRouteTable", RouteTableId=table, SubnetId=subnet)


@pytest.mark.parametrize("reachability", [True, False])
async def test_subnet_discovery_by_reachability(cluster: Cluster, reachability: bool) -> None:
    """No subnet tagged kubernetes.io/role/elb: on (upstream's default), an internet-facing
    ALB gets the subnets routed to an internet gateway; off, it is refused."""
    c = cluster
    await _public_by_route_only(c)
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {"alb.ingress.kubernetes.io/scheme": "internet-facing"},
                    backend="web")
    await c.start_app(
        f"--feature-gates=SubnetDiscoveryByReachability={str(reachability).lower()}")
    if reachability:
        lb = await _load_balancer(c, "shop")
        assert sorted(z["SubnetId"] for z in lb["AvailabilityZones"]) == sorted(
            c.seed.public_subnets)
    else:
        await eventually(lambda: _refused(
            c, "shop", f"no subnet in VPC {c.seed.vpc_id} is tagged kubernetes.io/role/elb"),
            timeout=60)
        assert not await c.aws.load_balancers()
    await c.stop()


# ---- IngressPlanAnnotation ------------------------------------------------------------------

PLAN = "alb.ingress.kubernetes.io/dry-run-plan"
GROUP = "alb.ingress.kubernetes.io/group.name"


async def test_ingress_plan_annotation_on_writes_the_model_on_the_first_member(
        cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.backend("api")
    # A stale plan on the second member (the first one's before it joined) is removed.
    await c.ingress("b-api", {GROUP: "shop", PLAN: "{}"},
                    paths=[ingress_path("/api", "api")])
    await c.ingress("a-web", {GROUP: "shop"}, backend="web")
    await c.start_app("--feature-gates=IngressPlanAnnotation=true")
    await _load_balancer(c, "a-web")

    async def planned() -> dict[str, str | None] | None:
        found = {name: (await c.get(INGRESSES, name))["metadata"].get(
            "annotations", {}).get(PLAN) for name in ("a-web", "b-api")}
        return found if found["a-web"] and found["b-api"] is None else None

    plan = json.loads(str((await eventually(planned, timeout=60))["a-web"]))
    assert plan["id"] == "shop"
    assert plan["kind"] == "ingress"
    assert len(plan["resources"][LOAD_BALANCER]) == 1
    assert len(plan["resources"][LISTENER_RULE]) == 2

    # The plan follows the model: a changed path is a changed plan.
    await c.patch(INGRESSES, "b-api", {"spec": {"rules": [{"http": {"paths": [
        ingress_path("/v2", "api")]}}]}})

    async def replanned() -> str | None:
        now = (await c.get(INGRESSES, "a-web"))["metadata"]["annotations"].get(PLAN)
        return now if now and "/v2" in now else None

    await eventually(replanned, timeout=60)
    await c.stop()


async def test_ingress_plan_annotation_off_removes_it(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {PLAN: '{"left": "by an earlier run"}'}, backend="web")
    await c.start_app("--feature-gates=IngressPlanAnnotation=false")
    await _load_balancer(c, "shop")

    async def removed() -> bool:
        ing = await c.get(INGRESSES, "shop")
        return PLAN not in (ing["metadata"].get("annotations") or {})

    await eventually(removed, timeout=60)
    await c.settled()
    assert not await _refused(c, "shop", "dry-run-plan")
    await c.stop()
