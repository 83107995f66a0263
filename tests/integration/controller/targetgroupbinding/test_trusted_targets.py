"""A verification reads an unchanged binding's targets only when its last full look (the
checkpoint-timestamp) is older than the trusted time: lately looked-at bindings cost only
their share of the target group reads; the others, and those whose timestamp is no number or
lies ahead, are read, repaired and given a new timestamp."""

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
    "old": str(int(time.time() - 2 * TRUSTED_FOR)),
    "ahead": str(int(time.time() + 10 * TRUSTED_FOR)),
    "garbled": "soon",
}


async def _stamp(cluster: Cluster, name: str) -> str:
    tgb = await cluster.get(TARGETGROUPBINDINGS, name)
    return str((tgb["metadata"].get("annotations") or {}).get(CHECKPOINT_TIMESTAMP_ANNOTATION))


async def test_targets_are_read_again_only_once_the_trusted_time_is_over(
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
            cluster, arns[n], {(f"10.2.{i}.1", 8080), (f"10.2.{i}.2", 8080)}))
    await cluster.settled()
    await cluster.kill()

    # While the controller is down, a target of every binding is deregistered by hand.
    for index, name in enumerate(STAMPS):
        await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arns[name],
                                Targets=[{"Id": f"10.2.{index}.2", "Port": 8080}])
        stamp = STAMPS[name]
        if stamp is not None:
            await cluster.annotate(TARGETGROUPBINDINGS, name,
                                   {CHECKPOINT_TIMESTAMP_ANNOTATION: stamp})
    aws_proxy.clear_log()
    restarted = time.time()
    await cluster.start(targetgroupbinding=settings)
    for index, name in enumerate(STAMPS):
        if name == "recent":
            continue
        await eventually(lambda n=name, i=index: _registered(  # type: ignore[misc]
            cluster, arns[n], {(f"10.2.{i}.1", 8080), (f"10.2.{i}.2", 8080)}),
            message=f"{name}: drift not repaired")
    await cluster.settled(quiet=1.0)

    read = {r.params["TargetGroupArn"] for r in aws_proxy.records(
        operation="DescribeTargetHealth")}
    assert read == {arns[n] for n in STAMPS if n != "recent"}
    # The lately looked-at binding was verified all the same: its target group was read
    # (with the others', in the region listing: its pages and their tags), and it stays as
    # its last full look left it.
    pages = [r for r in aws_proxy.records(operation="DescribeTargetGroups")
             if not r.params.get("TargetGroupArns") and not r.params.get("Names")]
    tagged = {arn for r in aws_proxy.records(operation="DescribeTags")
              for arn in r.params.get("ResourceArns") or []}
    assert pages
    assert arns["recent"] in tagged
    assert await cluster.aws.registered(arns["recent"]) == {("10.2.0.1", 8080)}
    assert not [r for r in aws_proxy.log if r.mutating
                and r.params.get("TargetGroupArn") == arns["recent"]]
    # Every full look wrote a new timestamp; the trusted one kept its own.
    for name in STAMPS:
        stamp = await _stamp(cluster, name)
        if name == "recent":
            assert int(stamp) < restarted
        else:
            assert int(stamp) >= int(restarted), name
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
