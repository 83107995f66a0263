"""After a restart every unchanged binding's registered targets are compared with AWS once
(one DescribeTargetHealth each), so that a target changed by hand while the controller was down
is repaired within the lane's pace; a full look (rules, tracking, a new checkpoint-timestamp)
follows only when the targets differ or the last full look is older than the trusted time, or
its timestamp is no number or lies ahead. Within one process a verification (a resync) trusts
a comparison of its own younger than the trusted time and reads nothing but the target group."""

from __future__ import annotations

import time

from controller.apis import CHECKPOINT_TIMESTAMP_ANNOTATION, TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually

TRUSTED_FOR = 3600.0
# name → the timestamp written while the controller is down (None: left as it was written)
STAMPS: dict[str, str | None] = {
    "recent": None,
    "intact": None,  # the one binding nobody changed by hand
    "old": str(int(time.time() - 2 * TRUSTED_FOR)),
    "ahead": str(int(time.time() + 10 * TRUSTED_FOR)),
    "garbled": "soon",
}


async def _stamp(cluster: Cluster, name: str) -> str:
    tgb = await cluster.get(TARGETGROUPBINDINGS, name)
    return str((tgb["metadata"].get("annotations") or {}).get(CHECKPOINT_TIMESTAMP_ANNOTATION))


def _both(index: int) -> set[tuple[str, int]]:
    return {(f"10.2.{index}.1", 8080), (f"10.2.{index}.2", 8080)}


async def test_a_restart_compares_every_binding_s_targets_with_aws(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    settings = tgb_settings(cluster.seed, verify_qps=20.0, targets_trusted_for=TRUSTED_FOR)
    arns: dict[str, str] = {}
    for index, name in enumerate(STAMPS):
        arns[name] = await cluster.target_group(f"{name}-tg")
        await cluster.service(name)
        await cluster.endpoints(name, [f"10.2.{index}.1", f"10.2.{index}.2"])
        await cluster.binding(name, service=name, arn=arns[name])
    await cluster.start(targetgroupbinding=settings)
    for index, name in enumerate(STAMPS):
        await eventually(lambda n=name, i=index: _registered(  # type: ignore[misc]
            cluster, arns[n], _both(i)))
    await cluster.settled()
    await cluster.kill()
    intact_stamp = await _stamp(cluster, "intact")

    # While the controller is down, a target of every binding but one is deregistered by hand.
    for index, name in enumerate(STAMPS):
        if name != "intact":
            await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arns[name],
                                    Targets=[{"Id": f"10.2.{index}.2", "Port": 8080}])
        stamp = STAMPS[name]
        if stamp is not None:
            await cluster.annotate(TARGETGROUPBINDINGS, name,
                                   {CHECKPOINT_TIMESTAMP_ANNOTATION: stamp})
    aws_proxy.clear_log()
    restarted = time.time()
    manager = await cluster.start(targetgroupbinding=settings)
    for index, name in enumerate(STAMPS):
        await eventually(lambda n=name, i=index: _registered(  # type: ignore[misc]
            cluster, arns[n], _both(i)), message=f"{name}: drift not repaired")
    await cluster.settled(quiet=1.0)

    read = [r.params["TargetGroupArn"] for r in aws_proxy.records(
        operation="DescribeTargetHealth")]
    assert sorted(read) == sorted(arns.values())  # each once, the intact one too
    assert not [r for r in aws_proxy.log if r.mutating
                and r.params.get("TargetGroupArn") == arns["intact"]]
    # The drifted ones had a full look, which wrote a new timestamp; the intact one's
    # comparison was no full look: its timestamp stays.
    for name in STAMPS:
        stamp = await _stamp(cluster, name)
        if name == "intact":
            assert stamp == intact_stamp
        else:
            assert int(stamp) >= int(restarted), name

    # A resync in the same process: every comparison is this process's own and younger than
    # the trusted time, and so is every full look but the intact binding's, whose timestamp
    # still lies within it: nothing is read but the target groups.
    aws_proxy.clear_log()
    before = cluster.reconciles()
    manager.informer(TARGETGROUPBINDINGS).resync()
    await cluster.settled(quiet=1.0)
    assert cluster.reconciles() >= before + len(STAMPS)  # every binding verified again
    assert aws_proxy.records(operation="DescribeTargetHealth") == []
    assert not [r for r in aws_proxy.log if r.mutating]
    assert await _stamp(cluster, "intact") == intact_stamp
    assert await cluster.stop() == 0


async def test_without_a_trusted_time_every_verification_reads_the_targets(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    settings = tgb_settings(cluster.seed, verify_qps=20.0)
    arn = await cluster.target_group("always-tg")
    await cluster.service("always")
    await cluster.endpoints("always", ["10.3.0.1"])
    await cluster.binding("always", service="always", arn=arn)
    await cluster.start(targetgroupbinding=settings)
    await eventually(lambda: _registered(cluster, arn, {("10.3.0.1", 8080)}))
    await cluster.settled()
    stamp = await _stamp(cluster, "always")
    await cluster.kill()
    aws_proxy.clear_log()
    await cluster.start(targetgroupbinding=settings)
    await cluster.settled(quiet=1.0)
    assert [r.params["TargetGroupArn"]
            for r in aws_proxy.records(operation="DescribeTargetHealth")] == [arn]
    # Nothing changed, and without a trusted time the look is not recorded.
    assert await _stamp(cluster, "always") == stamp
    assert await cluster.stop() == 0


async def _registered(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
