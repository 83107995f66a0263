"""Which Services the controller provisions an NLB for (upstream's service_utils rules)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis import SERVICE_FINALIZER, service_finalizer
from controller.service import SERVICE_ANNOTATION_KEYS, qualifies, relevant_annotations
from controller.service.annotations import served_by_upstream_only
from tests.support.objects import NLB_CLASS, web_service


def ok(svc: dict[str, Any], cls: str = NLB_CLASS) -> bool:
    return qualifies(svc, load_balancer_class=cls)


def test_our_load_balancer_class_qualifies_without_annotations() -> None:
    assert ok(web_service())


def test_a_configured_class_replaces_the_default() -> None:
    svc = web_service(load_balancer_class="example.com/lb")
    assert ok(svc, "example.com/lb")
    assert not ok(svc)


def test_another_class_never_qualifies_whatever_the_annotations() -> None:
    svc = web_service({"aws-load-balancer-type": "external",
                       "aws-load-balancer-nlb-target-type": "ip"},
                      load_balancer_class="example.com/other")
    assert not ok(svc)
    assert not ok(web_service({"aws-load-balancer-type": "nlb-ip"},
                              load_balancer_class="example.com/other"))


@pytest.mark.parametrize("target_type", ["ip", "instance"])
def test_external_with_a_target_type_qualifies(target_type: str) -> None:
    assert ok(web_service({"aws-load-balancer-type": "external",
                           "aws-load-balancer-nlb-target-type": target_type},
                          load_balancer_class=None))


@pytest.mark.parametrize("target_type", [None, "IP", "pod", ""])
def test_external_without_a_valid_target_type_does_not(target_type: str | None) -> None:
    annotations = {"aws-load-balancer-type": "external"}
    if target_type is not None:
        annotations["aws-load-balancer-nlb-target-type"] = target_type
    assert not ok(web_service(annotations, load_balancer_class=None))


def test_deprecated_nlb_ip_qualifies() -> None:
    assert ok(web_service({"aws-load-balancer-type": "nlb-ip"}, load_balancer_class=None))


@pytest.mark.parametrize("lb_type", ["nlb", "NLB-IP", "External", ""])
def test_other_types_are_left_to_other_controllers(lb_type: str) -> None:
    assert not ok(web_service({"aws-load-balancer-type": lb_type,
                               "aws-load-balancer-nlb-target-type": "ip"},
                              load_balancer_class=None))


def test_a_target_type_alone_does_not_qualify() -> None:
    assert not ok(web_service({"aws-load-balancer-nlb-target-type": "ip"},
                              load_balancer_class=None))


@pytest.mark.parametrize("type_", ["ClusterIP", "NodePort", "ExternalName"])
def test_only_load_balancer_services_qualify(type_: str) -> None:
    assert not ok(web_service(type_=type_))
    assert not ok(web_service({"aws-load-balancer-type": "nlb-ip"}, type_=type_,
                              load_balancer_class=None))
    assert not ok(web_service({"aws-load-balancer-type": "external",
                               "aws-load-balancer-nlb-target-type": "ip"}, type_=type_,
                              load_balancer_class=None))


def test_annotations_with_another_prefix_do_not_count() -> None:
    assert not ok(web_service({"service.kubernetes.io/aws-load-balancer-type": "nlb-ip"},
                              load_balancer_class=None))


def test_malformed_objects_do_not_qualify() -> None:
    assert not ok({})
    assert not ok({"spec": None, "metadata": None})
    assert not ok({"spec": {"type": "LoadBalancer"}, "metadata": {"annotations": None}})


def test_deletion_does_not_change_the_answer() -> None:
    svc = web_service()
    svc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert ok(svc)


def test_relevant_annotations_keep_only_keys_we_read() -> None:
    svc = web_service({"aws-load-balancer-scheme": "internal",
                       "kubectl.kubernetes.io/last-applied-configuration": "{}",
                       "service.beta.kubernetes.io/aws-load-balancer-unknown": "x",
                       "elbv2.k8s.aws/checkpoint": "v1:abc"})
    assert relevant_annotations(svc) == {
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}


def test_annotation_key_set_covers_the_core_set() -> None:
    expected = {
        "aws-load-balancer-type", "aws-load-balancer-nlb-target-type", "aws-load-balancer-name",
        "aws-load-balancer-scheme", "aws-load-balancer-internal",
        "aws-load-balancer-ip-address-type", "aws-load-balancer-subnets",
        "aws-load-balancer-ssl-cert", "aws-load-balancer-ssl-ports",
        "aws-load-balancer-ssl-negotiation-policy", "aws-load-balancer-backend-protocol",
        "aws-load-balancer-alpn-policy", "aws-load-balancer-healthcheck-protocol",
        "aws-load-balancer-healthcheck-port", "aws-load-balancer-healthcheck-path",
        "aws-load-balancer-healthcheck-healthy-threshold",
        "aws-load-balancer-healthcheck-unhealthy-threshold",
        "aws-load-balancer-healthcheck-timeout", "aws-load-balancer-healthcheck-interval",
        "aws-load-balancer-healthcheck-success-codes",
        "aws-load-balancer-target-group-attributes", "aws-load-balancer-attributes",
        "aws-load-balancer-additional-resource-tags", "aws-load-balancer-proxy-protocol",
        "aws-load-balancer-multi-cluster-target-group",
    }
    assert {"service.beta.kubernetes.io/" + s for s in expected} <= SERVICE_ANNOTATION_KEYS
    # Upstream's keys outside the aws-load-balancer- family (SvcLBSuffixSourceRanges, and the
    # listeners' default actions).
    outside = {"service.beta.kubernetes.io/load-balancer-source-ranges",
               "service.beta.kubernetes.io/actions.*"}
    assert outside <= SERVICE_ANNOTATION_KEYS
    assert all(k.startswith("service.beta.kubernetes.io/aws-load-balancer-")
               for k in SERVICE_ANNOTATION_KEYS - outside)


@pytest.mark.parametrize(("type_", "annotations", "upstream_only"), [
    ("NodePort", {"aws-load-balancer-type": "external",
                  "aws-load-balancer-nlb-target-type": "ip"}, True),
    ("ClusterIP", {"aws-load-balancer-type": "nlb-ip"}, True),
    ("ClusterIP", {"aws-load-balancer-type": "external"}, False),  # no target type
    ("NodePort", {}, False),
    ("LoadBalancer", {"aws-load-balancer-type": "external",
                      "aws-load-balancer-nlb-target-type": "ip"}, False),  # ours
])
def test_services_upstream_serves_and_we_do_not(type_: str, annotations: dict[str, str],
                                                 upstream_only: bool) -> None:
    """Upstream's pkg/service/service_utils.go with ServiceTypeLoadBalancerOnly off (its
    default): the annotations decide, whatever the Service type."""
    svc = web_service(annotations, load_balancer_class=None, type_=type_)
    assert served_by_upstream_only(svc, load_balancer_class=NLB_CLASS) is upstream_only
    if upstream_only:
        assert not ok(svc)


def test_of_several_controllers_one_with_an_id_serves_its_class_alone() -> None:
    by_annotation = web_service({"aws-load-balancer-type": "external",
                                 "aws-load-balancer-nlb-target-type": "ip"},
                                load_balancer_class=None)
    internal = web_service(load_balancer_class="example.com/internal")
    assert qualifies(by_annotation, load_balancer_class=NLB_CLASS)
    assert not qualifies(by_annotation, load_balancer_class="example.com/internal",
                         by_annotation=False)
    assert qualifies(internal, load_balancer_class="example.com/internal", by_annotation=False)
    # Each cleans up only what carries its own finalizer; the default one's is upstream's.
    assert service_finalizer("") == SERVICE_FINALIZER == "service.k8s.aws/resources"
    assert service_finalizer("internal") == "internal.service.k8s.aws/resources"
