"""Admission of Ingress and IngressClassParams writes (`controller.ingress.admit`): decided by
settling the group as a reconcile would, so a denial is the text of the Warning Event the
reconcile would write (`ExcludedFromGroup` for a member left out, `FailedBuildModel` for a
group that cannot be built)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from controller.config import parse_config
from controller.errors import InvalidInput
from controller.ingress import admit, admit_params, build_group
from controller.ingress.caches import Caches
from controller.ingress.exclusions import settle
from controller.model import Quotas
from runtime.objects import Obj, key_of
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    with_hostname,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
GROUP = {A + "group.name": "shop"}
SHOP = Request("", "shop")


def events(c: Caches, request: Request) -> dict[str, str]:
    """The Warning Event text a reconcile of the group would write, by Ingress."""
    settled = settle(loader(c).load(request), caches=c, policy="params",
                     build=lambda g: build_group(g, c, SETTINGS))
    found = {key_of(ing): f"not part of group {request.key}: {reason}"
             for ing, reason in settled.group.excluded}
    if settled.group.held is not None:
        found.update({m.key: settled.group.held for m in settled.group.members})
    return found


def denial(ing: Obj, c: Caches, old: Obj | None = None) -> str:
    with pytest.raises(InvalidInput) as info:
        admit(ing, old, c, SETTINGS)
    return str(info.value)


def established(ing: Obj) -> Obj:
    """`ing` as a member the group was deployed with: its finalizer and the hostname."""
    ing["metadata"]["finalizers"] = ["group.ingress.k8s.aws/shop"]
    return with_hostname(ing)


@pytest.mark.parametrize("annotations", [
    {A + "scheme": "public"},
    {A + "listen-ports": '[{"HTTP": 80'},
    {A + "group.name": "Not_A_Group"},
    {A + "group.order": "5000"},
    {A + "healthcheck-interval-seconds": "1"},
    {A + "auth-type": "cognito"},
    {A + "auth-type": "cognito", A + "auth-idp-cognito": json.dumps({
        "userPoolARN": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abc",
        "userPoolClientID": "client1",
        "userPoolDomain": "https://shop.auth.us-west-2.amazoncognito.com"})},
    {A + "jwt-validation": '{"jwksEndpoint": "http://idp.example.com/jwks", "issuer": "i"}'},
    {A + "jwt-validation": '{"jwksEndpoint": "https://idp.example.com/jwks", "issuer": "i"}',
     A + "auth-type": "cognito", A + "listen-ports": '[{"HTTPS": 443}]',
     A + "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/x",
     A + "auth-idp-cognito": json.dumps({
         "userPoolARN": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abc",
         "userPoolClientID": "client1", "userPoolDomain": "shop"})},
    {A + "load-balancer-attributes": "idle_timeout.timeout_seconds"},
    {A + "jwt-validation": '{"issuer": "x"}'},
    {A + "wafv2-acl-arn": "arn:aws:wafv2:us-east-1:123456789012:global/webacl/a/b"},
    {A + "inbound-cidr": "10.0.0.0/8"},
    {A + "mutual-authentication": '[{"port": 443, "mode": "verify"}]'},
    {A + "mutual-authentication": "[]"},
    {A + "listener-attributes.HTTP-80": "no-equals-sign"},
    {A + "enable-frontend-nlb": "true", A + "frontend-nlb-listener-port-mapping": "80=x"},
    {A + "enable-frontend-nlb": "true", A + "frontend-nlb-attributes": "bogus=1"},
])
def test_a_bad_annotation_is_denied_with_the_events_text(annotations: dict[str, str]) -> None:
    bad = ingress("web", annotations=annotations)
    before = caches(ingress_class(), backend_service("web"))
    after = caches(ingress_class(), backend_service("web"), bad)
    assert denial(bad, before) == events(after, loader(after).groups_of(bad)[0])["default/web"]


@pytest.mark.parametrize("name", ["a..b", "team.-web"])
def test_group_names_follow_the_reconcilers_rule(name: str) -> None:
    """Upstream's rule, as the reconciler reads it: these are groups, so admission agrees."""
    member = ingress("web", annotations={A + "group.name": name})
    c = caches(ingress_class(), backend_service("web"))
    assert admit(member, None, c, SETTINGS) == []
    assert [r.name for r in loader(caches(ingress_class(), backend_service("web"),
                                         member)).groups_of(member)] == [name]


def test_keys_not_acted_on_are_warnings_with_the_events_text() -> None:
    # Every upstream Ingress key is acted on: a typo upstream does not know either.
    own = ("annotation alb.ingress.kubernetes.io/frontend-nlb-eip-alocations is not a known "
           "annotation (did you mean alb.ingress.kubernetes.io/frontend-nlb-eip-allocations?); "
           "it is ignored")
    backend = ("backend Service default/web: annotation alb.ingress.kubernetes.io/scheme is "
               "read on the Ingress, not on a backend Service; it is ignored here")
    ing = ingress("web", annotations={A + "frontend-nlb-eip-alocations": "eipalloc-1"})
    c = caches(ingress_class(), backend_service("web", {"scheme": "internal"}))
    assert admit(ing, None, c, SETTINGS) == [own, backend]
    built = build_group(loader(caches(ingress_class(), backend_service(
        "web", {"scheme": "internal"}), ing)).load(Request("default", "web")), c, SETTINGS)
    assert [f.message for f in built.findings["default/web"]] == [own, backend]
    # Its own keys even when what it names is not there yet.
    assert admit(ing, None, caches(ingress_class()), SETTINGS) == [
        "Ingress default/web: backend Service default/web not found", own]
    # Not ours: not a word.
    other = ingress("web", annotations={A + "frontend-nlb-eip-alocations": "eipalloc-1"},
                    class_name="nginx")
    assert admit(other, None, c, SETTINGS) == []


def test_a_refused_key_leaves_a_newcomer_out_and_holds_the_group_of_an_established_one() -> None:
    waf = {A + "wafv2-acl-arnn": "arn:aws:wafv2:us-west-2:1:regional/webacl/x/y"}
    refused = ("annotation alb.ingress.kubernetes.io/wafv2-acl-arnn is not a known annotation "
               "(did you mean alb.ingress.kubernetes.io/wafv2-acl-arn?); it would narrow")
    first = established(ingress("a", annotations=GROUP, paths=[ingress_path("/a")]))
    newcomer = ingress("b", annotations={**GROUP, **waf}, paths=[ingress_path("/b")])
    c = caches(ingress_class(), backend_service("web"), first, newcomer)
    assert list(events(c, SHOP)) == ["default/b"]  # the rest of the group deploys
    assert refused in events(c, SHOP)["default/b"]
    held = established(ingress("a", annotations={**GROUP, **waf}, paths=[ingress_path("/a")]))
    c = caches(ingress_class(), backend_service("web"), held)
    assert events(c, SHOP)["default/a"].startswith(f"Ingress default/a: {refused}")


def test_ingresses_of_other_classes_are_not_looked_at() -> None:
    other = ingress("web", annotations={A + "scheme": "public"}, class_name="nginx")
    assert admit(other, None, caches(ingress_class(), backend_service("web")), SETTINGS) == []


def test_objects_that_may_come_later_are_warnings() -> None:
    assert admit(ingress("web"), None, caches(ingress_class()), SETTINGS) == [
        "Ingress default/web: backend Service default/web not found"]
    [warning] = admit(ingress("web"), None, caches(ingress_class("alb", params="missing"),
                                                   backend_service("web")), SETTINGS)
    assert "IngressClassParams missing not found" in warning


def test_inbound_cidrs_that_admit_no_one_are_a_warning_with_the_events_text() -> None:
    ing = ingress("web", annotations={A + "inbound-cidrs": "::/0"})
    c = caches(ingress_class(), backend_service("web"))
    built = build_group(loader(caches(ingress_class(), backend_service("web"), ing)).load(
        Request("default", "web")), c, SETTINGS)
    assert admit(ing, None, c, SETTINGS) == list(built.warnings)
    assert "::/0 admits no one" in built.warnings[0]
    assert admit(ingress("web"), None, c, SETTINGS) == []


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


def test_a_newcomer_that_conflicts_with_its_group_is_denied_as_it_would_be_left_out() -> None:
    first = established(ingress("a", annotations={**GROUP, A + "scheme": "internal"},
                                paths=[ingress_path("/a")]))
    c = caches(ingress_class(), backend_service("web"), first)
    second = ingress("b", annotations={**GROUP, A + "scheme": "internet-facing"},
                     paths=[ingress_path("/b")])
    text = denial(second, c)
    assert text.startswith("not part of group shop: annotation ")
    assert "scheme conflicts within the group" in text
    c.ingresses.upsert(second)  # admitted anyway (say, before the webhook existed)
    assert events(c, SHOP)["default/b"] == text
    # The rest of the group deploys, so an unrelated member's edit is no business of b's.
    third = ingress("c", annotations=GROUP, paths=[ingress_path("/c")])
    assert admit(third, None, c, SETTINGS) == []


def test_a_group_held_by_its_own_member_is_denied_only_to_the_write_that_holds_it() -> None:
    first = established(ingress("a", annotations=GROUP, paths=[ingress_path("/a")]))
    c = caches(ingress_class(), backend_service("web"), first)
    broken = established(ingress("a", annotations={**GROUP, A + "scheme": "public"},
                                 paths=[ingress_path("/a")]))
    text = denial(broken, c, first)
    assert text.startswith("Ingress default/a: annotation alb.ingress.kubernetes.io/scheme")
    c.ingresses.upsert(broken)
    assert events(c, SHOP)["default/a"] == text
    # Held already: another member's write is admitted, with the reason as a warning.
    newcomer = ingress("b", annotations=GROUP, paths=[ingress_path("/b")])
    assert admit(newcomer, None, c, SETTINGS) == [text]


def test_class_parameters_are_checked_as_ingresses_of_the_class_read_them() -> None:
    bad = class_params("p", {"inboundCIDRs": ["10.0.0.0/33"]})
    c = caches(ingress_class("alb", params="p"), backend_service("web"), bad, ingress("web"))
    with pytest.raises(InvalidInput) as info:
        admit_params(bad)
    assert events(c, Request("default", "web"))["default/web"] == \
        f"not part of group default/web: {info.value}"
    both = class_params("p", {"subnets": {"ids": ["subnet-1"], "tags": {"k": ["v"]}}})
    with pytest.raises(InvalidInput, match="give either ids or tags, not both"):
        admit_params(both)
    assert admit_params(class_params("p", {"scheme": "internal"})) == []


def test_authentication_an_http_listener_skips_is_a_warning() -> None:
    """Upstream puts authentication and JWT validation on HTTPS listeners only: said at
    `kubectl apply`, as the Warning Event says it."""
    ing = ingress("web", annotations={
        A + "jwt-validation": '{"jwksEndpoint": "https://idp.example.com/jwks", "issuer": "i"}',
        A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
        A + "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/x"})
    c = caches(ingress_class(), backend_service("web"))
    assert admit(ing, None, c, SETTINGS) == [
        "Ingress default/web: authentication and JWT validation apply on HTTPS listeners only; "
        "HTTP port 80 forwards without them (set ssl-redirect)"]


def _annotated(annotations: dict[str, str]) -> Obj:
    ing = ingress("web", annotations=annotations)
    ing["spec"].pop("ingressClassName", None)
    return ing


def test_a_new_class_annotation_is_denied_only_when_disabled() -> None:
    """--disable-ingress-class-annotation: upstream's rule; an Ingress that had it keeps it."""
    c = caches(ingress_class(), backend_service("web"))
    legacy = _annotated({"kubernetes.io/ingress.class": "alb"})
    assert admit(legacy, None, c, SETTINGS) == []
    with pytest.raises(InvalidInput, match=r"new usage of `kubernetes\.io/ingress\.class` "
                       "annotation is forbidden"):
        admit(legacy, None, c, SETTINGS, disable_class_annotation=True)
    with pytest.raises(InvalidInput, match="forbidden"):
        admit(legacy, ingress("web"), c, SETTINGS, disable_class_annotation=True)
    kept = _annotated({"kubernetes.io/ingress.class": "alb", A + "scheme": "internal"})
    assert admit(kept, legacy, c, SETTINGS, disable_class_annotation=True) == []
    # another controller's class is not ours to refuse
    other = _annotated({"kubernetes.io/ingress.class": "nginx"})
    assert admit(other, None, c, SETTINGS, disable_class_annotation=True) == []


def test_a_new_or_changed_group_name_is_denied_only_when_disabled() -> None:
    c = caches(ingress_class(), backend_service("web"))
    member = ingress("web", annotations=GROUP)
    assert admit(member, None, c, SETTINGS) == []
    with pytest.raises(InvalidInput, match=r"new usage of "
                       r"`alb\.ingress\.kubernetes\.io/group\.name` annotation is forbidden"):
        admit(member, ingress("web"), c, SETTINGS, disable_group_name_annotation=True)
    moved = ingress("web", annotations={A + "group.name": "other"})
    with pytest.raises(InvalidInput, match="forbidden"):
        admit(moved, member, c, SETTINGS, disable_group_name_annotation=True)
    edited = ingress("web", annotations={**GROUP, A + "scheme": "internal"})
    assert admit(edited, member, c, SETTINGS, disable_group_name_annotation=True) == []
    assert admit(ingress("web"), None, c, SETTINGS, disable_group_name_annotation=True) == []


def test_a_member_past_a_quota_is_denied_with_the_events_text() -> None:
    limited = dataclasses.replace(SETTINGS, quotas=Quotas(rules_per_listener=2))
    first = established(ingress("a", annotations=GROUP, paths=[ingress_path("/a"),
                                                               ingress_path("/a2")]))
    c = caches(ingress_class(), backend_service("web"), first)
    second = ingress("b", annotations=GROUP, paths=[ingress_path("/b")])
    with pytest.raises(InvalidInput) as info:
        admit(second, None, c, limited)
    text = str(info.value)
    assert text.startswith("not part of group shop: Ingress default/b would take the group "
                           "past an AWS quota: load balancer ")
    assert text.endswith("listener 80: 3 rules besides the default one, more than the quota "
                         "of 2 (--max-rules-per-listener)")
    c.ingresses.upsert(second)
    settled = settle(loader(c).load(SHOP), caches=c, policy="params",
                     build=lambda g: build_group(g, c, limited))
    assert [f"not part of group shop: {why}" for _, why in settled.group.excluded] == [text]
    # Within the quota: admitted.
    assert admit(second, None, c, SETTINGS) == []


@pytest.mark.parametrize("weighted", [True, False])
def test_weighted_forwards_are_denied_only_with_the_gate_off(weighted: bool) -> None:
    """WeightedTargetGroups off: admission says what the reconcile's Event says."""
    settings = dataclasses.replace(SETTINGS, gates=parse_config([
        "--cluster-name", "c",
        f"--feature-gates=WeightedTargetGroups={str(weighted).lower()}"]).gates)
    split = ingress("web", annotations={A + "actions.split": json.dumps({
        "type": "forward", "forwardConfig": {"targetGroups": [
            {"serviceName": "blue", "servicePort": 80, "weight": 80},
            {"serviceName": "green", "servicePort": 80, "weight": 20}]}})},
        paths=[ingress_path("/", "split", "use-annotation")])
    before = caches(ingress_class(), backend_service("blue"), backend_service("green"))
    c = caches(ingress_class(), backend_service("blue"), backend_service("green"), split)
    if weighted:
        admit(split, None, before, settings)
        build_group(loader(c).load(loader(c).groups_of(split)[0]), c, settings)
        return
    with pytest.raises(InvalidInput) as info:
        admit(split, None, before, settings)
    assert str(info.value) == (
        "Ingress default/web: a forward action over 2 target groups: weighted target groups "
        "feature is disabled (feature gate WeightedTargetGroups)")
    with pytest.raises(InvalidInput) as built:
        build_group(loader(c).load(loader(c).groups_of(split)[0]), c, settings)
    assert str(built.value) == str(info.value)


def test_capacity_and_pool_values_are_denied_with_the_reconcilers_message() -> None:
    c = caches(ingress_class(), backend_service("web"))
    for key, value, reason in (
            ("minimum-load-balancer-capacity", "CapacityUnits=-1",
             'has CapacityUnits "-1", which is out of range: want 0..2147483647'),
            ("ipam-ipv4-pool-id", "pool-1",
             "is not an IPAM pool ID (ipam-pool- and letters or digits)"),
            ("customer-owned-ipv4-pool", "",
             "is empty; name a customer-owned IPv4 pool or remove the annotation")):
        ing = ingress("web", annotations={A + key: value})
        said = f'Ingress default/web: annotation {A}{key}: "{value}" {reason}'
        assert denial(ing, c) == said
        with pytest.raises(InvalidInput) as info:
            build_group(loader(caches(ingress_class(), backend_service("web"), ing)).load(
                Request("default", "web")), c, SETTINGS)
        assert str(info.value) == said
