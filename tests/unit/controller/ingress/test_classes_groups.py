"""Class ownership rules, IngressClassParams, group keys and membership."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controller.annotations import AnnotationError
from controller.ingress.classes import (
    ClassError,
    classify,
    parse_params,
    served_controller,
    served_elsewhere,
)
from controller.ingress.groups import (
    check_group_name,
    finalizer_of,
    group_keys,
    index_keys,
    stack_labels,
)
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


# Kubernetes' own rules (apimachinery validation): a label value, and the name part of a
# qualified name such as a finalizer.
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


@pytest.mark.parametrize("name", ["a..b", "team.-web", "web-.x", "a", "a.b", "0", "x" * 63])
def test_upstream_group_names_are_groups(name: str) -> None:
    """Upstream's rule, pkg/ingress/group_loader.go: `^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$`, at
    most 63 characters. An Ingress that upstream finalized for such a group is one of its
    members, not an Ingress leaving it (which would delete the group's load balancer)."""
    ing = ingress("web", annotations={"alb.ingress.kubernetes.io/group.name": name},
                  finalizers=[f"group.ingress.k8s.aws/{name}"])
    group = loader(caches(ingress_class("alb"), ing)).load(Request("", name))
    assert [m.key for m in group.members] == ["default/web"]
    assert (group.leaving, group.errors) == ((), ())
    labels = stack_labels(group.request)
    assert all(_LABEL_VALUE.match(v) and len(v) <= 63 for v in labels.values())
    prefix, _, part = group.finalizer.partition("/")
    assert prefix == "group.ingress.k8s.aws"
    assert _QUALIFIED_NAME_PART.match(part)
    assert len(part) <= 63


@pytest.mark.parametrize("name", ["-web", "web-", ".web", "Web", "a_b", "x" * 64, ""])
def test_names_upstream_rejects_are_errors(name: str) -> None:
    with pytest.raises(AnnotationError, match="not a valid group name"):
        check_group_name("alb.ingress.kubernetes.io/group.name", name)


def test_each_controller_of_a_cluster_serves_its_own_classes() -> None:
    internal = served_controller("internal")
    assert internal == "ingress.k8s.aws/alb-internal"
    assert served_controller("") == "ingress.k8s.aws/alb"
    objs = (ingress_class("alb"), ingress_class("internal", controller=internal),
            ingress_class("nginx", controller="k8s.io/ingress-nginx"))
    c = caches(*objs)
    a, b = ingress("a", class_name="alb"), ingress("b", class_name="internal")
    n = ingress("n", class_name="nginx")
    assert classify(a, c, ingress_class="alb") is not None
    assert classify(b, c, ingress_class="alb") is None
    assert classify(b, c, ingress_class="internal", controller=internal) is not None
    assert classify(a, c, ingress_class="internal", controller=internal) is None
    # What another ALB controller serves is its own, finalizer or not; another kind of
    # controller's class is a class left (the Ingress leaves our group, as upstream).
    assert served_elsewhere(b, c)
    assert served_elsewhere(a, c, controller=internal)
    assert not served_elsewhere(a, c)
    assert not served_elsewhere(n, c)


def test_an_ingress_of_another_controller_is_not_leaving_the_group_it_was_deployed_with(
) -> None:
    deployed = with_hostname(ingress("a", class_name="internal", annotations={
        "alb.ingress.kubernetes.io/group.name": "g"}))
    deployed["metadata"]["finalizers"] = [finalizer_of(Request("", "g"))]
    c = caches(ingress_class("internal", controller=served_controller("internal")), deployed)
    assert group_keys(deployed, c, ingress_class="alb") == []
    group = loader(c).load(Request("", "g"))
    assert group.members == ()
    assert group.leaving == ()
