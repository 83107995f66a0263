"""The layered read path (controller/aws/reader.py, snapshot.py) on moto, through the fault
proxy: a lookup AWS refuses for a missing key is asked again apart and leaves that key out;
the snapshot reader answers verifications only, from one listing, and the caller it read for
then refuses mutating calls before sending them; what it answers is what AWS answers."""

from __future__ import annotations

from typing import Any

import pytest

from controller.aws import (
    TARGET_GROUPS_BY_ARN,
    AWSClientPool,
    Caller,
    DirectReader,
    RegionSnapshot,
    SnapshotReader,
    SnapshotStale,
)
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.reconcile import LOW, ReconcilePriority, current_reconcile


def _target_groups(elbv2: Any, seed: AwsSeed, count: int) -> list[str]:
    return [elbv2.create_target_group(Name=f"reader-{i}", Protocol="HTTP", Port=80,
                                      VpcId=seed.vpc_id, TargetType="ip")
            ["TargetGroups"][0]["TargetGroupArn"] for i in range(count)]


def _sizes(proxy: AWSFaultProxy, operation: str, param: str) -> list[int]:
    return sorted(len(r.params[param]) for r in proxy.records(operation=operation))


async def test_a_lookup_refused_for_a_missing_key_leaves_it_out(
        aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    arns = _target_groups(elbv2, aws_seed, 4)
    gone = arns[1]
    elbv2.delete_target_group(TargetGroupArn=gone)
    reader = DirectReader(Caller(aws_pool))

    aws_proxy.clear_log()
    found = await reader.target_groups(arns=arns)
    assert [d["TargetGroupArn"] for d in found] == [arns[0], arns[2], arns[3]]
    # Refused whole, then asked one by one.
    assert _sizes(aws_proxy, "DescribeTargetGroups", "TargetGroupArns") == [1, 1, 1, 1, 4]

    aws_proxy.clear_log()
    answer = await reader.answer(TARGET_GROUPS_BY_ARN, arns, halves=True)
    assert sorted(d["TargetGroupArn"] for d in answer.items) == sorted(
        [arns[0], arns[2], arns[3]])
    assert list(answer.refused) == [gone]
    assert answer.refused[gone].is_not_found
    # Half by half: the half without it is answered at once.
    assert _sizes(aws_proxy, "DescribeTargetGroups", "TargetGroupArns") == [1, 1, 2, 2, 4]

    # moto tags what is gone: AWS's refusal is injected.
    aws_proxy.clear_log()
    aws_proxy.inject("TargetGroupNotFound", operation="DescribeTags", count=1)
    assert list(await reader.tags([gone])) == []
    aws_proxy.inject("TargetGroupNotFound", operation="DescribeTags", count=1)
    assert sorted(await reader.tags([arns[0], arns[2]])) == sorted([arns[0], arns[2]])
    assert _sizes(aws_proxy, "DescribeTags", "ResourceArns") == [1, 1, 1, 2]


async def test_a_verification_reads_the_listing_and_its_caller_then_only_confirms(
        aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    [arn] = _target_groups(elbv2, aws_seed, 1)
    snapshot = RegionSnapshot()
    caller = Caller(aws_pool)
    reader = SnapshotReader(DirectReader(caller), snapshot)

    # A real change reads AWS, and may change it.
    assert [d["TargetGroupArn"] for d in await reader.target_groups(arns=[arn])] == [arn]
    await caller.call("AddTags", ResourceArns=[arn], Tags=[{"Key": "team", "Value": "a"}])
    assert snapshot.taken == 0

    with current_reconcile(priority=ReconcilePriority(LOW), reconcile_id="verify"):
        aws_proxy.clear_log()
        assert [d["TargetGroupArn"] for d in await reader.target_groups(arns=[arn])] == [arn]
        assert (await reader.tags([arn]))[arn] == {"team": "a"}
        # What the listing lacks does not exist: answered without a call.
        assert await reader.load_balancers(names=["nothing-by-that-name"]) == []
        assert snapshot.taken == 1
        assert {r.operation for r in aws_proxy.log} == {
            "DescribeLoadBalancers", "DescribeTargetGroups", "DescribeTags"}
        listed = len(aws_proxy.log)

        with pytest.raises(SnapshotStale):
            await caller.call("AddTags", ResourceArns=[arn], Tags=[{"Key": "team", "Value": "b"}])
        assert len(aws_proxy.log) == listed
        assert caller.counts.mutating == 1  # the real change's, not the refused one

        # Another deploy's caller, reading the same listing, is refused only once it read it.
        fresh = Caller(aws_pool)
        await fresh.call("AddTags", ResourceArns=[arn], Tags=[{"Key": "team", "Value": "c"}])
        assert await SnapshotReader(DirectReader(fresh), snapshot).target_groups(arns=[arn])
        with pytest.raises(SnapshotStale):
            await fresh.call("RemoveTags", ResourceArns=[arn], TagKeys=["team"])
    assert snapshot.taken == 1
    assert [r.operation for r in aws_proxy.log if r.mutating] == ["AddTags"]


@pytest.mark.parametrize("query", ["names", "ids", "tags", "vpc"])
async def test_the_security_groups_of_the_listing_are_those_ec2_answers(
        aws_pool: AWSClientPool, aws_seed: AwsSeed, ec2: Any, query: str) -> None:
    made = {}
    for name, team in (("reader-a", "a"), ("reader-b", "b"), ("reader-c", "a")):
        made[name] = ec2.create_security_group(
            GroupName=name, Description=name, VpcId=aws_seed.vpc_id, TagSpecifications=[
                {"ResourceType": "security-group",
                 "Tags": [{"Key": "team", "Value": team}, {"Key": "kind", "Value": "test"}]}],
        )["GroupId"]
    queries: dict[str, dict[str, Any]] = {
        "names": {"names": ["reader-a", "reader-b", "not-there"]},
        # One well-formed ID that names no group: EC2 refuses the call, it is left out.
        "ids": {"ids": [made["reader-b"], "sg-0123456789abcdef0", made["reader-c"]]},
        "tags": {"tags": {"team": "a", "kind": "test"}},
        "vpc": {},
    }
    asked = queries[query]
    direct = DirectReader(Caller(aws_pool))
    expected = sorted(g["GroupId"] for g in await direct.security_groups(
        vpc_id=aws_seed.vpc_id, **asked))
    snapshot = RegionSnapshot()
    with current_reconcile(priority=ReconcilePriority(LOW), reconcile_id="verify"):
        listed = SnapshotReader(DirectReader(Caller(aws_pool)), snapshot)
        got = sorted(g["GroupId"] for g in await listed.security_groups(
            vpc_id=aws_seed.vpc_id, **asked))
    assert snapshot.taken == 1
    assert got == expected
    assert set(made.values()) & set(got)
