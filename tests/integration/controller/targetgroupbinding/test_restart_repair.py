"""Regression: a target deregistered by hand while the controller was down stayed deregistered
for up to half the sync period (5 hours by default) after the restart, because a verification
trusted the binding's last full look. Now every unchanged binding's registered targets are
compared with AWS once after a restart, in the paced lane: the controller (every controller of
`aiolbc run`, set up from flags, checkpoints on) registers it again within the lane's pace."""

from __future__ import annotations

import time

from controller.apis import TARGETGROUPBINDINGS
from controller.config.checkpoints import CheckpointConfig
from controller.standins import AWSFaultProxy
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

BINDINGS = 8


def _targets(index: int) -> set[tuple[str, int]]:
    return {(f"10.0.5.{2 * index + 1}", 8080), (f"10.0.5.{2 * index + 2}", 8080)}


async def test_a_target_deregistered_while_down_is_registered_again_after_the_restart(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arns: list[str] = []
    for index in range(BINDINGS):
        arns.append(await cluster.target_group(f"web{index}-tg"))
        await cluster.service(f"web{index}")
        await cluster.endpoints(f"web{index}", [ip for ip, _ in sorted(_targets(index))])
        await cluster.binding(f"web{index}", service=f"web{index}", arn=arns[index])
    await cluster.start_app()

    async def all_registered() -> bool:
        return all([await cluster.aws.registered(arn) == _targets(i)
                    for i, arn in enumerate(arns)])

    await eventually(all_registered, timeout=30)
    await cluster.settled()
    assert all([await cluster.checkpoint(TARGETGROUPBINDINGS, f"web{i}")
                for i in range(BINDINGS)])
    await cluster.kill()

    # While the controller is down, one target of each binding is deregistered by hand.
    for index, arn in enumerate(arns):
        gone = sorted(_targets(index))[1][0]
        await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arn,
                                Targets=[{"Id": gone, "Port": 8080}])
    aws_proxy.clear_log()
    restarted = time.monotonic()
    await cluster.start_app()
    budget = CheckpointConfig()  # the flags' defaults: the pace the comparisons keep
    pace = (BINDINGS / budget.verify_aws_qps) + 10.0  # + the listing and the registrations
    await eventually(all_registered, timeout=pace, message="drift not repaired within the pace")
    assert time.monotonic() - restarted < pace
    await cluster.settled()

    # Unchanged bindings: each was compared once, in the paced lane (its reads within the
    # verification budget's burst and rate), and only the missing target registered.
    reads = aws_proxy.records(operation="DescribeTargetHealth")
    assert sorted(r.params["TargetGroupArn"] for r in reads) == sorted(arns)
    times = sorted(r.time for r in reads)
    assert all(j - i + 1 <= budget.verify_aws_burst + budget.verify_aws_qps
               * (times[j] - times[i]) + 1 for i in range(len(times))
               for j in range(i + 1, len(times)))
    registered = aws_proxy.records(operation="RegisterTargets")
    assert sorted(r.params["TargetGroupArn"] for r in registered) == sorted(arns)
    assert all(len(r.params["Targets"]) == 1 for r in registered)
    assert await cluster.stop() == 0
