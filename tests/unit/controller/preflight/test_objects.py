"""The object scan of `aiolbc check`, on objects as the API server would hand them: hostile
bytes are a line of the report, never a crash; adoption by upstream's finalizers."""

from __future__ import annotations

from typing import Any

from controller.config import parse_config
from controller.preflight import objects
from controller.preflight.report import Finding
from controller.preflight.scan import scope_of
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    nlb_service,
    target_group_binding,
)

SCOPE = scope_of(parse_config(["--cluster-name=prod"]))


def _scan(*objs: dict[str, Any], params: tuple[dict[str, Any], ...] = ()) -> list[Finding]:
    ings = [o for o in objs if o.get("kind") == "Ingress"]
    svcs = [o for o in objs if o.get("kind") == "Service"]
    caches, lines = objects.ingress_caches(ings, svcs, [ingress_class("alb")], list(params), [])
    return [*lines, *objects.ingresses(caches, SCOPE), *objects.class_params(params),
            *objects.services(svcs, SCOPE)]


def test_upstream_finalizers_mean_adoption() -> None:
    found = _scan(ingress("shop", finalizers=["ingress.k8s.aws/resources"]),
                  backend_service("web"),
                  nlb_service("db", finalizers=["service.k8s.aws/resources"]),
                  nlb_service("new"))
    by = {(f.kind, f.object): f.category for f in found}
    assert by == {("Ingress", "default/shop"): "adopted", ("Service", "default/db"): "adopted",
                  ("Service", "default/new"): "served"}


def test_objects_of_another_class_are_not_reported() -> None:
    assert _scan(ingress("other", class_name="nginx"), nlb_service("x", load_balancer_class="x")
                 ) == []


def test_a_malformed_object_is_a_line_and_the_scan_goes_on() -> None:
    bad_order = ingress("order", {"group.order": "x" * 5})
    bad_rules = ingress("rules", rules=[5, "x", {"http": 5}])  # type: ignore[list-item]
    bad_backend = ingress("backend", spec={"defaultBackend": "x", "tls": "y"})
    bad_ports = nlb_service("ports")
    bad_ports["spec"]["ports"] = [{"port": "eighty", "protocol": 7}]
    no_ports = nlb_service("none")
    no_ports["spec"]["ports"] = "x"
    found = _scan(bad_order, bad_rules, bad_backend, bad_ports, no_ports, ingress("good"),
                  backend_service("web"), nlb_service("fine"))
    by: dict[tuple[str, str], list[str]] = {}
    for f in found:
        by.setdefault((f.kind, f.object), []).append(f.category)
    assert by == {
        ("Ingress", "default/order"): ["not-honoured"],
        ("Ingress", "default/rules"): ["not-honoured"],
        ("Ingress", "default/backend"): ["not-honoured"],
        ("Service", "default/ports"): ["not-honoured"],
        ("Service", "default/none"): ["not-honoured"],
        ("Ingress", "default/good"): ["served"],
        ("Service", "default/fine"): ["served"],
    }


def test_params_applied_through_the_legacy_class_annotation_are_a_change() -> None:
    legacy = ingress("old", class_name=None)
    legacy["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "alb"}
    params = class_params("p", {"scheme": "internal"})
    ings, svcs = [legacy], [backend_service("web")]
    with_params = [ingress_class("alb", params="p")]
    for classes, expected in ((with_params, ["changes", "served"]),
                              ([ingress_class("alb")], ["served"])):
        caches, _ = objects.ingress_caches(ings, svcs, classes, [params], [])
        assert [f.category for f in objects.ingresses(caches, SCOPE)] == expected


def test_class_params_fields_not_read_are_named() -> None:
    params = class_params("p", {"scheme": "internal", "futureField": {"x": "y"},
                                "ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-0a1"},
                                "PrefixListsIDs": ["pl-1"]})
    found = [f for f in _scan(params=(params,)) if f.kind == "IngressClassParams"]
    # Upstream's legacy PrefixListsIDs is read (as prefixListsIDs when that is not set).
    assert [f.subject for f in found] == ["spec.futureField"]
    refused = class_params("q", {"scheme": "sideways"})
    [line] = [f for f in _scan(params=(refused,)) if f.kind == "IngressClassParams"]
    assert line.category == "not-honoured"
    assert "spec.scheme" in line.message


def test_binding_networking_is_judged_on_the_spec_alone() -> None:
    arn = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/t/0123456789abcdef"
    from_group = target_group_binding("ok", service="web", arn=arn, namespace="shop", extra={
        "networking": {"ingress": [{"from": [{"securityGroup": {"groupID": "sg-1"}}],
                                    "ports": [{"port": 8080}]}]}})
    every_port = target_group_binding("wide", service="web", arn=arn, namespace="shop", extra={
        "networking": {"ingress": [{"from": [{"securityGroup": {"groupID": "sg-1"}}]}]}})
    other_account = target_group_binding("far", service="web", arn=arn, namespace="shop",
                                         extra={"iamRoleArnToAssume":
                                                "arn:aws:iam::1:role/x"})
    found = list(objects.bindings([from_group, every_port, other_account], SCOPE))
    by = {(f.object, f.category) for f in found}
    assert ("shop/ok", "served") in by
    assert ("shop/ok", "not-honoured") not in by
    assert ("shop/wide", "not-honoured") in by
    assert {f.category for f in found if f.object == "shop/far"} == {"not-honoured"}


def test_gateways_of_upstreams_classes_are_not_served() -> None:
    classes = [{"metadata": {"name": "alb"}, "spec": {"controllerName": "gateway.k8s.aws/alb"}},
               {"metadata": {"name": "istio"}, "spec": {"controllerName": "istio.io/x"}}]
    gws = [{"metadata": {"name": "a", "namespace": "n"}, "spec": {"gatewayClassName": "alb"}},
           {"metadata": {"name": "b", "namespace": "n"}, "spec": {"gatewayClassName": "istio"}}]
    assert [f.object for f in objects.gateways(gws, classes)] == ["n/a"]
