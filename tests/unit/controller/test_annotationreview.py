"""No annotation under our prefixes is ever silently ignored: each of upstream's keys, and any
made-up key, on an Ingress, on its backend Service and on an NLB Service is either read by the
parsers (acted on) or reported: a Warning naming it, or a refusal naming it (fail closed).

The property tests hold the code to upstream's list as written in `upstream_keys.py`, not to
the catalogue; the example tests pin the messages and the suggestions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotationreview import (
    MAX_REPORTED,
    MAX_UNKNOWN,
    UNKNOWN,
    Finding,
    FindingLog,
    UnsupportedAnnotation,
    Where,
    _not_acted_on,
    check,
    review,
    review_key,
    suggestion,
    summarized,
)
from controller.annotations import found_in, recording
from controller.apis.catalogue import AnnotationKey
from controller.errors import InvalidInput
from controller.ingress.merge import BuildError
from controller.service.annotations import admission_warnings, annotation_findings
from controller.service.model import build_stack
from tests.unit.controller import upstream_keys as upstream
from tests.unit.controller.annotation_objects import (
    INGRESS,
    SERVICE_INTERNAL,
    TARGET_GROUP,
    build,
    ingress_world,
    nlb,
)
from tests.unit.controller.service.test_model import SETTINGS as SERVICE_SETTINGS

A = upstream.INGRESS_PREFIX
S = upstream.SERVICE_PREFIX

# What a key may be: Kubernetes allows [A-Za-z0-9._-] in an annotation name.
NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789.-_ABCZ"), min_size=1,
               max_size=40)
VALUES = st.one_of(st.sampled_from(["", "true", "false", "none", "off", "10.0.0.0/8", "80",
                                    "*", "a=b", '[{"port": 443, "mode": "off"}]',
                                    '[{"port": 443, "mode": "verify"}]', "internal"]),
                   st.text(max_size=30))
INGRESS_KEY = st.one_of(st.sampled_from(upstream.INGRESS_KEYS), NAME.map(lambda n: A + n))
SERVICE_KEY = st.one_of(st.sampled_from(upstream.SERVICE_KEYS),
                        st.sampled_from([S + "aws-load-balancer-", S + "load-balancer-",
                                         S + "actions."]).flatmap(
                            lambda p: NAME.map(lambda n: p + n)))


def _names(texts: list[str], key: str) -> bool:
    return any(key in text.split() for text in texts)


def _said(text: str) -> list[str]:
    # Messages name a key as a word: "annotation <key> is ...".
    return [text.replace("(", " ").replace(")", " ").replace(";", " ").replace(":", " ")]


# ---- never ignored -----------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(key=SERVICE_KEY, value=VALUES)
def test_every_key_on_an_nlb_service_is_acted_on_or_reported(key: str, value: str) -> None:
    svc = nlb({**SERVICE_INTERNAL, key: value})
    told: list[str] = []
    with recording() as reads:
        try:
            build_stack(svc, settings=SERVICE_SETTINGS)
            told = [f.message for f in annotation_findings(svc)]
        except InvalidInput as exc:
            told = _said(str(exc))
    assert key in reads or _family_read(key, reads, S) \
        or _names([" ".join(_said(t)) for t in told], key), (key, told)
    # Admission (the Service mutator) tells the same.
    assert key in reads or _family_read(key, reads, S) or _names(
        [" ".join(_said(t)) for t in admission_warnings(
            svc, load_balancer_class="service.k8s.aws/nlb")], key)


@settings(max_examples=300, deadline=None)
@given(key=INGRESS_KEY, value=VALUES)
def test_every_key_on_an_ingress_is_acted_on_or_reported(key: str, value: str) -> None:
    c, _ = ingress_world({**INGRESS, key: value})
    told: list[str] = []
    with recording() as reads:
        try:
            built = build(c)
            told = [f.message for f in built.findings["default/shop"]]
        except InvalidInput as exc:
            told = _said(str(exc))
    assert key in reads or _family_read(key, reads) \
        or _names([" ".join(_said(t)) for t in told], key), (key, told)


@settings(max_examples=300, deadline=None)
@given(key=INGRESS_KEY.filter(lambda k: k.startswith(A)), value=VALUES)
def test_every_key_on_a_backend_service_is_acted_on_or_reported(key: str, value: str) -> None:
    c, _ = ingress_world({"listen-ports": '[{"HTTPS": 443}]',
                          "certificate-arn": INGRESS["certificate-arn"]},
                         {**TARGET_GROUP, key: value})
    svc = c.services.get("default/web")
    assert svc is not None
    told: list[str] = []
    with found_in() as found:
        try:
            built = build(c)
            told = [f.message for f in built.findings["default/shop"]]
        except InvalidInput as exc:
            told = _said(str(exc))
    read_there = found.get(id(svc["metadata"]["annotations"]), set())
    # A family (`target-control-port.<svc>.<port>`) is read as the family.
    assert (key in read_there or _family_read(key, read_there)
            or _names([" ".join(_said(t)) for t in told], key)), (key, told)


def _family_read(key: str, reads: set[str], prefix: str = A) -> bool:
    stem = key.removeprefix(prefix).split(".", 1)[0]
    return "." in key.removeprefix(prefix) and prefix + stem + ".*" in reads


def test_the_upstream_list_is_what_the_property_tests_draw_from() -> None:
    assert len(upstream.INGRESS_KEYS) == 73
    assert len(upstream.SERVICE_KEYS) == 49


# ---- what each kind of key gets ----------------------------------------------------------------

def test_a_typo_of_a_narrowing_key_refuses_the_ingress() -> None:
    c, _ = ingress_world({"wafv2-acl-arnn": "arn:aws:wafv2:us-west-2:1:regional/webacl/x/y"})
    with pytest.raises(BuildError) as caught:
        build(c)
    assert str(caught.value) == (
        "Ingress default/shop: annotation alb.ingress.kubernetes.io/wafv2-acl-arnn is not a "
        "known annotation (did you mean alb.ingress.kubernetes.io/wafv2-acl-arn?); it would "
        "narrow who can reach the load balancer, so nothing is deployed for this Ingress until "
        "it is corrected or removed")


def test_a_narrowing_key_not_acted_on_would_refuse() -> None:
    """Every narrowing key of upstream's is acted on today; the rule stands for the next one
    added to the catalogue before its parser."""
    entry = AnnotationKey(key=A + "future-acl", kind="ingress", feature="a future ACL",
                          acted_on=False, narrows=True)
    finding = _not_acted_on(entry.key, entry, "x", "ingress")
    assert finding.refused
    assert finding.message.startswith(f"annotation {A}future-acl asks for a future ACL, which "
                                      "aiolbc does not support; it would narrow")


def test_a_key_not_acted_on_is_a_warning_naming_it() -> None:
    # Every upstream Ingress key is acted on now, so a key upstream does not know either (a
    # typo): named, with the nearest known key, and ignored.
    [finding] = review({A + "frontend-nlb-eip-alocations": "eipalloc-1"}, where="ingress")
    assert finding == Finding(
        A + "frontend-nlb-eip-alocations", UNKNOWN,
        "annotation alb.ingress.kubernetes.io/frontend-nlb-eip-alocations is not a known "
        "annotation (did you mean alb.ingress.kubernetes.io/frontend-nlb-eip-allocations?); "
        "it is ignored")
    assert not review({A + "frontend-nlb-eip-allocations": "eipalloc-1"}, where="ingress")
    # The dry-run plan is the controller's own output (IngressPlanAnnotation): nothing to tell.
    assert not review({A + "dry-run-plan": "{}"}, where="ingress")


def test_an_unknown_key_gets_the_nearest_known_key_as_a_suggestion() -> None:
    [finding] = review({S + "aws-load-balancer-healthcheck-intervall": "30"}, where="service")
    assert finding == Finding(
        S + "aws-load-balancer-healthcheck-intervall", UNKNOWN,
        "annotation service.beta.kubernetes.io/aws-load-balancer-healthcheck-intervall is not a "
        "known annotation (did you mean "
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval?); it is ignored")
    [family] = review({A + "action.web": "{}"}, where="ingress")
    assert "(did you mean alb.ingress.kubernetes.io/actions.<name>?)" in family.message
    [far] = review({A + "xyz": "1"}, where="ingress")
    assert far.message == ("annotation alb.ingress.kubernetes.io/xyz is not a known "
                           "annotation; it is ignored")


def test_an_unknown_key_nearest_to_a_narrowing_key_refuses() -> None:
    cases: tuple[tuple[Where, str, str], ...] = (
            ("ingress", A + "inbound-cidr", A + "inbound-cidrs"),
            ("ingress", A + "auth-idp-okta", A + "auth-idp-oidc"),
            ("service", S + "load-balancer-source-range", S + "load-balancer-source-ranges"),
            ("service", S + "aws-load-balancer-security-group", S +
             "aws-load-balancer-security-groups"),
            ("backend", A + "auth-typ", A + "auth-type"))
    for where, key, meant in cases:
        finding = review_key(key, "x", where)
        assert finding is not None, key
        assert finding.refused, key
        assert f"(did you mean {meant}?)" in finding.message
        assert "corrected or removed" in finding.message


def test_the_old_source_ranges_key_refuses_naming_upstreams() -> None:
    svc = nlb({"aws-load-balancer-source-ranges": "10.0.0.0/8"})
    with pytest.raises(UnsupportedAnnotation) as caught:
        build_stack(svc, settings=SERVICE_SETTINGS)
    assert str(caught.value) == (
        "annotation service.beta.kubernetes.io/aws-load-balancer-source-ranges is not read, "
        "and upstream has no such key: source ranges are read from "
        "spec.loadBalancerSourceRanges, else service.beta.kubernetes.io/"
        "load-balancer-source-ranges (upstream's key); it would narrow who can reach the load "
        "balancer, so nothing is deployed for this Service until it is removed (move its value "
        "there)")
    assert caught.value.condition_reason == "UnsupportedAnnotation"
    # Also next to the right key: the owner removes it, nothing is left to guess.
    with pytest.raises(UnsupportedAnnotation):
        build_stack(nlb({"aws-load-balancer-source-ranges": "10.0.0.0/8",
                         "load-balancer-source-ranges": "10.0.0.0/8"}),
                    settings=SERVICE_SETTINGS)


def test_on_a_backend_service() -> None:
    # Read there (target group settings): nothing to say.
    assert review({A + "healthcheck-path": "/hz"}, where="backend") == ()
    # Read on the Ingress only, even when it narrows: upstream ignores it there too.
    [scheme] = review({A + "scheme": "internal"}, where="backend")
    assert scheme.message == ("annotation alb.ingress.kubernetes.io/scheme is read on the "
                              "Ingress, not on a backend Service; it is ignored here")
    assert not review({A + "wafv2-acl-arn": "arn"}, where="backend")[0].refused
    # Upstream reads tags, target node labels and the target control port there; so does
    # aiolbc.
    assert review({A + "tags": "a=b", A + "target-node-labels": "a=b",
                   A + "target-control-port.web.80": "9000"}, where="backend") == ()
    # Reported on the Ingress that uses the Service, named.
    c, _ = ingress_world({}, {"scheme": "internal"})
    assert [f.message for f in build(c).findings["default/shop"]] == [
        "backend Service default/web: annotation alb.ingress.kubernetes.io/scheme is read on "
        "the Ingress, not on a backend Service; it is ignored here"]
    c, _ = ingress_world({}, {"auth-typ": "oidc"})
    with pytest.raises(BuildError, match=r"^Ingress default/shop: backend Service default/web: "
                                         r"annotation alb\.ingress\.kubernetes\.io/auth-typ"):
        build(c)


def test_keys_that_are_not_ours_are_not_reviewed() -> None:
    assert review({"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}",
                   S + "aws-load-balancer-type": "x", A + "scheme": "internal"},
                  where="ingress") == ()
    assert review({S + "azure-load-balancer-internal": "true"}, where="service") == ()


def test_findings_come_in_key_order_and_are_summarized() -> None:
    many = {S + f"aws-load-balancer-made-up-{i:02}": "x" for i in range(MAX_REPORTED + 3)}
    found = review(many, where="service")
    assert [f.key for f in found] == sorted(many)
    shown = summarized(found)
    assert len(shown) == MAX_REPORTED + 1
    assert shown[-1].message == ("3 more annotations under aiolbc's prefixes are not acted "
                                 "on; they are ignored")
    assert summarized(found[:2]) == list(found[:2])


def test_too_many_unknown_keys_refuse_the_object_at_once() -> None:
    many = {A + f"made-up-{i}": "x" for i in range(MAX_UNKNOWN + 1)}
    with pytest.raises(UnsupportedAnnotation, match=rf"^{MAX_UNKNOWN + 1} annotations under "
                       rf"aiolbc's prefixes are not known, and at most {MAX_UNKNOWN} are "
                       "checked"):
        check(many, where="ingress")
    # Up to the limit, each is reported on its own.
    del many[A + "made-up-0"]
    assert len(check(many, where="ingress")) == MAX_UNKNOWN


def test_suggestions_compare_what_tells_keys_apart() -> None:
    # Without the shared prefix every key would look like every other.
    assert suggestion(A + "zzz", "ingress") is None
    near = suggestion(S + "aws-load-balancer-source-range", "service")
    assert near is not None
    assert near.key == S + "load-balancer-source-ranges"
    near = suggestion(S + "aws-load-balancer-healthcheck-paht", "service")
    assert near is not None
    assert near.key == S + "aws-load-balancer-healthcheck-path"


def test_the_log_tells_each_finding_once() -> None:
    log = FindingLog(size=2)
    a, b = Finding("k1", UNKNOWN, "one"), Finding("k2", UNKNOWN, "two")
    assert log.new("u1", [a]) == [a]
    assert log.new("u1", [a]) == []  # a verification, a retry: nothing new
    assert log.new("u1", [a, b]) == [b]
    assert log.new("u1", [b]) == []
    assert log.new("u1", [a, b]) == [a]  # gone and back: told again
    # Bounded: the object seen longest ago is forgotten.
    log.new("u2", [a])
    log.new("u3", [a])
    assert log.new("u1", [a, b]) == [a, b]


def test_a_service_we_serve_is_warned_at_admission() -> None:
    svc = nlb({"aws-load-balancer-type": "external", "aws-load-balancer-nlb-target-type": "ip",
               "aws-load-balancer-healthcheck-intervall": "30"})
    [text] = admission_warnings(svc, load_balancer_class="service.k8s.aws/nlb")
    assert "did you mean service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval?" \
        in text
    not_ours: dict[str, Any] = {**svc, "spec": {**svc["spec"], "type": "ClusterIP"}}
    assert admission_warnings(not_ours, load_balancer_class="service.k8s.aws/nlb") == []
