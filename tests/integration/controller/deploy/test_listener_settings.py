"""The deployer's mutual TLS and listener attributes: written with CreateListener and
ModifyListener / ModifyListenerAttributes, compared so that a second deploy changes nothing, a
trust store named by name looked up once, and "off" equal to nothing configured."""

from __future__ import annotations

from typing import Any

from controller.deploy import StackDeployer
from controller.model import (
    FixedResponseAction,
    Listener,
    LoadBalancer,
    MutualAuthentication,
    Stack,
    StackBuilder,
)
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn, sync_client
from tests.integration.controller.deploy.stacks import context

SERVER = "routing.http.response.server.enabled"


def _stack(seed: AwsSeed, mtls: MutualAuthentication | None,
           attributes: dict[str, str] | None = None) -> Stack:
    b = StackBuilder("default/mtls", kind="ingress", context=context(seed))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-default-mtls-0000000001", type="application", scheme="internet-facing",
        subnets=seed.public_subnets))
    b.add_listener("443", Listener(
        load_balancer_arn=lb, port=443, protocol="HTTPS", certificates=[seed.certificate_arn],
        mutual_authentication=mtls, attributes=attributes or {},
        default_actions=[FixedResponseAction(status_code="404")]))
    return b.build()


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


def _trust_store(moto: MotoStandIn, seed: AwsSeed, name: str) -> str:
    s3 = sync_client("s3", moto.url, region=seed.region)
    elbv2 = sync_client("elbv2", moto.url, region=seed.region)
    try:
        s3.create_bucket(Bucket=f"ca-{name}",
                         CreateBucketConfiguration={"LocationConstraint": seed.region})
        s3.put_object(Bucket=f"ca-{name}", Key="ca.pem",
                      Body=b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        return str(elbv2.create_trust_store(
            Name=name, CaCertificatesBundleS3Bucket=f"ca-{name}",
            CaCertificatesBundleS3Key="ca.pem")["TrustStores"][0]["TrustStoreArn"])
    finally:
        s3.close()
        elbv2.close()


async def test_mutual_tls_and_attributes_converge_once(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        moto_standin: MotoStandIn, elbv2: Any) -> None:
    arn = _trust_store(moto_standin, aws_seed, "deploy-clients")
    verify = MutualAuthentication(mode="verify", trust_store="deploy-clients",
                                  ignore_client_certificate_expiry=True)
    result = await deployer.deploy(_stack(aws_seed, verify, {SERVER: "false"}))
    listener = result.listeners["443"]
    [described] = elbv2.describe_listeners(ListenerArns=[listener])["Listeners"]
    assert described["MutualAuthentication"]["TrustStoreArn"] == arn
    assert described["MutualAuthentication"]["IgnoreClientCertificateExpiry"] is True
    attrs = {a["Key"]: a["Value"] for a in elbv2.describe_listener_attributes(
        ListenerArn=listener)["Attributes"]}
    assert attrs[SERVER] == "false"

    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, verify, {SERVER: "false"}))
    assert _mutations(aws_proxy) == []
    # The name was looked up once (cached by the resolve stage).
    assert not aws_proxy.records(operation="DescribeTrustStores")

    # Mode "off" equals what AWS says of a listener never configured: nothing to write after
    # the change, and no attribute is reset when the model stops naming it.
    await deployer.deploy(_stack(aws_seed, MutualAuthentication(mode="off")))
    assert _mutations(aws_proxy) == ["ModifyListener"]
    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, None))
    assert _mutations(aws_proxy) == []
    attrs = {a["Key"]: a["Value"] for a in elbv2.describe_listener_attributes(
        ListenerArn=listener)["Attributes"]}
    assert attrs[SERVER] == "false"
