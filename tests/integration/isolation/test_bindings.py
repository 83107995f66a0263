"""A namespace user's TargetGroupBinding reaches only target groups that namespace may use: a
target group of another cluster, in another VPC, held by another namespace's binding, or
needing a cross-account role is refused with a Warning and a condition, and nothing of it
changes in AWS."""

from __future__ import annotations

from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from runtime.client import KubeClient
from runtime.objects import Obj
from tests.integration.isolation.tenancy import ATTACKER, VICTIM, Tenancy
from tests.waiting import eventually

VICTIM_TARGETS = {("10.0.1.1", 8080)}


async def _victim(t: Tenancy) -> str:
    """The shop team's out-of-band target group, filled by its binding."""
    arn = await t.target_group("shop-tg")
    await t.backend(t.client, VICTIM, "web", ["10.0.1.1"])
    await t.binding(t.client, VICTIM, "web", service="web", arn=arn)
    return arn


async def _refused(t: Tenancy, client: KubeClient, name: str, reason: str) -> Obj:
    """The attacker's binding says it was refused, in an Event and its Ready condition."""
    async def told() -> Obj | None:
        events = await t.events(client, ATTACKER, name, reason)
        obj = await client.get(TARGETGROUPBINDINGS, name, ATTACKER)
        ready: dict[str, Any] = next((c for c in (obj.get("status") or {}).get("conditions") or []
                      if c["type"] == "Ready"), {})
        if events and ready.get("status") == "False" and ready.get("reason") == reason:
            return obj
        return None

    obj: Obj = await eventually(told, message=f"no {reason} on {name}")
    assert not obj["metadata"].get("finalizers"), "refused before anything was written"
    return obj


async def _attack(t: Tenancy, attacker: KubeClient, name: str, arn: str,
                  **spec: Any) -> None:
    await t.backend(attacker, ATTACKER, f"{name}-pods", ["10.66.0.1"])
    await t.binding(attacker, ATTACKER, name, service=f"{name}-pods", arn=arn, **spec)


async def test_another_clusters_target_group_is_refused(tenancy: Tenancy,
                                                        attacker: KubeClient) -> None:
    t = tenancy
    theirs = await t.target_group("theirs-tg", tags={"elbv2.k8s.aws/cluster": "staging"})
    await t.register(theirs, ("10.9.9.9", 8080))
    await t.start()
    t.proxy.clear_log()
    await _attack(t, attacker, "grab", theirs)
    obj = await _refused(t, attacker, "grab", "TargetGroupOfAnotherCluster")
    ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    assert "cluster staging" in ready["message"]
    await t.settled()
    assert await t.registered(theirs) == {("10.9.9.9", 8080)}  # nothing of theirs changed
    assert t.mutations() == []
    assert await t.stop() == 0


async def test_a_target_group_in_another_vpc_is_refused(tenancy: Tenancy,
                                                        attacker: KubeClient) -> None:
    t = tenancy
    other_vpc = (await t.inspect.call("ec2", "CreateVpc", CidrBlock="10.9.0.0/16"))["Vpc"]
    elsewhere = await t.target_group("elsewhere-tg", vpc_id=other_vpc["VpcId"])
    await t.register(elsewhere, ("10.9.0.5", 8080))
    await t.start()
    t.proxy.clear_log()
    await _attack(t, attacker, "far", elsewhere)
    # Naming the cluster's own VPC in vpcID does not make it so.
    await _attack(t, attacker, "far-vpc", elsewhere, vpcID=t.seed.vpc_id)
    for name in ("far", "far-vpc"):
        await _refused(t, attacker, name, "TargetGroupInAnotherVPC")
    await t.settled()
    assert await t.registered(elsewhere) == {("10.9.0.5", 8080)}
    assert t.mutations() == []
    assert await t.stop() == 0


async def test_a_target_group_another_namespace_binds_is_refused(
        tenancy: Tenancy, attacker: KubeClient) -> None:
    t = tenancy
    shop_tg = await _victim(t)
    await t.start()
    await eventually(lambda: _registered_are(t, shop_tg, VICTIM_TARGETS))
    await t.settled()
    t.proxy.clear_log()
    # Even multi-cluster on the attacker's side: sharing is for one namespace only.
    await _attack(t, attacker, "hijack", shop_tg)
    await _attack(t, attacker, "share", shop_tg, multiClusterTargetGroup=True)
    for name in ("hijack", "share"):
        obj = await _refused(t, attacker, name, "TargetGroupInUse")
        ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
        assert "shop/web" in ready["message"]
    await t.settled()
    assert await t.registered(shop_tg) == VICTIM_TARGETS  # not deregistered, nothing added
    assert t.mutations() == []
    assert await t.stop() == 0


async def test_a_cross_account_role_is_refused_not_ignored(tenancy: Tenancy,
                                                           attacker: KubeClient) -> None:
    t = tenancy
    target = await t.target_group("cross-tg")
    await t.start()
    t.proxy.clear_log()
    await _attack(t, attacker, "cross", target,
                  iamRoleArnToAssume="arn:aws:iam::999999999999:role/victim",
                  assumeRoleExternalId="x")
    await _refused(t, attacker, "cross", "CrossAccountUnsupported")
    await t.settled()
    assert await t.registered(target) == set()
    assert t.proxy.log == []  # not even looked up with the controller's own credentials
    assert await t.stop() == 0


async def _registered_are(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.registered(arn) == expected
