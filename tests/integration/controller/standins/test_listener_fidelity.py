"""The stand-in's listener attributes, mutual TLS and trust stores answer as AWS's ELBv2 API
reference describes (moto alone has no trust stores, ignores MutualAuthentication and takes
any listener attribute)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed, MotoStandIn
from controller.standins.moto_server import sync_client

FIXED = [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}]


@pytest.fixture
def s3(moto_standin: MotoStandIn, aws_seed: AwsSeed) -> Iterator[Any]:
    client = sync_client("s3", moto_standin.url, region=aws_seed.region)
    yield client
    client.close()


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return str(caught.value.response["Error"]["Code"])


def _trust_store(elbv2: Any, s3: Any, region: str, name: str) -> str:
    s3.create_bucket(Bucket=f"ca-{name}", CreateBucketConfiguration={"LocationConstraint": region})
    s3.put_object(Bucket=f"ca-{name}", Key="ca.pem",
                  Body=b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    return str(elbv2.create_trust_store(
        Name=name, CaCertificatesBundleS3Bucket=f"ca-{name}",
        CaCertificatesBundleS3Key="ca.pem")["TrustStores"][0]["TrustStoreArn"])


def _load_balancer(elbv2: Any, seed: AwsSeed, name: str) -> str:
    return str(elbv2.create_load_balancer(Name=name, Subnets=list(seed.public_subnets))[
        "LoadBalancers"][0]["LoadBalancerArn"])


def test_trust_stores_by_name_and_arn(elbv2: Any, s3: Any, aws_seed: AwsSeed) -> None:
    arn = _trust_store(elbv2, s3, aws_seed.region, "clients")
    [found] = elbv2.describe_trust_stores(Names=["clients"])["TrustStores"]
    assert (found["TrustStoreArn"], found["Status"], found["NumberOfCaCertificates"]) == (
        arn, "ACTIVE", 1)
    assert elbv2.describe_trust_stores(TrustStoreArns=[arn])["TrustStores"] == [found]
    with pytest.raises(ClientError) as caught:
        elbv2.describe_trust_stores(Names=["clients", "nobody"])
    assert _code(caught) == "TrustStoreNotFound"
    with pytest.raises(ClientError) as caught:
        elbv2.create_trust_store(Name="x", CaCertificatesBundleS3Bucket="ca-clients",
                                 CaCertificatesBundleS3Key="missing.pem")
    assert _code(caught) == "CaCertificatesBundleNotFound"


def test_mutual_tls_on_https_listeners(elbv2: Any, s3: Any, aws_seed: AwsSeed) -> None:
    store = _trust_store(elbv2, s3, aws_seed.region, "mtls")
    lb = _load_balancer(elbv2, aws_seed, "mtls")
    https = elbv2.create_listener(
        LoadBalancerArn=lb, Protocol="HTTPS", Port=443, DefaultActions=FIXED,
        Certificates=[{"CertificateArn": aws_seed.certificate_arn}])["Listeners"][0]
    assert https["MutualAuthentication"] == {"Mode": "off"}
    arn = https["ListenerArn"]
    elbv2.modify_listener(ListenerArn=arn, MutualAuthentication={
        "Mode": "verify", "TrustStoreArn": store, "AdvertiseTrustStoreCaNames": "on"})
    [described] = elbv2.describe_listeners(ListenerArns=[arn])["Listeners"]
    assert described["MutualAuthentication"] == {
        "Mode": "verify", "TrustStoreArn": store, "IgnoreClientCertificateExpiry": False,
        "TrustStoreAssociationStatus": "active", "AdvertiseTrustStoreCaNames": "on"}
    # A modification that does not name it keeps it.
    elbv2.modify_listener(ListenerArn=arn, DefaultActions=FIXED)
    [described] = elbv2.describe_listeners(ListenerArns=[arn])["Listeners"]
    assert described["MutualAuthentication"]["Mode"] == "verify"
    with pytest.raises(ClientError) as caught:
        elbv2.delete_trust_store(TrustStoreArn=store)
    assert _code(caught) == "TrustStoreInUse"
    for bad, code in (({"Mode": "verify"}, "InvalidConfigurationRequest"),
                      ({"Mode": "verify", "TrustStoreArn": store + "x"}, "TrustStoreNotFound"),
                      ({"Mode": "off", "TrustStoreArn": store}, "InvalidConfigurationRequest")):
        with pytest.raises(ClientError) as caught:
            elbv2.modify_listener(ListenerArn=arn, MutualAuthentication=bad)
        assert _code(caught) == code, bad
    http = elbv2.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80,
                                 DefaultActions=FIXED)["Listeners"][0]
    assert "MutualAuthentication" not in http
    with pytest.raises(ClientError) as caught:
        elbv2.modify_listener(ListenerArn=http["ListenerArn"],
                              MutualAuthentication={"Mode": "passthrough"})
    assert _code(caught) == "InvalidConfigurationRequest"
    elbv2.modify_listener(ListenerArn=arn, MutualAuthentication={"Mode": "off"})
    elbv2.delete_trust_store(TrustStoreArn=store)


def test_listener_attributes_per_protocol(elbv2: Any, aws_seed: AwsSeed) -> None:
    lb = _load_balancer(elbv2, aws_seed, "attrs")
    http = elbv2.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80,
                                 DefaultActions=FIXED)["Listeners"][0]["ListenerArn"]
    have = {a["Key"]: a["Value"] for a in elbv2.describe_listener_attributes(
        ListenerArn=http)["Attributes"]}
    assert have["routing.http.response.server.enabled"] == "true"
    assert "tcp.idle_timeout.seconds" not in have
    assert not any(k.startswith("routing.http.request.") for k in have)  # HTTPS only
    for key, value in (("tcp.idle_timeout.seconds", "60"),
                       ("routing.http.response.server.enabled", "maybe"),
                       ("no.such.key", "1")):
        with pytest.raises(ClientError) as caught:
            elbv2.modify_listener_attributes(ListenerArn=http,
                                             Attributes=[{"Key": key, "Value": value}])
        assert _code(caught) == "InvalidConfigurationRequest"
    changed = elbv2.modify_listener_attributes(ListenerArn=http, Attributes=[
        {"Key": "routing.http.response.server.enabled", "Value": "false"}])["Attributes"]
    assert {"Key": "routing.http.response.server.enabled", "Value": "false"} in changed
    with pytest.raises(ClientError) as caught:
        elbv2.describe_listener_attributes(ListenerArn=http + "x")
    assert _code(caught) == "ListenerNotFound"
