"""A namespace user's TargetGroupBinding reaches only target groups that namespace may use: a
target group of another cluster, in another VPC, held by another namespace's binding, or
needing a cross-account role is refused with a Warning and a condition, and nothing of it
changes in AWS. The whole controller runs as its ServiceAccount with the shipped RBAC."""

from __future__ import annotations

from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from runtime.objects import Obj
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.tenancy import Tenancy, warnings
from tests.support.waiting import eventually

VICTIM_TARGETS = {("10.0.1.1", 8080)}


async def _victim(t: Tenancy) -> str:
    """The shop team's out-of-band target group, filled by its binding."""
    arn = await t.admin.target_group("shop-tg")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.binding("web", service="web", arn=arn)
    return arn


async def _refused(attacker: Cluster, name: str, reason: str) -> Obj:
    """The attacker's binding says it was refused, in an Event and its Ready condition."""
    async def told() -> Obj | None:
        obj = await attacker.get(TARGETGROUPBINDINGS, name)
        ready = condition(obj, "Ready") or {}
        if (warnings(await attacker.events(name), reason)
                and ready.get("status") == "False" and ready.get("reason") == reason):
            return obj
        return None

    obj: Obj = await eventually(told, message=f"no {reason} on {name}")
    assert not obj["metadata"].get("finalizers"), "refused before anything was written"
    return obj


async def _attack(attacker: Cluster, name: str, arn: str, **spec: Any) -> None:
    await attacker.backend(f"{name}-pods", endpoint_ips=["10.66.0.1"])
    await attacker.binding(name, service=f"{name}-pods", arn=arn, extra=spec)


async def test_another_clusters_target_group_is_refused(tenancy: Tenancy,
                                                        attacker: Cluster) -> None:
    t = tenancy
    theirs = await t.admin.target_group("theirs-tg", tags={"elbv2.k8s.aws/cluster": "staging"})
    await t.aws.register(theirs, ("10.9.9.9", 8080))
    await t.start()
    t.proxy.clear_log()
    await _attack(attacker, "grab", theirs)
    obj = await _refused(attacker, "grab", "TargetGroupOfAnotherCluster")
    assert "cluster staging" in (condition(obj, "Ready") or {})["message"]
    await t.admin.settled()
    assert await t.aws.registered(theirs) == {("10.9.9.9", 8080)}  # nothing of theirs changed
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_target_group_in_another_vpc_is_refused(tenancy: Tenancy,
                                                        attacker: Cluster) -> None:
    t = tenancy
    other_vpc = (await t.aws.call("ec2", "CreateVpc", CidrBlock="10.9.0.0/16"))["Vpc"]
    elsewhere = await t.admin.target_group("elsewhere-tg", vpc_id=other_vpc["VpcId"])
    await t.aws.register(elsewhere, ("10.9.0.5", 8080))
    await t.start()
    t.proxy.clear_log()
    await _attack(attacker, "far", elsewhere)
    # Naming the cluster's own VPC in vpcID does not make it so.
    await _attack(attacker, "far-vpc", elsewhere, vpcID=t.admin.seed.vpc_id)
    for name in ("far", "far-vpc"):
        await _refused(attacker, name, "TargetGroupInAnotherVPC")
    await t.admin.settled()
    assert await t.aws.registered(elsewhere) == {("10.9.0.5", 8080)}
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_target_group_another_namespace_binds_is_refused(
        tenancy: Tenancy, attacker: Cluster) -> None:
    t = tenancy
    shop_tg = await _victim(t)
    await t.start()
    await eventually(lambda: _registered_are(t, shop_tg, VICTIM_TARGETS))
    await t.admin.settled()
    t.proxy.clear_log()
    # Even multi-cluster on the attacker's side: sharing is for one namespace only.
    await _attack(attacker, "hijack", shop_tg)
    await _attack(attacker, "share", shop_tg, multiClusterTargetGroup=True)
    for name in ("hijack", "share"):
        obj = await _refused(attacker, name, "TargetGroupInUse")
        assert "shop/web" in (condition(obj, "Ready") or {})["message"]
    await t.admin.settled()
    assert await t.aws.registered(shop_tg) == VICTIM_TARGETS  # not deregistered, nothing added
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_cross_account_role_is_refused_not_ignored(tenancy: Tenancy,
                                                           attacker: Cluster) -> None:
    t = tenancy
    target = await t.admin.target_group("cross-tg")
    await t.start()
    t.proxy.clear_log()
    await _attack(attacker, "cross", target,
                  iamRoleArnToAssume="arn:aws:iam::999999999999:role/victim",
                  assumeRoleExternalId="x")
    await _refused(attacker, "cross", "CrossAccountUnsupported")
    await t.admin.settled()
    assert await t.aws.registered(target) == set()
    assert t.proxy.log == []  # not even looked up with the controller's own credentials
    assert await t.admin.stop() == 0


async def _registered_are(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.aws.registered(arn) == expected
