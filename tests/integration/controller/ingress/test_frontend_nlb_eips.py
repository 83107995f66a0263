"""The frontend NLB's Elastic IPs (`frontend-nlb-eip-allocations`) against the local API server
and moto: created with SubnetMappings pairing the EIPs with the listed subnets in their order;
a change AWS cannot make in place leaves the NLB as it is with a Warning Event saying so
(upstream makes no call and replaces nothing); EIPs on an internal frontend NLB, or a count
that does not match the discovered subnets, are one message (a Warning Event) and nothing is
created, and the admission webhook denies it with the same text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.standins import AWSFaultProxy, AwsSeed
from runtime.resources import INGRESSES
from tests.support import objects
from tests.support.cluster import INGRESS, SERVICE, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.kubectl import Kubectl
from tests.support.objects import ingress_path
from tests.support.waiting import eventually
from tests.support.webhooks import WebhookHarness

A = "alb.ingress.kubernetes.io/"
EIPS = A + "frontend-nlb-eip-allocations"


async def _network(c: Cluster) -> dict[str, Any] | None:
    return next((lb for lb in await c.aws.load_balancers() if lb["Type"] == "network"), None)


def _allocations(lb: dict[str, Any]) -> dict[str, str]:
    return {z["SubnetId"]: z["LoadBalancerAddresses"][0]["AllocationId"]
            for z in lb["AvailabilityZones"] if z.get("LoadBalancerAddresses")}


async def _allocate(c: Cluster, count: int) -> list[str]:
    return [(await c.aws.call("ec2", "AllocateAddress", Domain="vpc"))["AllocationId"]
            for _ in range(count)]


async def _warnings(c: Cluster, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in await c.events(name, of=INGRESSES)
            if e["type"] == "Warning"]


async def test_elastic_ips_on_create_and_kept_on_change(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    c = cluster
    first, second, spare = await _allocate(c, 3)
    low, high = sorted(aws_seed.public_subnets)
    await c.ingress_class("alb")
    await c.backend("web")
    # Listed subnets pair with the Elastic IPs in the order listed, the last ID first here.
    await c.ingress("shop", paths=[ingress_path("/", "web")], annotations={
        A + "enable-frontend-nlb": "true", A + "frontend-nlb-scheme": "internet-facing",
        A + "frontend-nlb-subnets": f"{high},{low}", EIPS: f"{first}, {second}"})
    await c.start()

    nlb = await eventually(lambda: _network(c), timeout=30)
    assert nlb["Scheme"] == "internet-facing"
    assert _allocations(nlb) == {high: first, low: second}
    assert len([r for r in aws_proxy.records(operation="CreateLoadBalancer")
                if r.outcome == "ok"]) == 2  # the ALB and the NLB
    await c.settled()

    aws_proxy.clear_log()
    await c.annotate(INGRESSES, "shop", {EIPS: f"{spare}, {second}"})
    expected = ("StaticAddressesKept",
                f"load balancer {nlb['LoadBalancerName']}: subnet {high} keeps {first} "
                f"({spare} asked): AWS cannot change the addresses of a subnet a network load "
                "balancer already uses, and the load balancer is not replaced for it (as "
                "upstream); to change them, turn the Ingress group's frontend NLB off "
                "(enable-frontend-nlb) and on again")

    async def warned() -> bool:
        return expected in await _warnings(c, "shop")

    await eventually(warned, message="no Warning about the kept Elastic IP")
    await c.settled()
    assert not aws_proxy.records(operation="SetSubnets")
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    assert not aws_proxy.records(operation="DeleteLoadBalancer")
    same = await _network(c)
    assert same is not None
    assert same["LoadBalancerArn"] == nlb["LoadBalancerArn"]
    assert _allocations(same) == {high: first, low: second}
    assert await c.stop() == 0


async def test_elastic_ips_on_an_internal_frontend_nlb_are_one_message(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    [eip] = await _allocate(c, 1)
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("inside", paths=[ingress_path("/", "web")], annotations={
        A + "enable-frontend-nlb": "true", EIPS: eip})
    await c.start()
    said = (f"annotation {EIPS}: EIP allocations can be set for an internet-facing load "
            "balancer only (the frontend NLB's scheme is internal)")

    async def refused() -> bool:
        return any(said in message for _, message in await _warnings(c, "inside"))

    await eventually(refused, message="no clear report of the scheme")
    await c.settled()
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    assert await c.aws.load_balancers() == []
    assert await c.stop() == 0


async def test_a_count_that_does_not_match_the_discovered_subnets_is_one_message(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    c = cluster
    [eip] = await _allocate(c, 1)
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("short", paths=[ingress_path("/", "web")], annotations={
        A + "enable-frontend-nlb": "true", A + "frontend-nlb-scheme": "internet-facing",
        EIPS: eip})
    await c.start()
    public = ", ".join(sorted(aws_seed.public_subnets))
    said = f": count of EIP allocations (1) and subnets (2: {public}) must match"

    async def refused() -> bool:
        return any(said in message for _, message in await _warnings(c, "short"))

    await eventually(refused, timeout=30, message="no clear report of the count")
    await c.settled()
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    assert await c.aws.load_balancers() == []
    assert await c.stop() == 0


@pytest.fixture
async def app_cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(SERVICE, INGRESS, TARGETGROUPBINDING)


@pytest.fixture
def hooks(app_cluster: Cluster, tmp_path: Path) -> WebhookHarness:
    assert app_cluster.kubeconfig is not None
    home = tmp_path / "kubectl-home"
    home.mkdir()
    return WebhookHarness(app_cluster, Kubectl(app_cluster.kubeconfig, home), tmp_path)


async def test_admission_denies_what_the_reconciler_refuses_with_its_text(
        app_cluster: Cluster, hooks: WebhookHarness, aws_proxy: AWSFaultProxy) -> None:
    c = app_cluster
    notes = {"enable-frontend-nlb": "true", "frontend-nlb-eip-allocations": "eipalloc-1"}
    await c.ingress_class()
    await c.backend("web")
    await c.start_app(on_setup=hooks.setup)
    # Written before the webhooks are configured: the reconciler refuses it.
    await c.ingress("early", {A + k: v for k, v in notes.items()}, backend="web")

    async def told() -> str | None:
        found = [m for r, m in await _warnings(c, "early") if r == "FailedBuildModel"]
        return found[0] if found else None

    text = await eventually(told, message="no FailedBuildModel for the internal NLB's EIPs")
    assert text.endswith(f"annotation {EIPS}: EIP allocations can be set for an "
                         "internet-facing load balancer only (the frontend NLB's scheme is "
                         "internal)")
    await hooks.install()
    late = objects.ingress("late", notes, paths=[objects.ingress_path("/", "web")])
    result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(late), check=False)
    assert result.returncode != 0
    assert ('admission webhook "vingress.elbv2.k8s.aws" denied the request: '
            + text.replace("early", "late")) in result.stderr
    assert await c.find(INGRESSES, "late") is None
    await c.settled()
    assert not aws_proxy.records(operation="CreateLoadBalancer")
