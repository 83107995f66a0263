"""Class ownership rules, IngressClassParams, group keys and membership."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.ingress.classes import ClassError, classify, parse_params
from controller.ingress.groups import finalizer_of, index_keys, stack_labels
from runtime.reconcile import Request
from tests.support.objects import class_params, ingress, ingress_class, with_hostname
from tests.unit.controller.ingress.caches import caches, loader


def _ours(ing: dict[str, object], *objs: dict[str, object], flag: str = "alb") -> bool:
    return classify(ing, caches(*objs), ingress_class=flag) is not None


def test_ingress_class_controller_decides() -> None:
    assert _ours(ingress("a"), ingress_class("alb"))
    assert not _ours(ingress("a"), ingress_class("alb", controller="k8s.io/ingress-nginx"))
    assert not _ours(ingress("a"))  # the class does not exist (yet)


def test_legacy_annotation_decides_alone() -> None:
    legacy = {"kubernetes.io/ingress.class": "alb"}
    assert _ours(ingress("a", class_name=None, annotations=legacy))
    # The annotation wins even over an ingressClassName of ours.
    assert not _ours(ingress("a", annotations={"kubernetes.io/ingress.class": "nginx"}),
                     ingress_class("alb"))
    assert _ours(ingress("a", class_name=None, annotations={"kubernetes.io/ingress.class": "x"}),
                 flag="x")
    # An empty --ingress-class matches the annotation value "alb".
    assert _ours(ingress("a", class_name=None, annotations=legacy), flag="")


def test_no_class_default_class_and_empty_flag() -> None:
    bare = ingress("a", class_name=None)
    assert not _ours(bare)
    assert _ours(bare, flag="")
    assert _ours(bare, ingress_class("d", default=True))
    assert not _ours(bare, ingress_class("d", default=True, controller="other"))


def test_params_errors_and_namespace_selector() -> None:
    ing = ingress("a")
    with pytest.raises(ClassError, match="IngressClassParams p not found"):
        classify(ing, caches(ingress_class("alb", params="p")), ingress_class="alb")
    selective = class_params("p", {"namespaceSelector": {"matchLabels": {"team": "x"}}})
    with pytest.raises(ClassError, match="namespace default is not selected"):
        classify(ing, caches(ingress_class("alb", params="p"), selective), ingress_class="alb")
    ns = {"metadata": {"name": "default", "labels": {"team": "x"}}}
    info = classify(ing, caches(ingress_class("alb", params="p"), selective, ns),
                    ingress_class="alb")
    assert info is not None
    assert info.params is not None
    assert info.params.name == "p"


def test_group_keys_never_collide() -> None:
    explicit = Request("", "shop")
    implicit = Request("shop", "web")
    assert explicit.key != implicit.key
    assert finalizer_of(explicit) == "group.ingress.k8s.aws/shop"
    assert finalizer_of(implicit) == "ingress.k8s.aws/resources"
    assert stack_labels(explicit) == {"ingress.k8s.aws/stack": "shop"}
    assert stack_labels(implicit) == {"ingress.k8s.aws/stack-namespace": "shop",
                                      "ingress.k8s.aws/stack-name": "web"}
    ing = ingress("web", namespace="shop", annotations={
        "alb.ingress.kubernetes.io/group.name": "shop"},
        finalizers=["group.ingress.k8s.aws/old"])
    assert set(index_keys(ing)) == {"shop/web", "shop", "old"}


def test_load_sorts_members_and_finds_leavers() -> None:
    g = {"alb.ingress.kubernetes.io/group.name": "g"}
    c = caches(
        ingress_class("alb"),
        ingress("z", annotations={**g, "alb.ingress.kubernetes.io/group.order": "-1"}),
        ingress("b", annotations=g),
        ingress("a", namespace="other", annotations=g),
        with_hostname(ingress("gone", annotations={}, finalizers=["group.ingress.k8s.aws/g"])),
        # The finalizer alone, never deployed with: a stray, which only gets it released.
        ingress("forged", annotations={}, finalizers=["group.ingress.k8s.aws/g"]),
        ingress("bad", annotations={**g, "alb.ingress.kubernetes.io/group.order": "5000"}),
    )
    group = loader(c).load(Request("", "g"))
    assert [m.key for m in group.members] == ["default/z", "default/b", "default/bad",
                                              "other/a"]
    assert [i["metadata"]["name"] for i in group.leaving] == ["gone"]
    assert [i["metadata"]["name"] for i in group.strays] == ["forged"]
    assert len(group.errors) == 1
    assert "group.order" in group.errors[0][1]


def test_params_group_membership() -> None:
    c = caches(ingress_class("alb", params="p"), class_params("p", {"group": {"name": "pg"}}),
               ingress("one"), ingress("two", annotations={
                   "alb.ingress.kubernetes.io/group.name": "ignored"}))
    group = loader(c).load(Request("", "pg"))
    assert [m.key for m in group.members] == ["default/one", "default/two"]
    assert loader(c).load(Request("", "ignored")).members == ()


def test_invalid_group_name_is_an_error_on_the_implicit_group() -> None:
    c = caches(ingress_class("alb"),
               ingress("a", annotations={"alb.ingress.kubernetes.io/group.name": "Bad_Name"}))
    group = loader(c).load(Request("default", "a"))
    assert [m.key for m in group.members] == ["default/a"]
    assert "not a valid group name" in group.errors[0][1]


@pytest.mark.parametrize(("spec", "reason"), [
    ({"loadBalancerName": "internal-web"}, 'spec.loadBalancerName: "internal-web" must not'),
    ({"certificateArn": ["arn:aws:s3:::b"]}, "spec.certificateArn: \"arn:aws:s3:::b\" has"),
    ({"inboundCIDRs": ["10.0.0.0/33"]}, 'spec.inboundCIDRs: "10.0.0.0/33" has'),
    ({"subnets": {"ids": [" "]}}, "spec.subnets.ids"),
])
def test_class_parameters_follow_the_annotations_rules(spec: dict[str, Any], reason: str) -> None:
    with pytest.raises(ClassError, match=re.escape(reason)):
        parse_params({"metadata": {"name": "p"}, "spec": spec})
