"""What a running controller's /metrics says, with upstream's names, labels and meanings:
`aws_api_call_*_errors_total` by why a call failed, `aws_target_group_info` per binding, and
`aiolbc_build_info` with the version."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller import app
from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.standins import AWSFaultProxy, AwsSeed
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.waiting import eventually

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        yield c


async def _scrape(url: str) -> Samples:
    async with aiohttp.ClientSession() as http, http.get(url + "/metrics") as answer:
        assert answer.status == 200
        text = await answer.text()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _sum(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items()
               if n == name and set(labels.items()) <= set(ls))


async def test_upstreams_families_on_a_running_controllers_metrics(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1"])
    await cluster.binding("web", service="web", arn=arn)
    # Each kind of failure once, on the calls the binding makes.
    aws_proxy.inject("AccessDenied", operation="DescribeTargetGroups", status=403, count=1)
    aws_proxy.inject("ValidationError", operation="DescribeTargetHealth", status=400, count=1)
    aws_proxy.inject("TargetGroupAssociationLimit", operation="RegisterTargets", status=400,
                     count=1)
    run = await cluster.run("--metrics-bind-addr=127.0.0.1:0", "--aws-max-retries=0",
                            through_proxy=True)
    try:
        assert run.manager is not None

        async def registered() -> bool:
            return await cluster.aws.registered(arn) == {("10.0.1.1", 8080)}

        await eventually(registered, timeout=60)
        await run.settled()
        samples = await _scrape(run.manager.metrics_server.url)
    finally:
        await run.kill()

    elbv2 = "Elastic Load Balancing v2"
    assert _sum(samples, "aws_api_call_permission_errors_total", service=elbv2,
                operation="DescribeTargetGroups", status_code="403",
                error_code="AccessDenied") == 1
    assert _sum(samples, "aws_api_call_validation_errors_total", service=elbv2,
                operation="DescribeTargetHealth", error_code="ValidationError") == 1
    # Not a "LimitExceeded" code, not a throttle: counted in aws_api_calls_total only.
    assert _sum(samples, "aws_api_call_service_limit_exceeded_errors_total") == 0
    assert _sum(samples, "aws_api_calls_total", operation="RegisterTargets",
                error_code="TargetGroupAssociationLimit") == 1
    assert _sum(samples, "aws_api_call_throttled_errors_total") == 0
    dimension = arn[arn.rfind(":") + 1:]
    assert dimension.startswith("targetgroup/web-tg/")
    assert samples[("aws_target_group_info", frozenset({
        ("namespace", cluster.namespace), ("service", "web"),
        ("target_group", dimension)}))] == 1
    assert samples[("aiolbc_build_info", frozenset({("version", app.version())}))] == 1
    # upstream's awslbc_ families: the binding in the cache, no reconcile error reported
    # (the failed calls were retried by requeues, not reported as Warnings)
    assert samples[("awslbc_controller_cache_object_total",
                    frozenset({("resource", "targetgroupbinding")}))] == 1
    assert samples[("awslbc_controller_cache_object_total",
                    frozenset({("resource", "service")}))] == 1
    # upstream's stage latencies: the binding's reconciles were timed
    assert _sum(samples, "awslbc_controller_reconcile_stage_duration_count",
                controller="targetGroupBinding",
                reconcile_stage="reconcile_targetgroupbinding") >= 1


async def test_throttling_and_limits_are_told_apart(cluster: Cluster,
                                                    aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1"])
    await cluster.binding("web", service="web", arn=arn)
    aws_proxy.inject("Throttling", operation="DescribeTargetGroups", status=400, count=1)
    aws_proxy.inject("RequestLimitExceeded", operation="DescribeTargetHealth", status=400,
                     count=1)
    run = await cluster.run("--metrics-bind-addr=127.0.0.1:0", "--aws-max-retries=0",
                            through_proxy=True)
    try:
        assert run.manager is not None

        async def registered() -> bool:
            return await cluster.aws.registered(arn) == {("10.0.1.1", 8080)}

        await eventually(registered, timeout=60)
        await run.settled()
        samples = await _scrape(run.manager.metrics_server.url)
        # The binding goes: its info goes with it.
        await cluster.client.delete(TARGETGROUPBINDINGS, "web", cluster.namespace)
        await run.settled()
        after = await _scrape(run.manager.metrics_server.url)
    finally:
        await run.kill()
    assert _sum(samples, "aws_api_call_throttled_errors_total",
                operation="DescribeTargetGroups", error_code="Throttling") == 1
    # upstream checks "LimitExceeded" before the throttle codes
    assert _sum(samples, "aws_api_call_service_limit_exceeded_errors_total",
                operation="DescribeTargetHealth", error_code="RequestLimitExceeded") == 1
    assert _sum(samples, "aws_target_group_info") == 1
    assert _sum(after, "aws_target_group_info") == 0


async def test_reconcile_errors_by_category(cluster: Cluster) -> None:
    """awslbc_controller_reconcile_errors_total counts each failure a reconciler reports, by
    the reason it is reported with."""
    await cluster.service("web")
    await cluster.binding("web", service="web", arn="arn:aws:elasticloadbalancing:us-west-2:"
                          "123456789012:targetgroup/absent/0123456789abcdef")
    run = await cluster.run("--metrics-bind-addr=127.0.0.1:0")
    try:
        assert run.manager is not None

        async def counted() -> bool:
            assert run.manager is not None
            try:
                url = run.manager.metrics_server.url
            except RuntimeError:  # not serving yet
                return False
            samples = await _scrape(url)
            return _sum(samples, "awslbc_controller_reconcile_errors_total",
                        controller="targetGroupBinding") >= 1

        await eventually(counted, timeout=60)
        samples = await _scrape(run.manager.metrics_server.url)
    finally:
        await run.kill()
    reasons = {dict(ls)["error_category"] for (n, ls) in samples
               if n == "awslbc_controller_reconcile_errors_total"}
    events = {e["reason"] for e in await cluster.events("web", of=TARGETGROUPBINDINGS)
              if e["type"] == "Warning"}
    assert reasons
    assert reasons <= events
