"""Cross-account bindings (`iamRoleArnToAssume`, `assumeRoleExternalId`): the target group is
read, registered into and deregistered from as the role, in its account (moto's STS gives an
assumed role's credentials the role's account, so that account's target groups are invisible
to the controller's own); the role's refusal is one Warning and the binding's condition, and
nothing else is affected."""

from __future__ import annotations

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import Role
from controller.standins import AWSFaultProxy
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

ROLE = Role(arn="arn:aws:iam::111111111111:role/tg-management", external_id="shared-secret")


def _cross(vpc: str, **spec: str) -> dict[str, str]:
    return {"iamRoleArnToAssume": ROLE.arn, "assumeRoleExternalId": ROLE.external_id,
            "vpcID": vpc, **spec}


async def test_targets_are_registered_in_the_roles_account(cluster: Cluster,
                                                              aws_proxy: AWSFaultProxy) -> None:
    far = cluster.aws.as_role(ROLE)
    vpc = await far.vpc()
    arn = await far.create_target_group("far-tg", vpc_id=vpc)
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1", "10.0.3.2"])
    await cluster.binding("web", service="web", arn=arn, extra=_cross(vpc))
    await cluster.start()

    async def registered() -> bool:
        return await far.registered(arn) == {("10.0.3.1", 8080), ("10.0.3.2", 8080)}

    await eventually(registered, message="nothing registered in the role's account")
    ready = condition(await cluster.get(TARGETGROUPBINDINGS, "web"), "Ready") or {}
    assert ready.get("status") == "True"
    # Every ELBv2 call of the binding was made as the role: its own account has no such group.
    assert await cluster.aws.target_groups() == []
    assert len(aws_proxy.records(operation="AssumeRole")) == 1

    await cluster.endpoints("web", ["10.0.3.2"])
    await eventually(lambda: _only(far, arn, {("10.0.3.2", 8080)}))
    await cluster.client.delete(TARGETGROUPBINDINGS, "web", "default")
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "web"))
    assert await far.registered(arn) == set()


async def _only(aws: AwsInspector, arn: str, targets: set[tuple[str, int]]) -> bool:
    return await aws.registered(arn) == targets


async def test_a_refused_role_is_one_warning_and_nothing_else_changes(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    home = await cluster.target_group("home-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    await cluster.binding("home", service="web", arn=home)
    # Made in the role's account by hand, so that only the role's refusal stops it.
    far = cluster.aws.as_role(ROLE)
    vpc = await far.vpc()
    far_arn = await far.create_target_group("far-tg", vpc_id=vpc)
    aws_proxy.inject("AccessDenied", operation="AssumeRole", status=403,
                         message="User is not authorized to perform: sts:AssumeRole")
    await cluster.binding("denied", service="web", arn=far_arn, extra=_cross(vpc))
    await cluster.binding("malformed", service="web", arn=far_arn, extra={
        "iamRoleArnToAssume": "arn:aws:iam::1111:role/tg-management", "vpcID": vpc})
    await cluster.start()

    async def refused(name: str, reason: str) -> dict[str, object] | None:
        ready = condition(await cluster.get(TARGETGROUPBINDINGS, name), "Ready") or {}
        told = warnings(await cluster.events(name), reason)
        return ready if ready.get("reason") == reason and told else None

    denied = await eventually(lambda: refused("denied", "AssumeRoleFailed"))
    assert denied["status"] == "False"
    assert f"cannot assume role {ROLE.arn}" in str(denied["message"])
    malformed = await eventually(lambda: refused("malformed", "InvalidSpec"))
    assert "iamRoleArnToAssume" in str(malformed["message"])
    assert "is not an IAM role ARN" in str(malformed["message"])
    await eventually(lambda: _only(cluster.aws, home, {("10.0.3.1", 8080)}))
    await cluster.settled()
    # One Warning each (not retried until the binding changes), nothing registered there, and
    # no call but the refused AssumeRole was made for them.
    assert len(warnings(await cluster.events("denied"), "AssumeRoleFailed")) == 1
    assert await far.registered(far_arn) == set()
    assert not [r for r in aws_proxy.log if far_arn in str(r.params)]
