"""After a restart every binding is verified once. With the process's region snapshot (as
`aiolbc run` wires it) the lookups are answered by the one listing of the region's target
groups and their tags; without it, the first target group lookup reads up to 19 others along,
so the lookups cost two calls per 20 bindings instead of two per binding. Either way a target
group gone since is still reported as gone (without the snapshot at the cost of a bisection
of its batch, which AWS refuses whole)."""

from __future__ import annotations

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from runtime.statusconditions import find_condition
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually

BINDINGS = 30
BATCH = 20
GONE = "b07"  # the binding whose target group is deleted while the controller is down


async def _converged(cluster: Cluster, arns: dict[str, str]) -> bool:
    for name, arn in arns.items():
        if await cluster.aws.registered(arn) != {(f"10.4.{int(name[1:])}.1", 8080)}:
            return False
    return True


async def _restarted_with_drift(cluster: Cluster, aws_proxy: AWSFaultProxy, *,
                                region_snapshot: bool) -> dict[str, str]:
    """Bindings converged, the controller down while one target group is deleted and another
    loses a target, and up again until both are seen to; the target groups by binding."""
    arns: dict[str, str] = {}
    for index in range(BINDINGS):
        name = f"b{index:02}"
        arns[name] = await cluster.target_group(f"{name}-tg")
        await cluster.service(name)
        await cluster.endpoints(name, [f"10.4.{index}.1"])
        await cluster.binding(name, service=name, arn=arns[name])
    settings = tgb_settings(cluster.seed, verify_qps=50.0, verify_burst=5)
    await cluster.start(targetgroupbinding=settings, region_snapshot=region_snapshot)
    await eventually(lambda: _converged(cluster, arns))
    await cluster.settled()
    await cluster.kill()

    # While the controller is down, one target group is deleted and another loses a target.
    gone = GONE
    await cluster.aws.call("elbv2", "DeleteTargetGroup", TargetGroupArn=arns[gone])
    await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arns["b20"],
                           Targets=[{"Id": "10.4.20.1", "Port": 8080}])
    aws_proxy.clear_log()
    await cluster.start(targetgroupbinding=settings, region_snapshot=region_snapshot)

    async def reported_gone() -> bool:
        ready = find_condition(await cluster.get(TARGETGROUPBINDINGS, gone), "Ready")
        return ready is not None and ready["reason"] == "TargetGroupNotFound"

    await eventually(reported_gone, message="the deleted target group is not reported")
    await eventually(lambda: _converged(cluster, {n: a for n, a in arns.items() if n != gone}),
                     message="drift not repaired")
    await cluster.settled()
    return arns


async def test_lookups_are_read_ahead_without_the_region_snapshot(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arns = await _restarted_with_drift(cluster, aws_proxy, region_snapshot=False)
    gone = GONE
    health = aws_proxy.records(operation="DescribeTargetHealth")
    assert {r.params["TargetGroupArn"] for r in health} == set(arns.values()) - {arns[gone]}
    lookups = aws_proxy.records(operation="DescribeTargetGroups")
    tags = aws_proxy.records(operation="DescribeTags")
    # Each batch is at most 20 ARNs. One naming the deleted target group is refused whole:
    # its halves are asked on their own (at most 2 * 5 + 1 calls for one missing ARN among
    # 20, not one per binding); the other batch is one call, and the deleted one's own
    # lookup asks for it alone once more: 13 (one spare for a batch begun meanwhile). The
    # tags are read once per batch, for the target groups that exist.
    assert all(len(r.params["TargetGroupArns"]) <= BATCH for r in lookups)
    assert all(len(r.params["ResourceArns"]) <= BATCH for r in tags)
    assert max(len(r.params["TargetGroupArns"]) for r in lookups) == BATCH
    assert len(lookups) <= 14, [len(r.params["TargetGroupArns"]) for r in lookups]
    assert len(tags) <= 3, [len(r.params["ResourceArns"]) for r in tags]
    assert {a for r in tags for a in r.params["ResourceArns"]} == set(arns.values()) - {
        arns[gone]}
    mutating = [(r.operation, r.params.get("TargetGroupArn")) for r in aws_proxy.log
                if r.mutating]
    assert mutating == [("RegisterTargets", arns["b20"])]
    assert await cluster.stop() == 0


async def test_lookups_are_answered_by_the_region_snapshot(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arns = await _restarted_with_drift(cluster, aws_proxy, region_snapshot=True)
    lookups = aws_proxy.records(operation="DescribeTargetGroups")
    tags = aws_proxy.records(operation="DescribeTags")
    # One listing (a page of every target group, then their tags 20 at a time); by ARN only
    # the deleted one, which the listing does not hold, and which is then reported gone.
    by_arn = [r.params["TargetGroupArns"] for r in lookups if r.params.get("TargetGroupArns")]
    pages = [r for r in lookups if not r.params.get("TargetGroupArns")]
    assert len(pages) == 1
    assert by_arn
    assert all(arns_ == [arns[GONE]] for arns_ in by_arn), by_arn
    assert len(tags) == 2, [len(r.params["ResourceArns"]) for r in tags]
    assert {a for r in tags for a in r.params["ResourceArns"]} == set(arns.values()) - {
        arns[GONE]}
    health = aws_proxy.records(operation="DescribeTargetHealth")
    assert {r.params["TargetGroupArn"] for r in health} == set(arns.values()) - {arns[GONE]}
    mutating = [(r.operation, r.params.get("TargetGroupArn")) for r in aws_proxy.log
                if r.mutating]
    assert mutating == [("RegisterTargets", arns["b20"])]
    assert await cluster.stop() == 0
