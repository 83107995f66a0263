"""The refusals a TargetGroupBinding meets before any registration (`checks.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis.targetgroupbinding import InvalidSpec, parse_spec
from controller.aws import Role
from controller.targetgroupaccess import (
    TARGET_GROUP_INDEX,
    TargetGroupInAnotherVPC,
    TargetGroupOfAnotherCluster,
    TargetGroupOfAnotherNamespace,
    binding_target_group_index,
)
from controller.targetgroupbinding.checks import (
    IPAddressTypeMismatch,
    Scope,
    check_recorded,
    check_role_target_type,
    check_target_group,
    role_of,
)
from controller.targetgroupbinding.targetgroups import TargetGroupInfo
from runtime.store import Store

ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/tg/0123456789abcdef"
SCOPE = Scope(cluster_name="prod", vpc_id="vpc-0aaaaaaaaaaaaaaaa")


def binding(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "shop", "name": "web"},
            "spec": {"targetGroupARN": ARN, "serviceRef": {"name": "web", "port": 80}, **spec}}


def tg(*, vpc: str = "vpc-0aaaaaaaaaaaaaaaa", family: str = "ipv4",
       tags: dict[str, str] | None = None) -> TargetGroupInfo:
    return TargetGroupInfo(arn=ARN, name="tg", target_type="ip", vpc_id=vpc,
                           ip_address_type=family, port=80, tags=tags or {})


def run(obj: dict[str, Any], info: TargetGroupInfo) -> str:
    store = Store()
    store.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    store.upsert(obj)
    return check_target_group(obj, parse_spec(obj), info, scope=SCOPE, bindings=store)


def test_a_cross_account_role_is_the_binding_s_role_with_its_external_id() -> None:
    spec = parse_spec(binding(iamRoleArnToAssume="arn:aws:iam::999999999999:role/x",
                              assumeRoleExternalId="shared-secret"))
    assert role_of(spec) == Role(arn="arn:aws:iam::999999999999:role/x",
                                 external_id="shared-secret")
    assert role_of(spec) != Role(arn="arn:aws:iam::999999999999:role/x")
    assert role_of(parse_spec(binding())) is None


def test_instance_targets_are_refused_with_a_role_as_upstream_refuses_them() -> None:
    spec = parse_spec(binding(iamRoleArnToAssume="arn:aws:iam::999999999999:role/x"))
    with pytest.raises(InvalidSpec) as refused:
        check_role_target_type(spec, "instance")
    assert str(refused.value) == "Unable to use instance target type while using assume role"
    check_role_target_type(spec, "ip")
    check_role_target_type(parse_spec(binding()), "instance")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("iamRoleArnToAssume", "arn:aws:iam::99:role/x", "is not an IAM role ARN"),
    ("iamRoleArnToAssume", "arn:aws:iam::999999999999:user/x", "is not an IAM role ARN"),
    ("iamRoleArnToAssume", "role/x", "is not an IAM role ARN"),
    ("assumeRoleExternalId", "has spaces", "2 to 1224 letters"),
    ("assumeRoleExternalId", "x", "2 to 1224 letters"),
])
def test_what_sts_would_refuse_is_refused_by_the_parser(field: str, value: str,
                                                         message: str) -> None:
    spec = {"iamRoleArnToAssume": "arn:aws:iam::999999999999:role/x", field: value}
    with pytest.raises(InvalidSpec, match=f"spec: {field}: .*{message}"):
        parse_spec(binding(**spec))


def test_the_ip_family_must_match_the_target_group() -> None:
    assert run(binding(), tg(family="ipv6")) == "ipv6"  # inferred from the target group
    assert run(binding(ipAddressType="ipv4"), tg()) == "ipv4"
    with pytest.raises(IPAddressTypeMismatch, match="ipv6 does not match"):
        run(binding(ipAddressType="ipv6"), tg())


def test_vpc_id_names_the_one_other_vpc_a_binding_may_use() -> None:
    other = tg(vpc="vpc-0bbbbbbbbbbbbbbbb")
    with pytest.raises(TargetGroupInAnotherVPC):
        run(binding(), other)
    with pytest.raises(TargetGroupInAnotherVPC):
        run(binding(vpcID="vpc-0ccccccccccccccccc"), other)
    assert run(binding(vpcID="vpc-0bbbbbbbbbbbbbbbb"), other) == "ipv4"


def test_another_clusters_target_group_is_refused() -> None:
    with pytest.raises(TargetGroupOfAnotherCluster):
        run(binding(), tg(tags={"elbv2.k8s.aws/cluster": "staging"}))
    assert run(binding(), tg(tags={"elbv2.k8s.aws/cluster": "prod"})) == "ipv4"


def test_a_recorded_target_group_passes_the_same_ownership_checks() -> None:
    """The record is an annotation anyone editing the binding may write."""
    check_recorded(binding(), tg(), scope=SCOPE)
    # The spec may since have left the VPC it names, or named one: either VPC is its own.
    check_recorded(binding(vpcID="vpc-0bbbbbbbbbbbbbbbb"), tg(), scope=SCOPE)
    check_recorded(binding(vpcID="vpc-0bbbbbbbbbbbbbbbb"), tg(vpc="vpc-0bbbbbbbbbbbbbbbb"),
                   scope=SCOPE)
    with pytest.raises(TargetGroupInAnotherVPC):
        check_recorded(binding(), tg(vpc="vpc-0bbbbbbbbbbbbbbbb"), scope=SCOPE)
    with pytest.raises(TargetGroupOfAnotherCluster):
        check_recorded(binding(), tg(tags={"elbv2.k8s.aws/cluster": "staging"}), scope=SCOPE)
    theirs = {"elbv2.k8s.aws/cluster": "prod", "service.k8s.aws/stack": "other/web",
              "service.k8s.aws/resource": "other/web:80"}
    with pytest.raises(TargetGroupOfAnotherNamespace):
        check_recorded(binding(), tg(tags=theirs), scope=SCOPE)
