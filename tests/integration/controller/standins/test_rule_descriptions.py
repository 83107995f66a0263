"""The stand-in's UpdateSecurityGroupRuleDescriptionsIngress answers as EC2 does: a rule is its
protocol, ports and source, its description changes in place, and a rule the group does not
have is `InvalidPermission.NotFound` with nothing changed (moto alone skips it and updates the
rest)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed


def _descriptions(ec2: Any, group: str) -> set[tuple[int, str, str]]:
    found = set()
    for perm in ec2.describe_security_groups(GroupIds=[group])["SecurityGroups"][0][
            "IpPermissions"]:
        for key, field in (("IpRanges", "CidrIp"), ("UserIdGroupPairs", "GroupId")):
            for item in perm.get(key) or []:
                found.add((int(perm["FromPort"]), str(item[field]),
                           str(item.get("Description") or "")))
    return found


def test_descriptions_change_in_place_and_a_missing_rule_changes_nothing(
        ec2: Any, aws_seed: AwsSeed) -> None:
    group = ec2.create_security_group(GroupName="nodes-x", Description="x",
                                      VpcId=aws_seed.vpc_id)["GroupId"]
    source = ec2.create_security_group(GroupName="lb-x", Description="x",
                                       VpcId=aws_seed.vpc_id)["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80,
         "UserIdGroupPairs": [{"GroupId": source, "Description": "old"}]},
        {"IpProtocol": "tcp", "FromPort": 81, "ToPort": 81,
         "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "old"}]}])

    ec2.update_security_group_rule_descriptions_ingress(GroupId=group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80,
         "UserIdGroupPairs": [{"GroupId": source, "Description": "new"}]}])
    assert _descriptions(ec2, group) == {(80, source, "new"), (81, "10.0.0.0/8", "old")}

    with pytest.raises(ClientError) as refused:
        ec2.update_security_group_rule_descriptions_ingress(GroupId=group, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 81, "ToPort": 81,
             "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "new"}]},
            {"IpProtocol": "tcp", "FromPort": 99, "ToPort": 99,
             "UserIdGroupPairs": [{"GroupId": source, "Description": "new"}]}])
    assert refused.value.response["Error"]["Code"] == "InvalidPermission.NotFound"
    assert _descriptions(ec2, group) == {(80, source, "new"), (81, "10.0.0.0/8", "old")}
