"""Single features of the deployer: certificates, subnets and security groups, adoption after a
lost answer, ownership conflicts, OIDC actions, rule edits, the resolve stage's checks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.aws import AWSClientPool
from controller.deploy import (
    DeployerSettings,
    OwnershipConflict,
    ResolveError,
    ResolverSettings,
    StackDeployer,
    StackResolver,
    resource_tag,
    stack_tag,
)
from controller.deploy.tags import CLUSTER_TAG
from controller.model import (
    AuthenticateOidcAction,
    CertificateDiscovery,
    FixedResponseAction,
    ForwardAction,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    Stack,
    StackBuilder,
    SubnetSelector,
    TargetGroup,
    WeightedTargetGroup,
)
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn, sync_client
from tests.integration.controller.deploy.stacks import (
    CLUSTER,
    alb_stack,
    assert_no_duplicates,
    context,
    inventory,
)


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


def _small_alb(seed: AwsSeed, *, subnets: Any = None, certificates: Any = None,
               security_groups: tuple[str, ...] = (), ip_address_type: str = "ipv4",
               rule_path: str = "/app/*", oidc: bool = False,
               secret: str = "secret") -> Stack:
    b = StackBuilder("default/small", kind="ingress", context=context(seed))
    tg = b.add_target_group("default/small:80", TargetGroup(
        name="k8s-default-small-0000000001", protocol="HTTP", port=80, target_type="ip"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-default-small-0000000002", type="application", scheme="internet-facing",
        subnets=subnets if subnets is not None else seed.public_subnets,
        security_groups=security_groups, ip_address_type=ip_address_type,  # type: ignore[arg-type]
    ))
    https = b.add_listener("443", Listener(
        load_balancer_arn=lb, port=443, protocol="HTTPS",
        certificates=certificates if certificates is not None else [seed.certificate_arn],
        default_actions=[FixedResponseAction(status_code="404")]))
    actions: list[Any] = [ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tg)])]
    if oidc:
        actions.insert(0, AuthenticateOidcAction(
            issuer="https://idp.example.com", authorization_endpoint="https://idp.example.com/a",
            token_endpoint="https://idp.example.com/t",
            user_info_endpoint="https://idp.example.com/u", client_id="client",
            client_secret=secret))
    b.add_rule("443:1", ListenerRule(listener_arn=https, priority=1, actions=actions,
                                     conditions=[PathPatternCondition(values=[rule_path])]))
    return b.build()


async def test_sni_certificates_are_added_and_removed(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any,
        acm: Any) -> None:
    other = acm.request_certificate(DomainName="*.other.com",
                                    ValidationMethod="DNS")["CertificateArn"]
    result = await deployer.deploy(_small_alb(aws_seed,
                                              certificates=[aws_seed.certificate_arn, other]))
    listener = result.listeners["443"]

    def certs() -> dict[str, bool]:
        return {c["CertificateArn"]: c.get("IsDefault", False) for c in
                elbv2.describe_listener_certificates(ListenerArn=listener)["Certificates"]}

    assert certs() == {aws_seed.certificate_arn: True, other: False}
    aws_proxy.clear_log()
    await deployer.deploy(_small_alb(aws_seed, certificates=[aws_seed.certificate_arn, other]))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_small_alb(aws_seed))
    assert _mutations(aws_proxy) == ["RemoveListenerCertificates"]
    assert certs() == {aws_seed.certificate_arn: True}


async def test_certificate_discovery_by_host(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    # moto leaves requested certificates PENDING_VALIDATION; real discovery wants ISSUED.
    resolver = StackResolver(ResolverSettings(
        certificate_statuses=("ISSUED", "PENDING_VALIDATION")))
    deployer = StackDeployer(aws_pool, deployer_settings, resolver=resolver)
    result = await deployer.deploy(_small_alb(
        aws_seed, certificates=CertificateDiscovery(hosts=["Shop.Example.com"])))
    (listener,) = elbv2.describe_listeners(ListenerArns=[result.listeners["443"]])["Listeners"]
    assert listener["Certificates"][0]["CertificateArn"] == aws_seed.certificate_arn

    with pytest.raises(ResolveError, match=r"no ACM certificate covers host 'a\.b\.example\.com'"):
        await deployer.deploy(_small_alb(
            aws_seed, certificates=CertificateDiscovery(hosts=["a.b.example.com"])))


def _private_ca(moto_standin: MotoStandIn, aws_seed: AwsSeed, name: str) -> str:
    pca = sync_client("acm-pca", moto_standin.url, region=aws_seed.region)
    try:
        return str(pca.create_certificate_authority(
            CertificateAuthorityConfiguration={
                "KeyAlgorithm": "RSA_2048", "SigningAlgorithm": "SHA256WITHRSA",
                "Subject": {"CommonName": name}},
            CertificateAuthorityType="ROOT")["CertificateAuthorityArn"])
    finally:
        pca.close()


async def test_certificate_discovery_keeps_to_the_allowed_authorities(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings, aws_seed: AwsSeed,
        moto_standin: MotoStandIn, acm: Any, elbv2: Any) -> None:
    """--allowed-certificate-authority-arns, as upstream: only certificates a listed private CA
    issued are discovered; the Amazon-issued one covering the same host is passed over."""
    resolver = StackResolver(ResolverSettings(
        certificate_statuses=("ISSUED", "PENDING_VALIDATION")))
    deployer = StackDeployer(aws_pool, deployer_settings, resolver=resolver)
    allowed = _private_ca(moto_standin, aws_seed, "allowed")
    other = _private_ca(moto_standin, aws_seed, "other")
    private = acm.request_certificate(DomainName="shop.example.com",
                                      CertificateAuthorityArn=allowed)["CertificateArn"]
    result = await deployer.deploy(_small_alb(aws_seed, certificates=CertificateDiscovery(
        hosts=["shop.example.com"], authorities=[allowed])))
    (listener,) = elbv2.describe_listeners(ListenerArns=[result.listeners["443"]])["Listeners"]
    assert [c["CertificateArn"] for c in listener["Certificates"]] == [private]

    # Nothing an allowed CA issued covers the host: an error naming them, nothing changed.
    with pytest.raises(ResolveError, match=(
            r"no ACM certificate issued by an allowed certificate authority "
            rf"\({re.escape(other)}\) covers host 'shop\.example\.com'")):
        await deployer.deploy(_small_alb(aws_seed, certificates=CertificateDiscovery(
            hosts=["shop.example.com"], authorities=[other])))
    (listener,) = elbv2.describe_listeners(ListenerArns=[result.listeners["443"]])["Listeners"]
    assert [c["CertificateArn"] for c in listener["Certificates"]] == [private]


async def test_alb_in_one_zone_is_refused_before_any_change(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    with pytest.raises(ResolveError, match="at least two availability zones, got 1"):
        await deployer.deploy(_small_alb(aws_seed, subnets=aws_seed.public_subnets[:1]))
    assert _mutations(aws_proxy) == []
    assert elbv2.describe_load_balancers()["LoadBalancers"] == []


async def test_subnets_security_groups_and_ip_address_type_follow_the_model(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any,
        ec2: Any) -> None:
    sg = ec2.create_security_group(GroupName="lb", Description="lb",
                                   VpcId=aws_seed.vpc_id)["GroupId"]
    result = await deployer.deploy(_small_alb(aws_seed))
    assert result.load_balancer is not None
    aws_proxy.clear_log()
    changed = _small_alb(aws_seed, subnets=aws_seed.private_subnets, security_groups=(sg,),
                         ip_address_type="dualstack")
    await deployer.deploy(changed)
    assert sorted(_mutations(aws_proxy)) == ["SetIpAddressType", "SetSecurityGroups",
                                             "SetSubnets"]
    (lb,) = elbv2.describe_load_balancers(
        LoadBalancerArns=[result.load_balancer.arn])["LoadBalancers"]
    assert {az["SubnetId"] for az in lb["AvailabilityZones"]} == set(aws_seed.private_subnets)
    assert lb["SecurityGroups"] == [sg]
    assert lb["IpAddressType"] == "dualstack"
    aws_proxy.clear_log()
    await deployer.deploy(changed)
    assert _mutations(aws_proxy) == []


async def test_rule_edit_and_write_only_secrets(
        deployer: StackDeployer, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    await deployer.deploy(_small_alb(aws_seed))
    aws_proxy.clear_log()
    # Nothing write-only anywhere: asking for rewrites changes nothing.
    await deployer.deploy(_small_alb(aws_seed), rewrite_write_only=True)
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_small_alb(aws_seed, rule_path="/other/*", oidc=True),
                          rewrite_write_only=False)
    assert _mutations(aws_proxy) == ["ModifyRule"]
    aws_proxy.clear_log()
    await deployer.deploy(_small_alb(aws_seed, rule_path="/other/*", oidc=True),
                          rewrite_write_only=False)
    assert _mutations(aws_proxy) == []
    # AWS never shows the secret, and nothing is remembered between deploys: a caller whose
    # checkpoint did not match asks for the rewrite, and only the rule carrying it is written,
    # by this deployer or a new one (a restarted process).
    rotated = _small_alb(aws_seed, rule_path="/other/*", oidc=True, secret="rotated")
    await deployer.deploy(rotated, rewrite_write_only=False)
    assert _mutations(aws_proxy) == []
    await StackDeployer(aws_pool, deployer_settings).deploy(rotated)
    assert _mutations(aws_proxy) == ["ModifyRule"]
    aws_proxy.clear_log()
    await StackDeployer(aws_pool, deployer_settings).deploy(rotated, rewrite_write_only=False)
    assert _mutations(aws_proxy) == []


async def test_target_group_created_behind_our_back_is_adopted(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    stack = alb_stack(aws_seed)

    def create_first(operation: str, params: dict[str, Any]) -> None:
        # As if an earlier attempt's CreateTargetGroup succeeded but its answer was lost after
        # this run looked the name up.
        if operation == "CreateTargetGroup" and params["Name"].startswith("k8s-default-api"):
            elbv2.create_target_group(**params)

    deployer = StackDeployer(aws_pool, deployer_settings, before_mutation=create_first)
    await deployer.deploy(stack)
    duplicate = [r for r in aws_proxy.log if r.outcome == "DuplicateTargetGroupName"]
    assert len(duplicate) == 1
    assert_no_duplicates(inventory(elbv2))
    aws_proxy.clear_log()
    await StackDeployer(aws_pool, deployer_settings).deploy(stack)
    assert _mutations(aws_proxy) == []


async def test_names_taken_by_others_are_not_touched(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    stack = alb_stack(aws_seed)
    tg = next(iter(stack.target_groups.values()))
    elbv2.create_target_group(Name=tg.name, Protocol="HTTP", Port=80, VpcId=aws_seed.vpc_id,
                              TargetType="ip", Tags=[
                                  {"Key": CLUSTER_TAG, "Value": CLUSTER},
                                  {"Key": stack_tag("ingress"), "Value": "default/someone-else"},
                                  {"Key": resource_tag("ingress"), "Value": "x"}])
    aws_proxy.clear_log()
    with pytest.raises(OwnershipConflict, match=f"target group name {tg.name} is taken"):
        await deployer.deploy(stack)
    assert _mutations(aws_proxy) == []


async def test_subnets_by_name_tag_resolve_to_their_ids(
        deployer: StackDeployer, aws_seed: AwsSeed, elbv2: Any) -> None:
    zones = (f"{aws_seed.region}a", f"{aws_seed.region}b")
    names = [f"{aws_seed.cluster_name}-public-{zone}" for zone in zones]
    await deployer.deploy(_small_alb(aws_seed, subnets=[names[0], aws_seed.public_subnets[1]]))
    [lb] = elbv2.describe_load_balancers()["LoadBalancers"]
    assert {az["SubnetId"] for az in lb["AvailabilityZones"]} == set(aws_seed.public_subnets)


@pytest.mark.parametrize(("subnets", "message"), [
    (["no-such-subnet", "test-cluster-public-us-west-2a"],
     "no subnet named 'no-such-subnet' in VPC"),
    (["test-cluster-public-us-west-2a", "test-cluster-private-us-west-2a"],
     "are in the same availability zone us-west-2a"),
])
async def test_bad_explicit_subnets_are_refused_before_any_change(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        subnets: list[str], message: str) -> None:
    with pytest.raises(ResolveError, match=message):
        await deployer.deploy(_small_alb(aws_seed, subnets=subnets))
    assert _mutations(aws_proxy) == []


async def test_tag_selector_picks_one_subnet_per_zone_preferring_this_cluster(
        deployer: StackDeployer, moto_standin: MotoStandIn, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    ec2 = sync_client("ec2", moto_standin.url, region=aws_seed.region)
    zone_a, zone_b = f"{aws_seed.region}a", f"{aws_seed.region}b"

    def subnet(zone: str, cidr: str, *tags: tuple[str, str]) -> str:
        spec = [{"ResourceType": "subnet", "Tags": [
            {"Key": "team", "Value": "web"}, *({"Key": k, "Value": v} for k, v in tags)]}]
        return str(ec2.create_subnet(VpcId=aws_seed.vpc_id, AvailabilityZone=zone,
                                     CidrBlock=cidr, TagSpecifications=spec)["Subnet"]["SubnetId"])

    try:
        subnet(zone_a, "10.0.100.0/24", ("kubernetes.io/cluster/other", "owned"))  # not ours
        untagged_a = subnet(zone_a, "10.0.101.0/24")
        subnet(zone_b, "10.0.102.0/24")  # loses to the one tagged for this cluster
        ours_b = subnet(zone_b, "10.0.103.0/24", (f"kubernetes.io/cluster/{CLUSTER}", "shared"))
        subnet(zone_b, "10.0.104.0/24", ("team", "db"))  # the selector does not match it
    finally:
        ec2.close()
    await deployer.deploy(_small_alb(aws_seed, subnets=SubnetSelector(tags={"team": ["web"]})))
    [lb] = elbv2.describe_load_balancers()["LoadBalancers"]
    assert {az["SubnetId"] for az in lb["AvailabilityZones"]} == {untagged_a, ours_b}


async def test_a_tag_selector_matching_nothing_is_one_clear_error(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    with pytest.raises(ResolveError, match=r"no subnet in VPC vpc-\w+ matches the tags "
                                           r"team in \(nobody\)"):
        await deployer.deploy(_small_alb(aws_seed, subnets=SubnetSelector(
            tags={"team": ["nobody"]})))
    assert _mutations(aws_proxy) == []
