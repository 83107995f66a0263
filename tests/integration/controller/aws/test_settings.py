"""Endpoint and credential settings: the parser's messages, and where calls really go."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSConfigError, AWSSettings, parse_endpoints
from controller.standins import AWSFaultProxy


def test_parse_endpoints_accepts_client_names_and_upstream_ids() -> None:
    assert parse_endpoints("") == {}
    assert parse_endpoints(
        "ec2=http://127.0.0.1:5000, elasticloadbalancing=https://elb.example.com,"
        "acm=http://localhost:1/") == {
            "ec2": "http://127.0.0.1:5000", "elbv2": "https://elb.example.com",
            "acm": "http://localhost:1/"}
    # upstream's own keys, the AWS SDK's service IDs
    assert parse_endpoints("EC2=http://e,Elastic Load Balancing v2=http://l,WAFV2=http://w") == {
        "ec2": "http://e", "elbv2": "http://l", "wafv2": "http://w"}


@pytest.mark.parametrize(("text", "message"), [
    ("ec2", "invalid --aws-api-endpoints entry 'ec2': missing '=' (expected svc=URL)"),
    ("ec2=ftp://x", "invalid --aws-api-endpoints entry 'ec2=ftp://x': 'ftp://x' is not an "
                    "http(s) URL with a host"),
    ("ec2=http://", "'http://' is not an http(s) URL with a host"),
    ("ec2=http://h:99999", "'http://h:99999' has an invalid port"),
    ("EC2 x=http://h", "'EC2 x' is not a service name"),
    # a name AWS has no service for would be accepted and never used
    ("elbv3=http://h", "'elbv3' is not a service name the controller calls (one of acm, "),
    ("s3=http://h", "'s3' is not a service name the controller calls"),
    ("ec2=http://a,ec2=http://b", "'ec2' is given twice"),
    ("ec2=http://a,,acm=http://b", "empty entry"),
])
def test_parse_endpoints_errors_name_the_bad_part(text: str, message: str) -> None:
    with pytest.raises(AWSConfigError) as excinfo:
        parse_endpoints(text)
    assert message in str(excinfo.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"region": ""}, "invalid AWS region ''"),
    ({"region": "us-west-2", "endpoint_url": "127.0.0.1:4566"},
     "invalid AWS endpoint URL: '127.0.0.1:4566' is not an http(s) URL"),
    ({"region": "us-west-2", "max_retries": -1}, "--aws-max-retries must be >= 0, got -1"),
    ({"region": "us-west-2", "max_concurrency_per_service": 0}, "must be >= 1, got 0"),
    ({"region": "us-west-2", "access_key": "a"}, "must be given together"),
])
def test_settings_validate(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(AWSConfigError) as excinfo:
        AWSSettings(**kwargs)  # type: ignore[arg-type]
    assert message in str(excinfo.value)


async def test_per_service_endpoint_overrides_the_default_one(aws_proxy: AWSFaultProxy) -> None:
    settings = AWSSettings(region="us-west-2", endpoint_url="http://127.0.0.1:9",
                           endpoints=parse_endpoints(f"elasticloadbalancing={aws_proxy.url}"))
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        await pool.call("elbv2", "DescribeLoadBalancers")
    assert [(r.service, r.operation) for r in aws_proxy.log] == [
        ("elbv2", "DescribeLoadBalancers")]


async def test_aws_endpoint_url_variable_and_dummy_credentials_for_loopback(
        aws_proxy: AWSFaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_proxy.url)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    settings = AWSSettings(region="us-west-2")
    assert settings.credentials_for("acm") == ("testing", "testing")
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        await pool.call("acm", "ListCertificates")
    assert [(r.service, r.operation, r.outcome) for r in aws_proxy.log] == [
        ("acm", "ListCertificates", "ok")]


def test_no_dummy_credentials_for_remote_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    settings = AWSSettings(region="us-west-2", endpoint_url="https://elb.example.com")
    assert settings.credentials_for("elbv2") is None
    explicit = AWSSettings(region="us-west-2", access_key="k", secret_key="s")
    assert explicit.credentials_for("elbv2") == ("k", "s")
