"""The stand-in answers DescribeTargetGroups in pages as AWS does (moto_fidelity.py): at most
`PageSize` target groups, a `NextMarker` while more follow, 400 a page when no size is given."""

from __future__ import annotations

from typing import Any

from controller.standins import AwsSeed

GROUPS = 7


def _create(elbv2: Any, seed: AwsSeed) -> list[str]:
    return [elbv2.create_target_group(Name=f"page-{i}", Protocol="HTTP", Port=80,
                                      VpcId=seed.vpc_id, TargetType="ip")
            ["TargetGroups"][0]["TargetGroupArn"] for i in range(GROUPS)]


def test_pages_follow_page_size_and_marker(elbv2: Any, aws_seed: AwsSeed) -> None:
    arns = _create(elbv2, aws_seed)
    seen: list[str] = []
    sizes: list[int] = []
    marker: str | None = None
    while True:
        params: dict[str, Any] = {"PageSize": 3}
        if marker:
            params["Marker"] = marker
        page = elbv2.describe_target_groups(**params)
        sizes.append(len(page["TargetGroups"]))
        seen += [g["TargetGroupArn"] for g in page["TargetGroups"]]
        marker = page.get("NextMarker")
        if not marker:
            break
    assert sizes == [3, 3, 1]
    assert sorted(seen) == sorted(arns)
    assert len(set(seen)) == GROUPS
    # botocore's paginator reads the same pages.
    paginated = [g["TargetGroupArn"] for page in elbv2.get_paginator(
        "describe_target_groups").paginate(PaginationConfig={"PageSize": 2})
        for g in page["TargetGroups"]]
    assert sorted(paginated) == sorted(arns)
    assert len(paginated) == GROUPS


def test_without_a_page_size_up_to_400_come_at_once(elbv2: Any, aws_seed: AwsSeed) -> None:
    arns = _create(elbv2, aws_seed)
    whole = elbv2.describe_target_groups()
    assert sorted(g["TargetGroupArn"] for g in whole["TargetGroups"]) == sorted(arns)
    assert "NextMarker" not in whole
    by_arn = elbv2.describe_target_groups(TargetGroupArns=arns[:2], PageSize=1)
    assert len(by_arn["TargetGroups"]) == 1
    assert by_arn.get("NextMarker")
