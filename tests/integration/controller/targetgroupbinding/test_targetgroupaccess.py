"""A namespace user's TargetGroupBinding reaches only target groups that namespace may use: a
target group of another cluster, in another VPC, made for another namespace's load balancer,
or held by another namespace's binding is refused with a Warning and a condition, and nothing
of it changes in AWS (a binding naming a role to assume reaches only that role's account); a
hand-written record of where a binding registered does not make it deregister anything there.
The whole controller runs as its ServiceAccount with the shipped RBAC."""

from __future__ import annotations

from typing import Any

from controller.apis import (
    REGISTERED_TARGET_GROUP_ANNOTATION,
    TARGETGROUPBINDING_FINALIZER,
    TARGETGROUPBINDINGS,
)
from runtime.objects import Obj
from tests.support.cluster import Cluster
from tests.support.objects import condition, target_group_binding
from tests.support.tenancy import Tenancy, warnings
from tests.support.waiting import eventually

VICTIM_TARGETS = {("10.0.1.1", 8080)}


async def _victim(t: Tenancy) -> str:
    """The shop team's out-of-band target group, filled by its binding."""
    arn = await t.admin.target_group("shop-tg")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.binding("web", service="web", arn=arn)
    return arn


async def _refused(attacker: Cluster, name: str, reason: str, *, forged: bool = False) -> Obj:
    """The attacker's binding says it was refused, in an Event and its Ready condition (and,
    unless it was `forged` with one, has no finalizer: nothing was written)."""
    async def told() -> Obj | None:
        obj = await attacker.get(TARGETGROUPBINDINGS, name)
        ready = condition(obj, "Ready") or {}
        if (warnings(await attacker.events(name), reason)
                and ready.get("status") == "False" and ready.get("reason") == reason):
            return obj
        return None

    obj: Obj = await eventually(told, message=f"no {reason} on {name}")
    assert forged or not obj["metadata"].get("finalizers"), "refused before anything was written"
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


async def test_a_target_group_of_another_namespaces_load_balancer_is_refused(
        tenancy: Tenancy, attacker: Cluster) -> None:
    """The shop's NLB: its target group, made by this cluster's Service controller, is the
    shop's, whatever binding holds it."""
    t = tenancy
    await t.admin.nlb_service("web", endpoint_ips=["10.0.1.1"])
    await t.start()

    async def shop_target_group() -> str | None:
        bindings = await t.admin.bindings("web")
        if not bindings:
            return None
        arn = str(bindings[0]["spec"]["targetGroupARN"])
        return arn if await t.aws.registered(arn) == VICTIM_TARGETS else None

    shop_tg = await eventually(shop_target_group)
    await t.admin.settled()
    t.proxy.clear_log()
    await _attack(attacker, "nlb", shop_tg)
    obj = await _refused(attacker, "nlb", "TargetGroupOfAnotherNamespace")
    assert "namespace shop" in (condition(obj, "Ready") or {})["message"]
    await t.admin.settled()
    assert await t.aws.registered(shop_tg) == VICTIM_TARGETS
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_cross_account_role_reaches_only_the_roles_account(tenancy: Tenancy,
                                                                   attacker: Cluster) -> None:
    """Naming a role makes every call for the binding be made as that role, in its account:
    this account's target group is not found there, and nothing of it changes."""
    t = tenancy
    target = await t.admin.target_group("cross-tg")
    await t.start()
    t.proxy.clear_log()
    await _attack(attacker, "cross", target,
                  iamRoleArnToAssume="arn:aws:iam::999999999999:role/victim",
                  assumeRoleExternalId="xy")
    await _refused(attacker, "cross", "TargetGroupNotFound")
    await t.admin.settled()
    assert await t.aws.registered(target) == set()
    # The role was assumed and the target group looked up as the role (not found in its
    # account); nothing else was asked, nothing changed.
    assert {(r.operation, r.outcome) for r in t.proxy.log} == {
        ("AssumeRole", "ok"), ("DescribeTargetGroups", "TargetGroupNotFound")}
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_hand_written_record_deregisters_nothing_it_may_not(
        tenancy: Tenancy, attacker: Cluster) -> None:
    """The record of the target group a binding registered into is an annotation its author can
    write: naming another cluster's target group there, then moving the binding or deleting
    it, deregisters nothing from that target group."""
    t = tenancy
    theirs = await t.admin.target_group("theirs-tg", tags={"elbv2.k8s.aws/cluster": "staging"})
    await t.aws.register(theirs, ("10.9.9.9", 8080))
    mine = await attacker.target_group("mine-tg")
    await t.start()
    t.proxy.clear_log()
    forged = {REGISTERED_TARGET_GROUP_ANNOTATION: theirs}
    await attacker.backend("pods", endpoint_ips=["10.66.0.1"])
    # Moved "from" their target group to the attacker's own.
    await attacker.create(TARGETGROUPBINDINGS, _with_metadata(
        target_group_binding("move", service="pods", arn=mine), annotations=forged))
    # Deleted while "registered" in theirs (the finalizer written by hand too).
    await attacker.create(TARGETGROUPBINDINGS, _with_metadata(
        target_group_binding("gone", service="pods", arn=theirs), annotations=forged,
        finalizers=[TARGETGROUPBINDING_FINALIZER]))
    await _refused(attacker, "gone", "TargetGroupOfAnotherCluster", forged=True)

    async def moved() -> bool:
        return (await t.aws.registered(mine) == {("10.66.0.1", 8080)}
                and bool(warnings(await attacker.events("move"), "RecordedTargetGroupNotOwned")))

    await eventually(moved, message="the move was not refused its drain")
    await attacker.delete(TARGETGROUPBINDINGS, "gone")

    async def finalized() -> bool:
        return (await attacker.gone(TARGETGROUPBINDINGS, "gone")
                and bool(warnings(await attacker.events("gone"),
                                  "RecordedTargetGroupNotOwned")))

    await eventually(finalized, message="the deletion was not finalized, or not told")
    await t.admin.settled()
    assert await t.aws.registered(theirs) == {("10.9.9.9", 8080)}
    assert [op for op, params in t.mutations() if params.get("TargetGroupArn") == theirs] == []
    assert await t.admin.stop() == 0


def _with_metadata(obj: Obj, **fields: Any) -> Obj:
    obj["metadata"].update(fields)
    return obj


async def _registered_are(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.aws.registered(arn) == expected
