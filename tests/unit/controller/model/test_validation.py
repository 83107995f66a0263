"""Limits moto does not enforce are enforced by the model, with one clear message."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from controller.model import (
    ForwardAction,
    HostHeaderCondition,
    InvalidStack,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    Ref,
    StackBuilder,
    StackContext,
    SubnetDiscovery,
    TargetGroup,
    TargetGroupBindingResource,
    WeightedTargetGroup,
)
from controller.model.targetgroup import ServiceReference


def _builder() -> tuple[StackBuilder, Ref, Ref]:
    b = StackBuilder("ns/web", kind="ingress", context=StackContext(
        cluster_name="c", region="us-west-2", vpc_id="vpc-1"))
    tg = b.add_target_group("ns/svc:80", TargetGroup(name="k8s-ns-svc-0123456789",
                                                     protocol="HTTP", port=80, target_type="ip"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-ns-web-0123456789", type="application", subnets=SubnetDiscovery(role="elb")))
    return b, tg, lb


def _forward(tg: Ref, weight: int = 1) -> ForwardAction:
    return ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tg, weight=weight)])


def test_weight_above_999_rejected() -> None:
    with pytest.raises(ValidationError, match="999"):
        WeightedTargetGroup(target_group_arn="arn:x", weight=1000)


def test_more_than_five_condition_values_rejected() -> None:
    b, tg, lb = _builder()
    listener = b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                             default_actions=[_forward(tg)]))
    with pytest.raises(ValidationError, match="6 condition values"):
        ListenerRule(listener_arn=listener, priority=1, actions=[_forward(tg)], conditions=[
            HostHeaderCondition(values=["a", "b", "c"]),
            PathPatternCondition(values=["/1", "/2", "/3"])])


def test_tag_limit_counts_tracking_tags() -> None:
    tags = {f"k{i}": "v" for i in range(48)}
    with pytest.raises(ValidationError, match="at most 47"):
        TargetGroup(name="tg", protocol="HTTP", port=80, target_type="ip", tags=tags)
    TargetGroup(name="tg", protocol="HTTP", port=80, target_type="ip", tags=dict(list(
        tags.items())[:47]))


def test_one_listener_per_port() -> None:
    b, tg, lb = _builder()
    b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                  default_actions=[_forward(tg)]))
    b.add_listener("80-again", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                        default_actions=[_forward(tg)]))
    with pytest.raises(InvalidStack, match="both use port 80") as info:
        b.build()
    assert "\n" not in str(info.value)
    assert "errors.pydantic.dev" not in str(info.value)


def test_dangling_ref_rejected() -> None:
    b, _tg, lb = _builder()
    ghost = Ref.to("AWS::ElasticLoadBalancingV2::TargetGroup", "ns/ghost:80", "targetGroupARN")
    b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                  default_actions=[_forward(ghost)]))
    with pytest.raises(InvalidStack, match="points at no resource"):
        b.build()


def test_duplicate_rule_priority_rejected() -> None:
    b, tg, lb = _builder()
    listener = b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                             default_actions=[_forward(tg)]))
    for rid in ("80:1", "80:2"):
        b.add_rule(rid, ListenerRule(listener_arn=listener, priority=5, actions=[_forward(tg)],
                                     conditions=[PathPatternCondition(values=["/" + rid])]))
    with pytest.raises(InvalidStack, match="share priority 5"):
        b.build()


def test_names_and_refs_validated() -> None:
    with pytest.raises(ValidationError, match=r"1\.\.32"):
        TargetGroup(name="-bad", protocol="HTTP", port=80, target_type="ip")
    with pytest.raises(ValidationError, match=r"1\.\.32"):
        LoadBalancer(name="x" * 33, type="network", subnets=["subnet-1"])
    with pytest.raises(ValidationError, match="invalid \\$ref"):
        Ref.model_validate({"$ref": "#/resources/Nope/x/status/arn"})


def test_bindings_and_iteration_order() -> None:
    b, tg, lb = _builder()
    b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                  default_actions=[_forward(tg)]))
    b.add("ns/svc:80", TargetGroupBindingResource(
        name="k8s-ns-svc-0123456789", namespace="ns", target_group_arn=tg, target_type="ip",
        service_ref=ServiceReference(name="svc", port=80)))
    stack = b.build()
    kinds = [rtype.rsplit("::", 1)[-1] for rtype, _, _ in stack.iter_resources()]
    assert kinds == ["TargetGroup", "LoadBalancer", "Listener", "TargetGroupBinding"]
    assert stack.forward_target_group_refs() == {"ns/svc:80"}
    doc: dict[str, Any] = stack.model_dump(by_alias=True)
    assert doc["target_group_bindings"]["ns/svc:80"]["target_group_arn"] == tg.model_dump(
        by_alias=True)
