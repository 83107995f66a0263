"""The feature gates aiolbc acts on, each in both states, through the model builders as
`aiolbc run` sets them up (`--feature-gates`, `controller/config/featuregates.py`)."""

from __future__ import annotations

import dataclasses

import pytest

from controller.config import parse_config
from controller.errors import InvalidInput
from controller.ingress import build_group
from controller.model import Stack
from controller.service import ModelSettings, build_stack
from controller.settings import ClusterScope, StackDefaults
from runtime.featuregates import FeatureGates
from runtime.reconcile import Request
from tests.support.objects import backend_service, ingress, ingress_class, web_service
from tests.unit.controller.ingress.caches import SETTINGS as INGRESS
from tests.unit.controller.ingress.caches import caches, loader

A = "alb.ingress.kubernetes.io/"


def gates(text: str = "") -> FeatureGates:
    """The process's gates as `aiolbc run --feature-gates=<text>` has them."""
    argv = ["--cluster-name", "c", "--aws-vpc-id", "vpc-1"]
    return parse_config([*argv, f"--feature-gates={text}"] if text else argv).gates


def service(text: str = "", *, tags: dict[str, str] | None = None) -> ModelSettings:
    return ModelSettings(cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"),
                         defaults=StackDefaults(tags=tags or {}), gates=gates(text))


def _ingress_stack(text: str, annotations: dict[str, str], *,
                   tags: dict[str, str] | None = None) -> Stack:
    c = caches(ingress_class("alb"), backend_service("web"),
               ingress("a", annotations=annotations))
    settings = dataclasses.replace(
        INGRESS, gates=gates(text), defaults=dataclasses.replace(INGRESS.defaults,
                                                                 tags=tags or {}))
    return build_group(loader(c).load(Request("default", "a")), c, settings).stack


def test_enable_ip_target_type() -> None:
    ip = web_service({"aws-load-balancer-nlb-target-type": "ip"})
    assert build_stack(ip, settings=service()).target_groups["shop/web:80"].target_type == "ip"
    with pytest.raises(InvalidInput, match=r"unsupported targetType: ip when "
                       r"EnableIPTargetType is false"):
        build_stack(ip, settings=service("EnableIPTargetType=false"))
    # instance targets are not concerned
    build_stack(web_service(), settings=service("EnableIPTargetType=false"))

    _ingress_stack("", {A + "target-type": "ip"})
    with pytest.raises(InvalidInput, match=r"unsupported targetType: ip when "
                       r"EnableIPTargetType is false"):
        _ingress_stack("EnableIPTargetType=false", {A + "target-type": "ip"})
    _ingress_stack("EnableIPTargetType=false", {A + "target-type": "instance"})


def test_nlb_security_group() -> None:
    on = build_stack(web_service(), settings=service())
    assert on.security_groups
    assert on.load_balancers["LoadBalancer"].security_groups
    off = build_stack(web_service(), settings=service("NLBSecurityGroup=false"))
    assert not off.security_groups
    assert not off.load_balancers["LoadBalancer"].security_groups


def test_enable_default_tags_low_priority() -> None:
    tagged = web_service({"aws-load-balancer-additional-resource-tags": "team=web,owner=a"})
    high = build_stack(tagged, settings=service(tags={"team": "platform"}))
    assert high.load_balancers["LoadBalancer"].tags == {"team": "platform", "owner": "a"}
    low = build_stack(tagged, settings=service("EnableDefaultTagsLowPriority=true",
                                               tags={"team": "platform"}))
    assert low.load_balancers["LoadBalancer"].tags == {"team": "web", "owner": "a"}
    assert {tg.tags["team"] for tg in low.target_groups.values()} == {"web"}

    annotated = {A + "tags": "team=web"}
    (lb,) = _ingress_stack("", annotated, tags={"team": "platform"}).load_balancers.values()
    assert lb.tags["team"] == "platform"
    (lb,) = _ingress_stack("EnableDefaultTagsLowPriority=true", annotated,
                           tags={"team": "platform"}).load_balancers.values()
    assert lb.tags["team"] == "web"
