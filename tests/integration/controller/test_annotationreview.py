"""No annotation silently ignored, with the whole controller set up from `aiolbc run` flags:
an Ingress asking for a web ACL is refused before any AWS call, with the same text at
admission; a key aiolbc does not act on is a Warning, at `kubectl apply` and as an Event, and
the load balancer is built; a Service's source ranges are read under upstream's key; the old
spelling is refused; a typo is told once, with the nearest key, and the NLB is built."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.objects import Obj
from runtime.resources import INGRESSES, SERVICES
from tests.support import objects
from tests.support.cluster import INGRESS, METRIC_NAMES, SERVICE, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.kubectl import Kubectl
from tests.support.objects import condition, hostname
from tests.support.waiting import eventually
from tests.support.webhooks import (
    WebhookHarness,
    configurations,
)

A = "alb.ingress.kubernetes.io/"
S = "service.beta.kubernetes.io/"
WEB_ACL = "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/shop/0a1b2c3d"


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(SERVICE, INGRESS, TARGETGROUPBINDING)


@pytest.fixture
def hooks(cluster: Cluster, tmp_path: Path) -> WebhookHarness:
    assert cluster.kubeconfig is not None
    home = tmp_path / "kubectl-home"
    home.mkdir()
    return WebhookHarness(cluster, Kubectl(cluster.kubeconfig, home), tmp_path)


async def apply(hooks: WebhookHarness, obj: Obj) -> subprocess.CompletedProcess[str]:
    return await hooks.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


async def warnings(cluster: Cluster, name: str, reason: str) -> list[Obj]:
    return [e for e in await cluster.events(name)
            if e["type"] == "Warning" and e["reason"] == reason]


async def one_warning(cluster: Cluster, name: str, reason: str) -> Obj:
    async def found() -> Obj | None:
        events = await warnings(cluster, name, reason)
        return events[0] if events else None
    event: Obj = await eventually(found, message=f"{name}: no Warning {reason}")
    return event


async def test_a_misspelt_narrowing_key_is_refused_before_any_aws_call(
        cluster: Cluster, hooks: WebhookHarness, aws_proxy: AWSFaultProxy) -> None:
    await cluster.ingress_class()
    await cluster.backend("web")
    await cluster.start_app(on_setup=hooks.setup)
    # Written before the webhooks are configured: the reconciler refuses it.
    await cluster.ingress("early", {"wafv2-acl-arnn": WEB_ACL}, backend="web")
    text = (await one_warning(cluster, "early", "FailedBuildModel"))["message"]
    assert text == (
        "Ingress default/early: annotation alb.ingress.kubernetes.io/wafv2-acl-arnn is not a "
        "known annotation (did you mean alb.ingress.kubernetes.io/wafv2-acl-arn?); it would "
        "narrow who can reach the load balancer, so nothing is deployed for this Ingress until "
        "it is corrected or removed")
    await cluster.settled()
    # Nothing reached AWS: no call at all, no finalizer, no load balancer.
    assert aws_proxy.log == []
    assert (await cluster.get(INGRESSES, "early"))["metadata"].get("finalizers") in (None, [])
    assert await cluster.aws.load_balancers() == []

    # At admission: the same text, and nothing written.
    await hooks.install()
    late = objects.ingress("late", {"wafv2-acl-arnn": WEB_ACL},
                           paths=[objects.ingress_path("/", "web")])
    result = await apply(hooks, late)
    assert result.returncode != 0
    assert ('admission webhook "vingress.elbv2.k8s.aws" denied the request: '
            + text.replace("default/early", "default/late")) in result.stderr
    assert await cluster.find(INGRESSES, "late") is None

    # A key aiolbc does not act on (every upstream Ingress key is acted on now, so a typo
    # upstream does not know either): admitted with a warning kubectl prints, the same Warning
    # Event, and the load balancer built without it.
    said = ("annotation alb.ingress.kubernetes.io/frontend-nlb-eip-alocations is not a known "
            "annotation (did you mean alb.ingress.kubernetes.io/frontend-nlb-eip-allocations?); "
            "it is ignored")
    plain = objects.ingress("plain", {"frontend-nlb-eip-alocations": "eipalloc-1"},
                            paths=[objects.ingress_path("/", "web")])
    result = await apply(hooks, plain)
    assert result.returncode == 0, result.stderr
    assert f"Warning: {said}" in result.stderr
    assert (await one_warning(cluster, "plain", "UnknownAnnotation"))["message"] == said

    async def deployed() -> bool:
        return bool(hostname(await cluster.get(INGRESSES, "plain")))

    await eventually(deployed, message="plain Ingress not deployed")
    assert len(await cluster.aws.load_balancers()) == 1
    # Told once, though the Ingress was reconciled and deployed again since.
    before = cluster.reconciles(METRIC_NAMES[INGRESS])
    await cluster.patch(INGRESSES, "plain", {"metadata": {"annotations": {
        A + "tags": "team=shop"}}})
    await cluster.settled()
    assert cluster.reconciles(METRIC_NAMES[INGRESS]) > before
    [event] = await warnings(cluster, "plain", "UnknownAnnotation")
    assert event.get("count", 1) == 1
    # Removing the refused key lets the first one deploy.
    await cluster.patch(INGRESSES, "early", {"metadata": {"annotations": {
        A + "wafv2-acl-arnn": None}}})

    async def early_deployed() -> bool:
        return bool(hostname(await cluster.get(INGRESSES, "early")))

    await eventually(early_deployed, message="early Ingress not deployed once fixed")


async def _managed_group(cluster: Cluster, name: str) -> dict[str, Any]:
    async def one() -> dict[str, Any] | None:
        groups = await cluster.aws.stack_security_groups(f"default/{name}", kind="service")
        return groups[0] if len(groups) == 1 else None
    group: dict[str, Any] = await eventually(one)
    return group


async def test_source_ranges_are_read_under_upstreams_key(cluster: Cluster) -> None:
    await cluster.nlb_service("narrow", {"load-balancer-source-ranges": "10.0.0.0/8"})
    await cluster.nlb_service("old", {"aws-load-balancer-source-ranges": "10.0.0.0/8"})
    await cluster.start_app()

    group = await _managed_group(cluster, "narrow")

    async def only_the_range() -> bool:
        return await cluster.aws.group_rules(group["GroupId"]) == {
            ("tcp", 80, 80, "10.0.0.0/8", "")}

    await eventually(only_the_range, message="the NLB does not admit just 10.0.0.0/8")

    # The old spelling: refused, told why, nothing created for it.
    text = (await one_warning(cluster, "old", "FailedBuildModel"))["message"]
    assert text.startswith("annotation service.beta.kubernetes.io/aws-load-balancer-source-"
                           "ranges is not read, and upstream has no such key: source ranges "
                           "are read from spec.loadBalancerSourceRanges, else "
                           "service.beta.kubernetes.io/load-balancer-source-ranges")
    svc = await cluster.get(SERVICES, "old")
    cond = condition(svc, CONDITION_TYPE)
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "UnsupportedAnnotation", text)
    await cluster.settled()
    assert len(await cluster.aws.load_balancers()) == 1
    assert await cluster.aws.stack_security_groups("default/old", kind="service") == []


async def test_a_typo_is_told_once_with_the_nearest_key_and_the_nlb_is_built(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    said = ("annotation service.beta.kubernetes.io/aws-load-balancer-healthcheck-intervall is "
            "not a known annotation (did you mean "
            "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval?); it is ignored")
    await cluster.start_app(on_setup=lambda m: hooks.setup(m, service_mutator=True))
    await hooks.install(configs=configurations())
    typo = objects.nlb_service("typo", {"aws-load-balancer-healthcheck-intervall": "30"},
                               namespace="default")
    result = await apply(hooks, typo)
    assert result.returncode == 0, result.stderr
    assert f"Warning: {said}" in result.stderr

    async def ready() -> Obj | None:
        svc = await cluster.get(SERVICES, "typo")
        cond = condition(svc, CONDITION_TYPE)
        return svc if hostname(svc) and cond is not None and cond["status"] == "True" else None

    svc = await eventually(ready, message="typo Service not deployed")
    cond = condition(svc, CONDITION_TYPE)
    assert cond is not None
    assert cond["message"] == f"load balancer provisioned; {said}"
    assert [e["message"] for e in await warnings(cluster, "typo", "UnknownAnnotation")] == [said]
    assert len(await cluster.aws.load_balancers()) == 1

    # A restarted controller verifies the Service and does not tell it again.
    await cluster.stop()
    await cluster.start_app()

    async def verified_again() -> bool:
        return cluster.reconciles(METRIC_NAMES[SERVICE]) > 0

    await eventually(verified_again, message="no verification ran")
    await cluster.settled()
    [event] = await warnings(cluster, "typo", "UnknownAnnotation")
    assert event.get("count", 1) == 1

