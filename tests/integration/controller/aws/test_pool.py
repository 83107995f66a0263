"""The client pool against moto, through the fault proxy."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from controller.aws import ELBV2, AWSClientPool, AWSError, AWSSettings, ThrottleConfig
from controller.standins import AWSFaultProxy, AwsSeed
from tests.support.loopback import serving


async def test_calls_reach_elbv2_ec2_and_acm(aws_pool: AWSClientPool, aws_seed: AwsSeed) -> None:
    subnets = await aws_pool.call("ec2", "DescribeSubnets",
                                  Filters=[{"Name": "vpc-id", "Values": [aws_seed.vpc_id]}])
    assert {s["SubnetId"] for s in subnets["Subnets"]} == {
        *aws_seed.public_subnets, *aws_seed.private_subnets, *aws_seed.pod_subnets}
    certs = await aws_pool.call("acm", "ListCertificates")
    assert [c["CertificateArn"] for c in certs["CertificateSummaryList"]] == [
        aws_seed.certificate_arn]
    created = await aws_pool.call(
        "elbv2", "CreateLoadBalancer", Name="k8s-demo", Type="application",
        Subnets=list(aws_seed.public_subnets))
    arn = created["LoadBalancers"][0]["LoadBalancerArn"]
    found = await aws_pool.call("elbv2", "DescribeLoadBalancers", Names=["k8s-demo"])
    assert [lb["LoadBalancerArn"] for lb in found["LoadBalancers"]] == [arn]


async def test_clients_are_created_lazily_and_shared(aws_pool: AWSClientPool) -> None:
    assert aws_pool.open_clients == ()
    await asyncio.gather(*(aws_pool.call("elbv2", "DescribeLoadBalancers") for _ in range(10)),
                         *(aws_pool.call("ec2", "DescribeSubnets") for _ in range(5)))
    assert sorted(aws_pool.open_clients) == [("ec2", "us-west-2"), ("elbv2", "us-west-2")]
    first = await aws_pool.raw_client("elbv2")
    assert await aws_pool.raw_client("elbv2") is first
    assert await aws_pool.raw_client("elbv2", region="us-east-1") is not first
    assert len(aws_pool.open_clients) == 3


async def test_warm_creates_the_clients_ahead_without_calling_aws(
        aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy) -> None:
    aws_proxy.clear_log()
    await aws_pool.warm()
    assert sorted(aws_pool.open_clients) == [("ec2", "us-west-2"), ("elbv2", "us-west-2")]
    assert aws_proxy.log == []
    warmed = await aws_pool.raw_client("elbv2")
    await aws_pool.call("elbv2", "DescribeLoadBalancers")
    assert await aws_pool.raw_client("elbv2") is warmed  # the call used it
    await aws_pool.warm(["no-such-service"])  # left to a call to report
    assert len(aws_pool.open_clients) == 2


async def test_injected_throttling_is_retried_and_counted(
        aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_registry: CollectorRegistry) -> None:
    aws_proxy.inject("Throttling", operation="Describe.*", service="elbv2", rate=0.3)
    results = await asyncio.gather(
        *(aws_pool.call("elbv2", "DescribeLoadBalancers") for _ in range(40)))
    assert all("LoadBalancers" in r for r in results)
    throttled = [r for r in aws_proxy.log if r.outcome == "Throttling"]
    assert 4 <= len(throttled) <= 30
    labels = {"service": ELBV2, "operation": "DescribeLoadBalancers"}
    assert aws_registry.get_sample_value("aws_api_call_retries_count", labels) == 40
    assert aws_registry.get_sample_value("aws_api_call_retries_sum", labels) == len(throttled)
    assert sum(r["ResponseMetadata"]["RetryAttempts"] for r in results) == len(throttled)
    assert aws_registry.get_sample_value("aws_api_calls_total", {
        **labels, "status_code": "200", "error_code": ""}) == 40
    assert aws_registry.get_sample_value("aws_api_requests_total", {
        **labels, "status_code": "400", "error_code": "Throttling"}) == len(throttled)
    assert aws_registry.get_sample_value("aws_api_requests_total", {
        **labels, "status_code": "200", "error_code": ""}) == 40


async def test_a_non_retryable_error_surfaces_as_aws_error(
        aws_pool: AWSClientPool, aws_registry: CollectorRegistry) -> None:
    with pytest.raises(AWSError) as excinfo:
        await aws_pool.call("elbv2", "DescribeLoadBalancers", Names=["missing"])
    error = excinfo.value
    assert error.code == "LoadBalancerNotFound"
    assert error.is_not_found
    assert not error.is_throttling
    assert error.status == 400
    assert error.operation == "DescribeLoadBalancers"
    assert "does not exist" in error.message
    assert aws_registry.get_sample_value("aws_api_calls_total", {
        "service": ELBV2, "operation": "DescribeLoadBalancers", "status_code": "400",
        "error_code": "LoadBalancerNotFound"}) == 1


async def test_retries_give_up_after_max_retries(
        aws_proxy: AWSFaultProxy, no_retry_backoff: None) -> None:
    registry = CollectorRegistry()
    settings = AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url, max_retries=2)
    async with AWSClientPool(settings, registry=registry) as pool:
        aws_proxy.inject("ServiceUnavailable", operation="DescribeSubnets")
        with pytest.raises(AWSError) as excinfo:
            await pool.call("ec2", "DescribeSubnets")
    assert excinfo.value.code == "ServiceUnavailable"
    assert excinfo.value.status == 503
    assert excinfo.value.retry_attempts == 2
    assert len(aws_proxy.records(operation="DescribeSubnets")) == 3
    assert registry.get_sample_value("aws_api_call_retries_sum", {
        "service": "EC2", "operation": "DescribeSubnets"}) == 2


async def test_metrics_carry_upstream_names_and_labels(
        aws_pool: AWSClientPool, aws_registry: CollectorRegistry, aws_seed: AwsSeed) -> None:
    await aws_pool.call("acm", "DescribeCertificate", CertificateArn=aws_seed.certificate_arn)
    labels = {"service": "ACM", "operation": "DescribeCertificate"}
    assert aws_registry.get_sample_value("aws_api_calls_total", {
        **labels, "status_code": "200", "error_code": ""}) == 1
    assert aws_registry.get_sample_value("aws_api_call_duration_seconds_count", labels) == 1
    duration = aws_registry.get_sample_value("aws_api_call_duration_seconds_sum", labels)
    assert duration is not None
    assert 0 < duration < 5
    assert aws_registry.get_sample_value("aws_api_call_retries_count", labels) == 1
    assert aws_registry.get_sample_value("aws_api_throttle_wait_seconds_count", labels) == 1
    assert aws_registry.get_sample_value("aws_api_requests_total", {
        **labels, "status_code": "200", "error_code": ""}) == 1


async def test_paginate_charges_and_counts_every_page(
        aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy, aws_registry: CollectorRegistry,
        aws_seed: AwsSeed) -> None:
    for index in range(7):
        await aws_pool.call("elbv2", "CreateLoadBalancer", Name=f"lb-{index}",
                            Subnets=list(aws_seed.public_subnets))
    aws_proxy.clear_log()
    pages = [page async for page in aws_pool.paginate(
        "elbv2", "DescribeLoadBalancers", PageSize=3)]
    assert [len(p["LoadBalancers"]) for p in pages] == [3, 3, 1]
    names = {lb["LoadBalancerName"] for p in pages for lb in p["LoadBalancers"]}
    assert names == {f"lb-{i}" for i in range(7)}
    assert len(aws_proxy.records(operation="DescribeLoadBalancers")) == 3
    assert aws_registry.get_sample_value("aws_api_throttle_wait_seconds_count", {
        "service": ELBV2, "operation": "DescribeLoadBalancers"}) == 3


async def test_unknown_or_unpageable_operations_are_rejected(aws_pool: AWSClientPool) -> None:
    with pytest.raises(ValueError, match="elbv2 has no operation 'describe_load_balancers'"):
        await aws_pool.call("elbv2", "describe_load_balancers")
    with pytest.raises(ValueError, match="CreateLoadBalancer cannot be paginated"):
        async for _ in aws_pool.paginate("elbv2", "CreateLoadBalancer"):
            pass


async def test_concurrency_per_service_is_bounded(aws_proxy: AWSFaultProxy) -> None:
    settings = AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url,
                           throttle=ThrottleConfig(), max_concurrency_per_service=3)
    aws_proxy.inject(latency=0.05, operation="DescribeSubnets")
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        await asyncio.gather(*(pool.call("ec2", "DescribeSubnets") for _ in range(12)))
    assert len(aws_proxy.records(operation="DescribeSubnets")) == 12
    assert aws_proxy.max_in_flight == 3


async def test_closed_pool_refuses_calls(aws_proxy: AWSFaultProxy) -> None:
    pool = AWSClientPool(AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url),
                         registry=CollectorRegistry())
    await pool.call("elbv2", "DescribeLoadBalancers")
    await pool.close()
    assert pool.open_clients == ()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.call("elbv2", "DescribeLoadBalancers")


async def test_a_transport_failure_surfaces_as_an_aws_error(no_retry_backoff: None) -> None:
    # Nothing listens on this port: botocore gives up with a connection error, which callers
    # must see as an expected AWS failure (retried with backoff), not as a bug of theirs.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = AWSSettings(region="us-west-2", endpoint_url=f"http://127.0.0.1:{port}",
                           access_key="testing", secret_key="testing", max_retries=0)
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        with pytest.raises(AWSError) as info:
            await pool.call("elbv2", "DescribeLoadBalancers")
    assert info.value.code == "EndpointConnectionError"
    assert info.value.operation == "DescribeLoadBalancers"


async def test_an_html_error_page_surfaces_as_an_aws_error(no_retry_backoff: None) -> None:
    # A front end answering 500 with an HTML page: botocore cannot parse it (its parse error
    # is not a BotoCoreError), and callers must still see an expected AWS failure.
    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500, content_type="text/html",
                            text="<!doctype html>\n<title>500 Internal Server Error</title>")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", broken)
    async with serving(app) as url:
        settings = AWSSettings(region="us-west-2", endpoint_url=url, access_key="testing",
                               secret_key="testing", max_retries=0)
        async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
            with pytest.raises(AWSError) as info:
                await pool.call("elbv2", "DescribeLoadBalancers")
    assert info.value.code == "ResponseParserError"
    assert info.value.operation == "DescribeLoadBalancers"

