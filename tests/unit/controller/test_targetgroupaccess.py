"""The access rules (`controller/targetgroupaccess.py`): which target groups an object may act
on."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import targetgroupaccess
from controller.apis import REGISTERED_TARGET_GROUP_ANNOTATION
from controller.targetgroupaccess import (
    TARGET_GROUP_INDEX,
    TargetGroupFacts,
    TargetGroupInAnotherVPC,
    TargetGroupInUse,
    TargetGroupOfAnotherCluster,
    TargetGroupOfAnotherNamespace,
)
from runtime.store import Store

VPC = "vpc-0aaaaaaaaaaaaaaaa"
CLUSTER = "prod"
ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/tg/0123456789abcdef"


def facts(*, vpc: str = VPC) -> TargetGroupFacts:
    return TargetGroupFacts(arn=ARN, name="tg", vpc_id=vpc)


def check(tg: TargetGroupFacts, namespace: str = "shop", vpc: str = VPC) -> None:
    targetgroupaccess.check_target_group(tg, namespace=namespace, vpc_id=vpc, cluster_name=CLUSTER)


def test_an_untagged_target_group_in_the_vpc_may_be_used_by_anyone() -> None:
    check(facts())
    check(facts(), namespace="attacker")


def test_another_vpc_is_refused_unless_it_is_the_one_named() -> None:
    other = facts(vpc="vpc-0bbbbbbbbbbbbbbbb")
    with pytest.raises(TargetGroupInAnotherVPC, match="vpc-0bbbbbbbbbbbbbbbb, not " + VPC):
        check(other)
    check(other, vpc="vpc-0bbbbbbbbbbbbbbbb")  # a binding's vpcID
    assert TargetGroupInAnotherVPC.condition_reason == "TargetGroupInAnotherVPC"


def test_a_target_group_of_another_cluster_is_refused() -> None:
    tg = TargetGroupFacts(arn=ARN, name="tg", vpc_id=VPC,
                          tags={"elbv2.k8s.aws/cluster": "staging"})
    with pytest.raises(TargetGroupOfAnotherCluster, match="cluster staging"):
        check(tg)


def test_our_own_stack_target_group_belongs_to_its_namespace() -> None:
    service = TargetGroupFacts(arn=ARN, name="tg", vpc_id=VPC, tags={
        "elbv2.k8s.aws/cluster": CLUSTER, "service.k8s.aws/stack": "shop/web",
        "service.k8s.aws/resource": "shop/web:80"})
    ingress = TargetGroupFacts(arn=ARN, name="tg", vpc_id=VPC, tags={
        "elbv2.k8s.aws/cluster": CLUSTER, "ingress.k8s.aws/stack": "storefront",
        "ingress.k8s.aws/resource": "shop/front-web:80"})
    for tg in (service, ingress):
        check(tg, namespace="shop")
        with pytest.raises(TargetGroupOfAnotherNamespace, match="namespace shop"):
            check(tg, namespace="attacker")
    # Tagged for our cluster without a stack (made by hand): nobody's namespace.
    check(TargetGroupFacts(arn=ARN, name="tg", vpc_id=VPC,
                           tags={"elbv2.k8s.aws/cluster": CLUSTER}), namespace="attacker")


def _binding(ns: str, name: str, *, created: str, mc: bool = False, holds: bool = False,
             arn: str = ARN) -> dict[str, Any]:
    annotations = {REGISTERED_TARGET_GROUP_ANNOTATION: arn} if holds else {}
    spec: dict[str, Any] = {"targetGroupARN": arn, "serviceRef": {"name": "s", "port": 80}}
    if mc:
        spec["multiClusterTargetGroup"] = True
    return {"metadata": {"namespace": ns, "name": name, "creationTimestamp": created,
                         "annotations": annotations}, "spec": spec}


def test_a_binding_is_refused_a_target_group_another_binding_holds() -> None:
    victim = _binding("shop", "web", created="2024-01-01T00:00:00Z", holds=True)
    attacker = _binding("attacker", "grab", created="2023-01-01T00:00:00Z")
    tg = facts()
    with pytest.raises(TargetGroupInUse, match="shop/web"):
        targetgroupaccess.check_rivals(attacker, [victim, attacker], tg)
    targetgroupaccess.check_rivals(victim, [victim, attacker], tg)
    # Multi-cluster on both sides shares only within one namespace.
    shared_victim = _binding("shop", "web", created="2024-01-01T00:00:00Z", holds=True, mc=True)
    shared_attacker = _binding("attacker", "grab", created="2024-02-01T00:00:00Z", mc=True)
    with pytest.raises(TargetGroupInUse):
        targetgroupaccess.check_rivals(shared_attacker, [shared_victim], tg)
    blue = _binding("shop", "blue", created="2024-02-01T00:00:00Z", mc=True)
    targetgroupaccess.check_rivals(blue, [shared_victim, blue], tg)


def test_of_two_holders_the_older_keeps_the_target_group() -> None:
    old = _binding("shop", "old", created="2024-01-01T00:00:00Z", holds=True)
    new = _binding("shop", "new", created="2024-03-01T00:00:00Z", holds=True)
    assert targetgroupaccess.rival(new, [old, new], ARN) == old
    assert targetgroupaccess.rival(old, [old, new], ARN) is None


def test_a_binding_that_never_registered_blocks_nobody() -> None:
    broken = _binding("shop", "broken", created="2023-01-01T00:00:00Z")
    good = _binding("shop", "good", created="2024-01-01T00:00:00Z")
    assert targetgroupaccess.rival(good, [broken, good], ARN) is None


def test_forwarding_to_a_target_group_another_namespace_binds_is_refused() -> None:
    victim = _binding("shop", "web", created="2024-01-01T00:00:00Z", holds=True)
    with pytest.raises(TargetGroupOfAnotherNamespace, match="shop/web"):
        targetgroupaccess.check_forward(facts(), namespace="attacker", bindings=[victim])
    targetgroupaccess.check_forward(facts(), namespace="shop", bindings=[victim])


def test_bindings_of_finds_a_target_group_by_arn_and_by_name() -> None:
    store = Store()
    store.add_indexer(TARGET_GROUP_INDEX, targetgroupaccess.binding_target_group_index)
    by_arn = _binding("a", "by-arn", created="1")
    by_name = {"metadata": {"namespace": "b", "name": "by-name"},
               "spec": {"targetGroupName": "tg"}}
    other = _binding("c", "other", created="1", arn=ARN.replace("/tg/", "/other/"))
    for obj in (by_arn, by_name, other):
        store.upsert(obj)
    found = targetgroupaccess.bindings_of(store.by_index, facts())
    assert [o["metadata"]["name"] for o in found] == ["by-arn", "by-name"]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=15), inner, max_size=3), max_leaves=10))
def test_the_index_never_raises(spec: Any) -> None:
    values = targetgroupaccess.binding_target_group_index({"metadata": {"name": "x"}, "spec": spec})
    assert all(v.startswith(("arn:", "name:")) for v in values)
