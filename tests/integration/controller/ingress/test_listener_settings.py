"""Mutual TLS and listener attributes from Ingress annotations and IngressClassParams, against
the local API server and the moto stand-in: what AWS holds after create, update, removal and
delete; the EnhancedDefaultBehavior gate in both states; one message for what AWS refuses and
for members that disagree."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.apis import INGRESSCLASSPARAMS
from controller.config.featuregates import GATES
from controller.standins import AWSFaultProxy, MotoStandIn
from controller.standins.moto_server import sync_client
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.settings import ingress_settings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
SERVER = "routing.http.response.server.enabled"
FRAME = "routing.http.response.x_frame_options.header_value"


def _https(cert: str) -> dict[str, str]:
    return {A + "listen-ports": '[{"HTTPS": 443}]', A + "certificate-arn": cert,
            A + "target-type": "ip"}


def _trust_store(moto: MotoStandIn, region: str, name: str) -> str:
    s3 = sync_client("s3", moto.url, region=region)
    elbv2 = sync_client("elbv2", moto.url, region=region)
    try:
        bucket = f"bundles-{name}"
        s3.create_bucket(Bucket=bucket,
                         CreateBucketConfiguration={"LocationConstraint": region})
        s3.put_object(Bucket=bucket, Key="ca.pem",
                      Body=b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        store = elbv2.create_trust_store(Name=name, CaCertificatesBundleS3Bucket=bucket,
                                         CaCertificatesBundleS3Key="ca.pem")
        return str(store["TrustStores"][0]["TrustStoreArn"])
    finally:
        s3.close()
        elbv2.close()


async def _listener(c: Cluster, port: int) -> dict[str, Any] | None:
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    return (await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))).get(port)


async def _attributes(c: Cluster, port: int) -> dict[str, str] | None:
    listener = await _listener(c, port)
    if listener is None:
        return None
    resp = await c.aws.call("elbv2", "DescribeListenerAttributes",
                            ListenerArn=listener["ListenerArn"])
    return {a["Key"]: a["Value"] for a in resp["Attributes"]}


async def _mode(c: Cluster) -> dict[str, Any] | None:
    listener = await _listener(c, 443)
    return None if listener is None else listener.get("MutualAuthentication")


@pytest.mark.parametrize("enhanced", [False, True])
async def test_mutual_tls_by_trust_store_name_then_changed_then_removed(
        cluster: Cluster, moto_standin: MotoStandIn, enhanced: bool) -> None:
    c = cluster
    arn = _trust_store(moto_standin, c.seed.region, f"clients-{str(enhanced).lower()}")
    await c.ingress_class("alb")
    await c.backend("web")
    verify = json.dumps([{"port": 443, "mode": "verify", "trustStore": arn.split("/")[1]}])
    await c.ingress("shop", {**_https(c.seed.certificate_arn),
                             A + "mutual-authentication": verify},
                    paths=[ingress_path("/", "web")])
    gates = GATES.parse(f"EnhancedDefaultBehavior={str(enhanced).lower()}")
    await c.start(ingress=ingress_settings(c.seed, gates=gates))

    async def verifying() -> dict[str, Any] | None:
        mtls = await _mode(c)
        return mtls if mtls and mtls.get("Mode") == "verify" else None

    mtls = await eventually(verifying)
    assert mtls["TrustStoreArn"] == arn  # the name was looked up
    assert mtls["IgnoreClientCertificateExpiry"] is False
    assert mtls["AdvertiseTrustStoreCaNames"] == "off"
    first = await c.checkpoint(INGRESSES, "shop")

    await c.annotate(INGRESSES, "shop", {A + "mutual-authentication":
                                         '[{"Port": 443, "MODE": "passthrough"}]'})

    async def passthrough() -> bool:
        return (await _mode(c) or {}).get("Mode") == "passthrough"

    await eventually(passthrough)
    changed = await eventually(lambda: _new_checkpoint(c, first))

    await c.annotate(INGRESSES, "shop", {A + "mutual-authentication": None})
    await eventually(lambda: _new_checkpoint(c, changed))
    # Upstream's legacy behaviour keeps what AWS has; the gate turns mutual TLS off.
    assert (await _mode(c) or {}).get("Mode") == ("off" if enhanced else "passthrough")

    await c.delete(INGRESSES, "shop")

    async def no_load_balancer() -> bool:
        return not await c.aws.load_balancers()

    await eventually(no_load_balancer)


async def _new_checkpoint(c: Cluster, old: str) -> str | None:
    value = await c.checkpoint(INGRESSES, "shop")
    return value if value and value != old else None


async def test_a_trust_store_that_does_not_exist_is_one_message(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {**_https(c.seed.certificate_arn), A + "mutual-authentication":
                             '[{"port": 443, "mode": "verify", "trustStore": "nobody"}]'},
                    paths=[ingress_path("/", "web")])
    await c.start()

    async def told() -> list[str]:
        return [str(e.get("message")) for e in await c.events("shop", of=INGRESSES)
                if "no trust store named 'nobody'" in str(e.get("message"))]

    assert await eventually(told)
    assert await _listener(c, 443) is None  # no listener without the trust store


async def test_listener_attributes_class_params_win_and_only_differences_are_written(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.class_params("p", {"listeners": [{"protocol": "HTTPS", "port": 443,
                                              "listenerAttributes": [
                                                  {"key": SERVER, "value": "false"}]}]})
    await c.ingress_class("alb", params="p")
    await c.backend("web")
    await c.ingress("shop", {**_https(c.seed.certificate_arn),
                             A + "listener-attributes.HTTPS-443": f"{SERVER}=true,{FRAME}=DENY"},
                    paths=[ingress_path("/", "web")])
    await c.start()

    async def applied() -> dict[str, str] | None:
        attrs = await _attributes(c, 443)
        return attrs if attrs and attrs.get(FRAME) == "DENY" else None

    attrs = await eventually(applied)
    assert attrs[SERVER] == "false"  # IngressClassParams win over the annotation
    checkpoint = await eventually(lambda: c.checkpoint(INGRESSES, "shop"))
    modified = len(aws_proxy.records(operation="ModifyListenerAttributes"))

    await c.patch(INGRESSCLASSPARAMS, "p", {"spec": {"listeners": [
        {"protocol": "HTTPS", "port": 443, "listenerAttributes": [
            {"key": SERVER, "value": "false"}, {"key": FRAME, "value": "SAMEORIGIN"}]}]}})

    async def updated() -> bool:
        return (await _attributes(c, 443) or {}).get(FRAME) == "SAMEORIGIN"

    await eventually(updated)
    await eventually(lambda: _new_checkpoint(c, checkpoint))
    calls = aws_proxy.records(operation="ModifyListenerAttributes")[modified:]
    # One call, naming only the attribute that changed.
    assert len(calls) == 1


async def test_an_attribute_aws_refuses_is_one_message(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "target-type": "ip",
                             A + "listener-attributes.HTTP-80": "tcp.idle_timeout.seconds=60"},
                    paths=[ingress_path("/", "web")])
    await c.start()

    async def told() -> list[str]:
        return [str(e.get("message")) for e in await c.events("shop", of=INGRESSES)
                if e.get("reason") == "FailedDeployModel"
                and "InvalidConfigurationRequest" in str(e.get("message"))]

    [message, *_] = await eventually(told)
    assert "ModifyListenerAttributes" in message
    assert "tcp.idle_timeout.seconds" in message


async def test_a_member_that_disagrees_is_left_out_naming_both(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("a", {A + "group.name": "shared", A + "target-type": "ip",
                          A + "listener-attributes.HTTP-80": f"{FRAME}=DENY"},
                    paths=[ingress_path("/a", "web")])
    await c.start()

    async def applied() -> bool:
        return (await _attributes(c, 80) or {}).get(FRAME) == "DENY"

    await eventually(applied)
    # A newcomer that conflicts is left out (the group's rule for any conflict), told why.
    await c.ingress("b", {A + "group.name": "shared", A + "target-type": "ip",
                          A + "listener-attributes.HTTP-80": f"{FRAME}=SAMEORIGIN"},
                    paths=[ingress_path("/b", "web")])

    async def told() -> list[str]:
        return [str(e.get("message")) for e in await c.events("b", of=INGRESSES)
                if e.get("reason") == "ExcludedFromGroup"]

    [message, *_] = await eventually(told)
    assert ("listener-attributes.HTTP-80 conflicts within the group on attribute "
            f"{FRAME}: default/a has 'DENY', default/b has 'SAMEORIGIN'") in message
    assert (await _attributes(c, 80) or {}).get(FRAME) == "DENY"
