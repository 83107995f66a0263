"""Admission of Ingress and IngressClassParams writes (`controller.ingress.admit`): decided by
the group's own build, so a denial is the text of the Warning Event a reconcile would write."""

from __future__ import annotations

import pytest

from controller.errors import InvalidInput
from controller.ingress import admit, admit_params, build_group
from controller.ingress.caches import Caches
from runtime.objects import Obj
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    secret,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"


def _event_text(c: Caches, request: Request) -> str:
    """What the reconciler would write in its Warning Event for this group."""
    with pytest.raises(InvalidInput) as info:
        build_group(loader(c).load(request), c, SETTINGS)
    return str(info.value)


def _denial(ing: Obj, c: Caches, old: Obj | None = None) -> str:
    with pytest.raises(InvalidInput) as info:
        admit(ing, old, c, SETTINGS)
    return str(info.value)


@pytest.mark.parametrize("annotations", [
    {A + "scheme": "public"},
    {A + "listen-ports": '[{"HTTP": 80'},
    {A + "group.name": "Not_A_Group"},
    {A + "group.order": "5000"},
    {A + "healthcheck-interval-seconds": "1"},
    {A + "auth-type": "cognito"},
    {A + "load-balancer-attributes": "idle_timeout.timeout_seconds"},
])
def test_a_bad_annotation_is_denied_with_the_events_text(annotations: dict[str, str]) -> None:
    bad = ingress("web", annotations=annotations)
    c = caches(ingress_class(), backend_service("web"), bad)
    request = (Request("default", "web") if A + "group.name" in annotations
               else loader(c).groups_of(bad)[0])
    assert _denial(bad, c) == _event_text(c, request)


def test_ingresses_of_other_classes_are_not_looked_at() -> None:
    other = ingress("web", annotations={A + "scheme": "public"}, class_name="nginx")
    assert admit(other, None, caches(ingress_class(), backend_service("web")), SETTINGS) == []


def test_objects_that_may_come_later_are_warnings() -> None:
    oidc = {A + "auth-type": "oidc", A + "listen-ports": '[{"HTTPS": 443}]',
            A + "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/abc",
            A + "auth-idp-oidc": '{"issuer": "https://idp.example.com", "authorizationEndpoint":'
                                 ' "https://idp.example.com/auth", "tokenEndpoint": '
                                 '"https://idp.example.com/token", "userInfoEndpoint": '
                                 '"https://idp.example.com/userinfo", "secretName": "oidc"}'}
    without_service = ingress("web")
    assert admit(without_service, None, caches(ingress_class()), SETTINGS) == [
        "Ingress default/web: backend Service default/web not found"]
    without_secret = ingress("web", annotations=oidc)
    [warning] = admit(without_secret, None, caches(ingress_class(), backend_service("web")),
                      SETTINGS)
    assert "OIDC Secret default/oidc not found" in warning
    with_secret = caches(ingress_class(), backend_service("web"),
                         secret("oidc", {"clientID": "i", "clientSecret": "s"}))
    assert admit(without_secret, None, with_secret, SETTINGS) == []
    # The class's parameters, too.
    c = caches(ingress_class("alb", params="missing"), backend_service("web"))
    [warning] = admit(ingress("web"), None, c, SETTINGS)
    assert "IngressClassParams missing not found" in warning


def test_an_update_the_model_does_not_read_is_admitted_even_when_broken() -> None:
    # The controller must always be able to add and remove its own finalizer.
    broken = ingress("web", annotations={A + "scheme": "public"})
    finalized = ingress("web", annotations={A + "scheme": "public"},
                        finalizers=["ingress.k8s.aws/resources"])
    c = caches(ingress_class(), backend_service("web"), broken)
    assert admit(finalized, broken, c, SETTINGS) == []
    being_deleted = ingress("web", annotations={A + "scheme": "public"})
    being_deleted["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert admit(being_deleted, broken, c, SETTINGS) == []
    # A change that still leaves it broken is checked like a new one.
    changed = ingress("web", annotations={A + "scheme": "public", A + "tags": "a=b"})
    assert "scheme" in _denial(changed, c, broken)


def test_a_conflict_within_the_group_is_denied_only_to_the_write_that_makes_it() -> None:
    group = {A + "group.name": "shop"}
    first = ingress("a", annotations={**group, A + "scheme": "internal"},
                    paths=[ingress_path("/a")])
    c = caches(ingress_class(), backend_service("web"), first)
    second = ingress("b", annotations={**group, A + "scheme": "internet-facing"},
                     paths=[ingress_path("/b")])
    text = _denial(second, c)
    assert "scheme conflicts within the group" in text
    c.ingresses.upsert(second)  # admitted anyway (say, before the webhook existed)
    assert text == _event_text(c, Request("", "shop"))
    # Now the group is broken: an unrelated edit of a member is admitted, with the warning.
    third = ingress("c", annotations=group, paths=[ingress_path("/c")])
    assert admit(third, None, c, SETTINGS) == [text]


def test_class_parameters_are_checked_as_ingresses_of_the_class_read_them() -> None:
    bad = class_params("p", {"inboundCIDRs": ["10.0.0.0/33"]})
    c = caches(ingress_class("alb", params="p"), backend_service("web"), bad, ingress("web"))
    with pytest.raises(InvalidInput) as info:
        admit_params(bad)
    assert f"Ingress default/web: {info.value}" == _event_text(c, Request("default", "web"))
    both = class_params("p", {"subnets": {"ids": ["subnet-1"], "tags": {"k": ["v"]}}})
    with pytest.raises(InvalidInput, match="give either ids or tags, not both"):
        admit_params(both)
    assert admit_params(class_params("p", {"scheme": "internal"})) == []
