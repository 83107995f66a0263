"""Restarts: checkpoint-matched bindings are verified in the paced LOW lane, a binding whose
endpoints changed while the controller was down goes first, drift is repaired by the
verification, and a crash between the checkpoint reset and RegisterTargets is recovered."""

from __future__ import annotations

import asyncio
import itertools

from controller.apis import CHECKPOINT_ANNOTATION, TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually

UNCHANGED = 5
VERIFY_QPS = 5.0


async def _registered_are(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected


async def _checkpoint(cluster: Cluster, name: str) -> str:
    tgb = await cluster.get(TARGETGROUPBINDINGS, name)
    return str((tgb["metadata"].get("annotations") or {}).get(CHECKPOINT_ANNOTATION, ""))


async def test_restart_verifies_unchanged_bindings_at_the_configured_pace(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    settings = tgb_settings(cluster.seed, verify_qps=VERIFY_QPS, verify_burst=1)
    # "z-..." sorts last: without priorities it would be reconciled last.
    names = [f"tgb-{i}" for i in range(UNCHANGED)] + ["z-changed"]
    arns: dict[str, str] = {}
    for index, name in enumerate(names):
        arns[name] = await cluster.target_group(f"{name}-tg")
        await cluster.service(name)
        await cluster.endpoints(name, [f"10.1.{index}.1", f"10.1.{index}.2"])
        # tgb-1 leaves its target type to the target group: still judged from the caches
        await cluster.binding(name, service=name, arn=arns[name],
                              target_type=None if name == "tgb-1" else "ip")
    await cluster.start(targetgroupbinding=settings)
    for index, name in enumerate(names):
        await eventually(lambda n=name, i=index: _registered_are(  # type: ignore[misc]
            cluster, arns[n], {(f"10.1.{i}.1", 8080), (f"10.1.{i}.2", 8080)}))
    await cluster.settled()
    await cluster.kill()

    # While the controller is down: one binding's endpoints change, and a target of another
    # is deregistered by hand (drift the checkpoint cannot see).
    last = len(names) - 1
    await cluster.endpoints("z-changed", [f"10.1.{last}.1", f"10.1.{last}.3"])
    await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arns["tgb-0"],
                            Targets=[{"Id": "10.1.0.2", "Port": 8080}])
    aws_proxy.clear_log()
    await cluster.start(targetgroupbinding=settings)

    await eventually(lambda: _registered_are(cluster, arns["z-changed"], {
        (f"10.1.{last}.1", 8080), (f"10.1.{last}.3", 8080)}))
    await eventually(lambda: _registered_are(cluster, arns["tgb-0"], {
        ("10.1.0.1", 8080), ("10.1.0.2", 8080)}), message="drift not repaired")
    await cluster.settled(quiet=2 / VERIFY_QPS)

    health = aws_proxy.records(operation="DescribeTargetHealth")
    verified = {r.params["TargetGroupArn"]: r.time for r in health
                if r.params["TargetGroupArn"] != arns["z-changed"]}
    assert set(verified) == {arns[n] for n in names[:UNCHANGED]}, "each verified once"
    # One look per binding: the event of a binding's own checkpoint reset, arriving while it
    # is in flight, is not mistaken for a change once the real checkpoint is written.
    assert len(health) == len(names)
    # The pace is that of verifications starting: each one's first call is its target
    # group's lookup (it also reads the tags the ownership checks need).
    started = {str(r.params["TargetGroupArns"][0]): r.time
               for r in reversed(aws_proxy.records(operation="DescribeTargetGroups"))}
    times = sorted(started[arn] for arn in verified)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.8 / VERIFY_QPS, gaps
    # The changed binding did not wait behind the paced verifications.
    registered_changed = [r.time for r in aws_proxy.records(operation="RegisterTargets")
                          if r.params["TargetGroupArn"] == arns["z-changed"]]
    assert registered_changed
    assert registered_changed[0] < times[1]
    # The verifications mutate only where AWS drifted.
    mutating = [(r.operation, r.params["TargetGroupArn"]) for r in aws_proxy.log if r.mutating]
    assert sorted(mutating) == sorted([
        ("RegisterTargets", arns["tgb-0"]),
        ("DeregisterTargets", arns["z-changed"]), ("RegisterTargets", arns["z-changed"])])
    for name in names:
        assert await _checkpoint(cluster, name) != ""
    assert await cluster.stop() == 0


async def test_crash_between_checkpoint_reset_and_register_is_recovered(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("crash-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.2.0.1"])
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()
    await eventually(lambda: _registered_are(cluster, arn, {("10.2.0.1", 8080)}))
    await cluster.settled()
    before = await _checkpoint(cluster, "web")
    assert before != ""

    # RegisterTargets hangs, then fails: the process dies while it hangs.
    fault = aws_proxy.inject("InternalFailure", operation="RegisterTargets", latency=0.5)
    aws_proxy.clear_log()
    await cluster.endpoints("web", ["10.2.0.1", "10.2.0.2"])
    await eventually(lambda: asyncio.sleep(0, fault.fired > 0))  # RegisterTargets is hanging
    await cluster.kill()
    assert await _checkpoint(cluster, "web") == "", "reset before touching targets"
    assert await cluster.aws.registered(arn) == {("10.2.0.1", 8080)}
    aws_proxy.remove(fault)

    # A fresh process sees the reset checkpoint as a change: NORMAL priority, full sync.
    await cluster.start(targetgroupbinding=tgb_settings(cluster.seed, verify_qps=0.01,
                                                        verify_burst=1))
    await eventually(lambda: _registered_are(cluster, arn, {("10.2.0.1", 8080),
                                                            ("10.2.0.2", 8080)}))

    async def checkpoint_written() -> bool:
        value = await _checkpoint(cluster, "web")
        return value not in ("", before)

    await eventually(checkpoint_written)

    # The same failure without a crash: the error is retried with backoff in the same process.
    await cluster.settled()
    failing = aws_proxy.inject("ValidationError", operation="RegisterTargets", count=1)
    await cluster.endpoints("web", ["10.2.0.1", "10.2.0.2", "10.2.0.3"])
    await eventually(lambda: _registered_are(cluster, arn, {
        ("10.2.0.1", 8080), ("10.2.0.2", 8080), ("10.2.0.3", 8080)}))
    assert failing.fired == 1
    await cluster.settled()
    assert await _checkpoint(cluster, "web") not in ("", before)
    assert any(e["reason"] == "FailedReconcile"
               for e in await cluster.events("web", of=TARGETGROUPBINDINGS))
    assert await cluster.stop() == 0
