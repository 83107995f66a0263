"""The target group cache holds each target once and each distinct health once: reading a
target group's health again (it is re-read while any target is settling) keeps the objects it
held for the targets AWS still reports, and every target in the same health shares one
TargetState. Against the AWS stand-in, through the production client pool."""

from __future__ import annotations

from controller.aws import AWSClientPool
from controller.targetgroupbinding.targetgroups import TargetGroups, TargetState
from controller.targetgroupbinding.targets import Target
from runtime.clock import FakeClock
from tests.support.aws import AwsInspector


async def _target_group(aws: AwsInspector, name: str) -> str:
    vpcs = await aws.call("ec2", "DescribeVpcs")
    return await aws.create_target_group(name, vpc_id=vpcs["Vpcs"][0]["VpcId"],
                                         protocol="TCP", port=8080)


def _one_object_per_health(states: list[TargetState]) -> bool:
    by_value: dict[TargetState, TargetState] = {}
    return all(by_value.setdefault(state, state) is state for state in states)


async def test_a_read_keeps_the_targets_the_cache_held_and_shares_each_health(
        aws_pool: AWSClientPool, aws_inspector: AwsInspector) -> None:
    arns = [await _target_group(aws_inspector, f"health-cache-{i}") for i in range(2)]
    groups = TargetGroups(aws_pool, clock=FakeClock())
    registered = {arn: [Target(f"10.9.{i}.{k}", 8080) for k in range(1, 41)]
                  for i, arn in enumerate(arns)}
    for arn, targets in registered.items():
        assert await groups.current_targets(arn) == set()
        await groups.register(arn, targets)

    arn = arns[0]
    # Behind the controller's back one target leaves and another arrives; a registration
    # of the controller's own makes the cache re-read AWS at the next look.
    await aws_inspector.elbv2("DeregisterTargets", TargetGroupArn=arn,
                              Targets=[{"Id": "10.9.0.1", "Port": 8080}])
    await aws_inspector.register(arn, ("10.9.0.99", 8080))
    late = Target("10.9.0.100", 8080)
    await groups.register(arn, [late])

    current = await groups.current_targets(arn)
    assert current == ((set(registered[arn]) - {Target("10.9.0.1", 8080)})
                       | {Target("10.9.0.99", 8080), late})
    # Targets the cache held are the very objects registered, not copies read from the reply.
    mine = {t: t for t in [*registered[arn], late]}
    assert all(t is mine[t] for t in current if t in mine)

    other = await groups.current_targets(arns[1])
    assert other == set(registered[arns[1]])
    states = [*groups.health(arn).values(), *groups.health(arns[1]).values()]
    assert len(states) == len(current) + len(other)
    assert _one_object_per_health(states)
