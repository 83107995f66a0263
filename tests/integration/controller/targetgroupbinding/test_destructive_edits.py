"""Edits to a binding that would destroy, made by the namespace's own user: an IP family the
target group does not have is refused (targets stay, Ready=False); a new targetGroupARN first
drains what the binding registered in the old group — also when the change was made while the
controller was down; turning multiClusterTargetGroup off never deregisters targets this cluster
did not register while its tracking record exists, and says so."""

from __future__ import annotations

from controller.apis import REGISTERED_TARGET_GROUP_ANNOTATION, TARGETGROUPBINDINGS
from runtime.objects import Obj
from runtime.resources import CONFIGMAPS
from tests.support.cluster import Cluster
from tests.support.objects import annotation, condition
from tests.support.tenancy import VICTIM, Tenancy, warnings
from tests.support.waiting import eventually

OURS = {("10.0.1.1", 8080), ("10.0.1.2", 8080)}


async def _team(t: Tenancy) -> Cluster:
    return await t.tenant(VICTIM, "shopkeeper")


async def _registered_are(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.aws.registered(arn) == expected


async def test_an_ip_family_the_target_group_lacks_is_refused(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    arn = await team.target_group("v4-tg")
    await team.backend("web", endpoint_ips=["10.0.1.1", "10.0.1.2"])
    await team.binding("web", service="web", arn=arn)
    await t.start()
    await eventually(lambda: _registered_are(t, arn, OURS))
    await t.admin.settled()
    t.proxy.clear_log()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"ipAddressType": "ipv6"}})

    async def refused() -> bool:
        ready = condition(await team.get(TARGETGROUPBINDINGS, "web"), "Ready") or {}
        return ready.get("status") == "False" and ready.get("reason") == "IPAddressTypeMismatch"

    await eventually(refused)
    assert warnings(await team.events("web"), "IPAddressTypeMismatch")
    await t.admin.settled()
    assert await t.aws.registered(arn) == OURS
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_new_target_group_arn_drains_the_old_one_first(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    first, second, third = [await team.target_group(f"{n}-tg")
                            for n in ("first", "second", "third")]
    await team.backend("web", endpoint_ips=["10.0.1.1", "10.0.1.2"])
    await team.binding("web", service="web", arn=first)
    await t.start()
    await eventually(lambda: _registered_are(t, first, OURS))
    # The proxy logs a call once moto's answer is relayed, after moto shows its effect.
    await t.admin.settled()
    t.proxy.clear_log()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"targetGroupARN": second}})
    await eventually(lambda: _registered_are(t, second, OURS))
    await t.admin.settled()
    assert await t.aws.registered(first) == set()
    moves = [(op, p["TargetGroupArn"]) for op, p in t.mutations()]
    assert moves == [("DeregisterTargets", first), ("RegisterTargets", second)]
    assert warnings(await team.events("web")) == []
    obj = await team.get(TARGETGROUPBINDINGS, "web")
    assert annotation(obj, REGISTERED_TARGET_GROUP_ANNOTATION) == second

    # Changed while the controller is down: the record still names the group to drain.
    await t.admin.kill()
    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"targetGroupARN": third}})
    t.proxy.clear_log()
    await t.start()
    await eventually(lambda: _registered_are(t, third, OURS))
    await t.admin.settled()
    assert await t.aws.registered(second) == set()
    moves = [(op, p["TargetGroupArn"]) for op, p in t.mutations()]
    assert moves == [("DeregisterTargets", second), ("RegisterTargets", third)]

    # Deleted: what it registered goes, from the group it recorded.
    await team.delete(TARGETGROUPBINDINGS, "web")
    await eventually(lambda: _registered_are(t, third, set()))
    assert await t.admin.stop() == 0


async def test_turning_multi_cluster_off_keeps_other_clusters_targets(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    shared = await team.target_group("shared-tg")
    await t.aws.register(shared, ("10.8.8.8", 8080))  # another cluster's target
    await team.backend("web", endpoint_ips=["10.0.1.1", "10.0.1.2"])
    await team.binding("web", service="web", arn=shared, multi_cluster=True)
    await t.start()
    theirs = {("10.8.8.8", 8080)}
    await eventually(lambda: _registered_are(t, shared, OURS | theirs))
    await t.admin.settled()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"multiClusterTargetGroup": None}})
    await team.endpoints("web", ["10.0.1.1"])  # one of ours goes

    async def said() -> list[Obj]:
        return warnings(await team.events("web"), "TrackingRecordKept")

    (event,) = await eventually(said)
    assert "1 target(s) it did not register" in event["message"]
    # The Warning may come from the pass for the patch, before the one for the endpoints.
    await eventually(lambda: _registered_are(t, shared, {("10.0.1.1", 8080)} | theirs))

    # The record deleted, the binding owns the target group alone.
    await team.delete(CONFIGMAPS, "aws-lbc-targets-web")
    await team.endpoints("web", ["10.0.1.1", "10.0.1.3"])
    await eventually(lambda: _registered_are(t, shared, {("10.0.1.1", 8080),
                                                         ("10.0.1.3", 8080)}))
    assert await t.admin.stop() == 0
