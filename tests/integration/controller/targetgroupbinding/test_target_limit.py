"""--max-targets-per-target-group: a binding fills its target group up to the limit, says so
once per pass in a Warning Event, and registers the rest as room is made."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from controller.apis import TARGETGROUPBINDINGS
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually


async def test_targets_past_the_limit_wait_for_room(cluster: Cluster) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"])
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start(targetgroupbinding=tgb_settings(cluster.seed,
                                                        max_targets_per_target_group=2))

    async def registered() -> set[tuple[str, int]]:
        return await cluster.aws.registered(arn)

    await eventually(lambda: _count_is(registered, 2))
    await cluster.settled()
    assert len(await registered()) == 2
    reasons = [e["reason"] for e in await cluster.events("web", of=TARGETGROUPBINDINGS)]
    assert "TargetLimitReached" in reasons
    # One pod goes: its target leaves, and the one that waited takes its place.
    first = sorted(await registered())[0][0]
    await cluster.endpoints("web", [a for a in ("10.0.1.1", "10.0.1.2", "10.0.1.3")
                                    if a != first])
    await eventually(lambda: _set_is(registered, {(a, 8080) for a in (
        "10.0.1.1", "10.0.1.2", "10.0.1.3") if a != first}))


async def test_no_limit_by_default(cluster: Cluster) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"])
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()
    await eventually(lambda: _count_is(lambda: cluster.aws.registered(arn), 3))


Targets = Callable[[], Awaitable[set[tuple[str, int]]]]


async def _count_is(read: Targets, n: int) -> bool:
    return len(await read()) == n


async def _set_is(read: Targets, expected: set[tuple[str, int]]) -> bool:
    return await read() == expected
