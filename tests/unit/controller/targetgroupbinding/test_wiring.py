"""What the wiring reads ahead: the target groups the bindings name in the controller's own
account, never another account's (those are read as the binding's role); the index behind it
takes any object, however malformed."""

from __future__ import annotations

from typing import Any

import pytest

from controller.targetgroupaccess import TARGET_GROUP_INDEX, binding_target_group_index
from controller.targetgroupbinding.wiring import (
    CROSS_ACCOUNT_INDEX,
    cross_account_target_group_index,
    named_arns,
)
from runtime.store import Store

HOME = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/home/0123456789abcdef"
FAR = "arn:aws:elasticloadbalancing:us-west-2:111111111111:targetgroup/far/0123456789abcdef"


def _binding(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "shop", "name": name}, "spec": spec}


def test_only_the_controllers_own_account_is_read_ahead() -> None:
    store = Store()
    store.add_indexer(TARGET_GROUP_INDEX, binding_target_group_index)
    store.add_indexer(CROSS_ACCOUNT_INDEX, cross_account_target_group_index)
    store.upsert(_binding("home", targetGroupARN=HOME))
    store.upsert(_binding("far", targetGroupARN=FAR,
                          iamRoleArnToAssume="arn:aws:iam::111111111111:role/r"))
    assert named_arns(store) == [HOME]


@pytest.mark.parametrize("obj", [
    {}, {"spec": None}, {"spec": []}, {"spec": {"iamRoleArnToAssume": 7}},
    {"spec": {"iamRoleArnToAssume": "r", "targetGroupARN": ["x"]}},
    {"spec": {"iamRoleArnToAssume": "", "targetGroupARN": FAR}},
])
def test_the_index_never_raises(obj: dict[str, Any]) -> None:
    assert cross_account_target_group_index(obj) == []
