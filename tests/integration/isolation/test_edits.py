"""Edits to a binding that would destroy: an IP family the target group does not have is
refused (targets stay, Ready=False); a new targetGroupARN first drains what the binding
registered in the old group — also when the change was made while the controller was down;
turning multiClusterTargetGroup off never deregisters targets this cluster did not register
while its tracking record exists, and says so."""

from __future__ import annotations

from controller.apis import REGISTERED_TARGET_GROUP_ANNOTATION, TARGETGROUPBINDINGS
from runtime.client import KubeClient
from runtime.objects import Obj
from runtime.resources import CONFIGMAPS, ENDPOINTSLICES
from tests.integration.isolation.tenancy import VICTIM, Tenancy
from tests.waiting import eventually

OURS = {("10.0.1.1", 8080), ("10.0.1.2", 8080)}


async def _team(t: Tenancy) -> KubeClient:
    return await t.tenant(VICTIM, "shopkeeper")


async def _registered_are(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.registered(arn) == expected


async def _ready(client: KubeClient, name: str) -> dict[str, str]:
    obj = await client.get(TARGETGROUPBINDINGS, name, VICTIM)
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c["type"] == "Ready"), {})


async def test_an_ip_family_the_target_group_lacks_is_refused(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    arn = await t.target_group("v4-tg")
    await t.backend(team, VICTIM, "web", ["10.0.1.1", "10.0.1.2"])
    await t.binding(team, VICTIM, "web", service="web", arn=arn)
    await t.start()
    await eventually(lambda: _registered_are(t, arn, OURS))
    await t.settled()
    t.proxy.clear_log()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"ipAddressType": "ipv6"}}, VICTIM)

    async def refused() -> bool:
        ready = await _ready(team, "web")
        return ready.get("status") == "False" and ready.get("reason") == "IPAddressTypeMismatch"

    await eventually(refused)
    assert await t.events(team, VICTIM, "web", "IPAddressTypeMismatch")
    await t.settled()
    assert await t.registered(arn) == OURS
    assert t.mutations() == []
    async with team:
        assert await t.stop() == 0


async def test_a_new_target_group_arn_drains_the_old_one_first(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    first, second, third = [await t.target_group(f"{n}-tg") for n in ("first", "second", "third")]
    await t.backend(team, VICTIM, "web", ["10.0.1.1", "10.0.1.2"])
    await t.binding(team, VICTIM, "web", service="web", arn=first)
    await t.start()
    await eventually(lambda: _registered_are(t, first, OURS))
    t.proxy.clear_log()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"targetGroupARN": second}}, VICTIM)
    await eventually(lambda: _registered_are(t, second, OURS))
    assert await t.registered(first) == set()
    moves = [(op, p["TargetGroupArn"]) for op, p in t.mutations()]
    assert moves == [("DeregisterTargets", first), ("RegisterTargets", second)]
    assert await t.events(team, VICTIM, "web") == []
    obj = await team.get(TARGETGROUPBINDINGS, "web", VICTIM)
    assert obj["metadata"]["annotations"][REGISTERED_TARGET_GROUP_ANNOTATION] == second

    # Changed while the controller is down: the record still names the group to drain.
    await t.settled()
    await t.kill()
    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"targetGroupARN": third}}, VICTIM)
    t.proxy.clear_log()
    await t.start()
    await eventually(lambda: _registered_are(t, third, OURS))
    assert await t.registered(second) == set()
    moves = [(op, p["TargetGroupArn"]) for op, p in t.mutations()]
    assert moves == [("DeregisterTargets", second), ("RegisterTargets", third)]

    # Deleted: what it registered goes, from the group it recorded.
    await team.delete(TARGETGROUPBINDINGS, "web", VICTIM)
    await eventually(lambda: _registered_are(t, third, set()))
    async with team:
        assert await t.stop() == 0


async def test_turning_multi_cluster_off_keeps_other_clusters_targets(tenancy: Tenancy) -> None:
    t = tenancy
    team = await _team(t)
    shared = await t.target_group("shared-tg")
    await t.register(shared, ("10.8.8.8", 8080))  # another cluster's target
    await t.backend(team, VICTIM, "web", ["10.0.1.1", "10.0.1.2"])
    await t.binding(team, VICTIM, "web", service="web", arn=shared,
                    multiClusterTargetGroup=True)
    await t.start()
    theirs = {("10.8.8.8", 8080)}
    await eventually(lambda: _registered_are(t, shared, OURS | theirs))
    await t.settled()

    await team.patch(TARGETGROUPBINDINGS, "web", {"spec": {"multiClusterTargetGroup": None}},
                     VICTIM)
    await _endpoints(team, ["10.0.1.1"])  # one of ours goes

    async def said() -> list[Obj]:
        return await t.events(team, VICTIM, "web", "TrackingRecordKept")

    (event,) = await eventually(said)
    assert "1 target(s) it did not register" in event["message"]
    assert await t.registered(shared) == {("10.0.1.1", 8080)} | theirs

    # The record deleted, the binding owns the target group alone.
    await team.delete(CONFIGMAPS, "aws-lbc-targets-web", VICTIM)
    await _endpoints(team, ["10.0.1.1", "10.0.1.3"])
    await eventually(lambda: _registered_are(t, shared, {("10.0.1.1", 8080),
                                                         ("10.0.1.3", 8080)}))
    async with team:
        assert await t.stop() == 0


async def _endpoints(client: KubeClient, ips: list[str]) -> None:
    current = await client.get(ENDPOINTSLICES, "web-1", VICTIM)
    current["endpoints"] = [{"addresses": [ip], "conditions": {"ready": True},
                             "targetRef": {"kind": "Pod", "name": f"web-{ip}",
                                           "uid": f"uid-{ip}"}} for ip in ips]
    await client.update(ENDPOINTSLICES, current)
