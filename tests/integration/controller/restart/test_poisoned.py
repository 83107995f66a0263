"""One object can never stop the controller. Objects a real API server would accept (an Ingress
of another class with 5,000 nested JSON arrays in an annotation) or reject (schema-invalid
specs, which runtime/envtest stores), in the cluster before and after a restart of the real
`aiolbc run`: every other object is still served, the bad ones that are ours get one Warning
Event, and nothing of them reaches AWS."""

from __future__ import annotations

from controller.apis import TARGETGROUPBINDINGS
from runtime.resources import EVENTS, INGRESSES
from tests.integration.controller.restart.world import ALB, World
from tests.support.waiting import eventually

DEEP = "[" * 5000 + "]" * 5000


async def _poison(world: World) -> None:
    await world.backend("nginx-be")
    await world.ingress("nginx-deep", {"actions.x": DEEP, "conditions.nginx-be": DEEP},
                        backend="nginx-be", class_name="nginx")
    await world.backend("bad-be")
    await world.ingress("ours-deep", {"target-type": "ip", "actions.x": DEEP},
                        backend="bad-be")
    await world.client.create(INGRESSES, {"metadata": {"name": "garbage-rules"},
                                          "spec": {"ingressClassName": "alb",
                                                   "rules": "garbage"}}, world.namespace)
    await world.client.create(TARGETGROUPBINDINGS, {
        "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
        "metadata": {"name": "garbage-spec"}, "spec": "garbage"}, world.namespace)


async def _warning(world: World, name: str) -> bool:
    items = (await world.client.list(EVENTS, world.namespace)).get("items") or []
    return any(e.get("type") == "Warning" and (e.get("involvedObject") or {}).get("name") == name
               for e in items)


async def _served(world: World, names: list[str]) -> bool:
    for name in names:
        if not await world.checkpoint(INGRESSES, name):
            return False
    return True


async def test_poisoned_objects_affect_only_themselves_across_a_restart(world: World) -> None:
    await _poison(world)
    await world.backend("good-be")
    await world.ingress("good", {"target-type": "ip"}, backend="good-be")
    first = await world.run()
    try:
        await eventually(lambda: _served(world, ["good"]), timeout=60)
        for name in ("ours-deep", "garbage-rules", "garbage-spec"):
            await eventually(lambda name=name: _warning(world, name),  # type: ignore[misc]
                             timeout=30, message=f"{name}: no Warning Event")
        assert not await _warning(world, "nginx-deep")  # not ours to report
        # The informers keep delivering: a new Ingress is served while the poison is there.
        await world.backend("later-be")
        await world.ingress("later", {"target-type": "ip"}, backend="later-be")
        await eventually(lambda: _served(world, ["later"]), timeout=60)
    finally:
        await first.kill()

    # A restart with the poison present syncs its caches and serves a change.
    await world.annotate(INGRESSES, "good", {ALB + "tags": "after=restart"})
    second = await world.run()
    try:
        async def retagged() -> bool:
            tags = await _lb_tags(world, "default/good")
            return tags.get("after") == "restart"
        await eventually(retagged, timeout=60)
    finally:
        await second.kill()
    stacks = await _stacks(world)
    assert not {"default/ours-deep", "default/garbage-rules", "default/nginx-deep"} & stacks


async def _lb_tags(world: World, stack: str) -> dict[str, str]:
    arns = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    for tags in (await world.aws.tags(arns)).values():
        if tags.get("ingress.k8s.aws/stack") == stack:
            return tags
    return {}


async def _stacks(world: World) -> set[str]:
    arns = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    return {tags["ingress.k8s.aws/stack"] for tags in (await world.aws.tags(arns)).values()
            if "ingress.k8s.aws/stack" in tags}
