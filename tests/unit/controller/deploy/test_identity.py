"""Matching a stack's resources by tags (pure): which target group is current, which are
orphans, and what follows from the existing load balancer."""

from __future__ import annotations

import pytest

from controller.deploy import DeployError, OwnershipConflict
from controller.deploy.identity import (
    follow_existing,
    match_load_balancer,
    match_target_groups,
)
from controller.deploy.tags import Tracking
from controller.model import LoadBalancer, SubnetDiscovery, TargetGroup

TRACKING = Tracking(cluster="c", kind="service", stack_id="ns/web")
RID = "ns/web:80"


def _tags(rid: str | None, *, stack: str = "ns/web", cluster_key: str = "elbv2.k8s.aws/cluster"
          ) -> dict[str, str]:
    tags = {cluster_key: "c", "service.k8s.aws/stack": stack}
    if rid is not None:
        tags["service.k8s.aws/resource"] = rid
    return tags


def _tg(arn: str, name: str, *, protocol: str = "TCP", target_type: str = "ip") -> dict[str, str]:
    return {"TargetGroupArn": arn, "TargetGroupName": name, "Protocol": protocol,
            "TargetType": target_type}


MODEL = {RID: TargetGroup(name="k8s-ns-web-new", protocol="TCP", port=80, target_type="ip")}


def test_the_target_group_in_use_wins_whatever_its_name() -> None:
    descs = {"a": _tg("a", "k8s-ns-web-new"), "b": _tg("b", "k8s-ns-web-old")}
    tags = {"a": _tags(RID), "b": _tags(RID)}
    found = match_target_groups(TRACKING, MODEL, descs, tags, in_use={"b"})
    assert found.current[RID]["TargetGroupArn"] == "b"
    assert (found.orphans, found.unmatched) == (["a"], [])
    # Nothing in use: the model's name decides.
    found = match_target_groups(TRACKING, MODEL, descs, tags)
    assert found.current[RID]["TargetGroupArn"] == "a"


def test_what_cannot_change_in_place_is_an_orphan_and_others_are_left_alone() -> None:
    descs = {"a": _tg("a", "k8s-ns-web-old", protocol="UDP"), "b": _tg("b", "mine"),
             "c": _tg("c", "other-stack"), "d": _tg("d", "no-resource-id")}
    tags = {"a": _tags(RID), "b": {}, "c": _tags(RID, stack="ns/other"), "d": _tags(None)}
    found = match_target_groups(TRACKING, MODEL, descs, tags)
    assert (found.current, found.orphans, found.unmatched) == ({}, ["a"], [RID])


def test_a_name_taken_before_a_create_is_reported() -> None:
    with pytest.raises(OwnershipConflict, match="k8s-ns-web-new is taken"):
        match_target_groups(TRACKING, MODEL, {"x": _tg("x", "k8s-ns-web-new")}, {"x": {}})
    with pytest.raises(DeployError, match="cannot be changed in place"):
        match_target_groups(TRACKING, MODEL, {"x": _tg("x", "k8s-ns-web-new", protocol="UDP")},
                            {"x": _tags(RID)})


def test_the_legacy_cluster_tag_identifies_too() -> None:
    descs = {"a": _tg("a", "old")}
    tags = {"a": _tags(RID, cluster_key="ingress.k8s.aws/cluster")}
    assert match_target_groups(TRACKING, MODEL, descs, tags).current[RID]["TargetGroupArn"] == "a"


NLB = LoadBalancer(name="k8s-ns-web-new", type="network", scheme="internal",
                   keep_existing_scheme=True, subnets=SubnetDiscovery(role="internal-elb"))


def _lb(arn: str, name: str, scheme: str) -> dict[str, object]:
    return {"LoadBalancerArn": arn, "LoadBalancerName": name, "Type": "network",
            "Scheme": scheme, "AvailabilityZones": [{"SubnetId": "subnet-b"},
                                                    {"SubnetId": "subnet-a"}]}


def test_an_existing_scheme_is_kept_and_its_subnets_with_it() -> None:
    existing = _lb("x", "k8s-ns-web-old", "internet-facing")
    match = match_load_balancer(TRACKING, "LoadBalancer", NLB, {"x": existing},
                                {"x": _tags("LoadBalancer")})
    assert match.current is existing
    followed = follow_existing(NLB, existing, vpc_id="vpc-1")
    assert (followed.scheme, followed.subnets) == ("internet-facing", ("subnet-a", "subnet-b"))
    elsewhere = follow_existing(NLB, {**existing, "VpcId": "vpc-2"}, vpc_id="vpc-1")
    assert (elsewhere.scheme, elsewhere.subnets) == ("internet-facing",
                                                     SubnetDiscovery(role="elb"))
    # Asked for explicitly, another scheme is a replacement: the old one an orphan.
    explicit = NLB.model_copy(update={"keep_existing_scheme": False})
    match = match_load_balancer(TRACKING, "LoadBalancer", explicit, {"x": existing},
                                {"x": _tags("LoadBalancer")})
    assert (match.current, match.orphans) == (None, ["x"])
    assert follow_existing(explicit, None, vpc_id="vpc-1") is explicit


def test_a_frontend_nlb_is_replaced_under_its_own_name() -> None:
    """Upstream's frontend NLB name ignores its scheme: a scheme change replaces it under the
    same name (the old one an orphan, deleted first); any other load balancer holding the
    name is still refused."""
    nlb = LoadBalancer(name="k8s-ns-web-nlb", type="network", scheme="internet-facing",
                       replaced_under_same_name=True,
                       subnets=SubnetDiscovery(role="elb"))
    old = _lb("x", "k8s-ns-web-nlb", "internal")
    match = match_load_balancer(TRACKING, "FrontendNlb", nlb, {"x": old},
                                {"x": _tags("FrontendNlb")})
    assert (match.current, match.orphans) == (None, ["x"])
    with pytest.raises(DeployError, match="cannot be changed in place"):
        match_load_balancer(TRACKING, "FrontendNlb", nlb, {"x": old},
                            {"x": _tags("LoadBalancer")})
    with pytest.raises(DeployError, match="cannot be changed in place"):
        match_load_balancer(TRACKING, "FrontendNlb",
                            nlb.model_copy(update={"replaced_under_same_name": False}),
                            {"x": old}, {"x": _tags("FrontendNlb")})
    with pytest.raises(OwnershipConflict, match="is taken"):
        match_load_balancer(TRACKING, "FrontendNlb", nlb, {"x": old}, {"x": {}})
