"""The catalogue holds upstream's full list, no more (but aiolbc's retired spellings), and the
parsers' key sets are views of it."""

from __future__ import annotations

from controller.apis import catalogue
from controller.apis.catalogue import (
    INGRESS_ANNOTATION_KEYS,
    INGRESS_KEYS,
    RETIRED_KEYS,
    SERVICE_ANNOTATION_KEYS,
    SERVICE_KEYS,
    AnnotationKey,
    Kind,
    entry_for,
    reviewed,
    reviewed_annotations,
)
from controller.ingress import annotations as ingress_annotations
from controller.service import annotations as service_annotations
from tests.unit.controller import upstream_keys as upstream

A = upstream.INGRESS_PREFIX
S = upstream.SERVICE_PREFIX


def test_every_upstream_key_is_catalogued_once_and_nothing_else() -> None:
    assert len(INGRESS_KEYS) == len(upstream.INGRESS_KEYS) == 73
    assert len(SERVICE_KEYS) == len(upstream.SERVICE_KEYS) == 49
    kinds: tuple[tuple[Kind, tuple[str, ...], tuple[AnnotationKey, ...]], ...] = (
        ("ingress", upstream.INGRESS_KEYS, INGRESS_KEYS),
        ("service", upstream.SERVICE_KEYS, SERVICE_KEYS))
    for kind, keys, entries in kinds:
        found = [entry_for(key, kind) for key in keys]
        assert None not in found, [k for k, e in zip(keys, found, strict=True) if e is None]
        # One entry per upstream key (a family's member finds its family), all of them used.
        assert len({id(e) for e in found}) == len(keys)
        assert {id(e) for e in found} == {id(e) for e in entries}


def test_families_and_exact_keys_are_told_apart() -> None:
    family = entry_for(A + "listener-attributes.HTTPS-443", "ingress")
    assert family is not None
    assert family.family
    assert family.acted_on
    assert family.shown == A + "listener-attributes.<protocol>-<port>"
    assert entry_for(A + "listener-attributes.", "ingress") is None  # no name after the dot
    assert entry_for(A + "listener-attributes", "ingress") is None
    exact = entry_for(S + "aws-load-balancer-target-group-attributes", "service")
    per_port = entry_for(S + "aws-load-balancer-target-group-attributes.443", "service")
    assert exact is not None
    assert exact.acted_on
    assert not exact.family
    assert per_port is not None
    assert per_port.family
    assert per_port.acted_on
    assert per_port.shown == S + "aws-load-balancer-target-group-attributes.<port>"
    # Each kind's keys only.
    assert entry_for(A + "scheme", "service") is None
    assert entry_for(S + "aws-load-balancer-scheme", "ingress") is None


def test_the_parsers_key_sets_are_views_of_the_catalogue() -> None:
    assert ingress_annotations.INGRESS_ANNOTATION_KEYS is INGRESS_ANNOTATION_KEYS
    assert service_annotations.SERVICE_ANNOTATION_KEYS is SERVICE_ANNOTATION_KEYS
    # The frontend NLB's enable-frontend-nlb and its 15 frontend-nlb-* keys among them.
    assert len(INGRESS_ANNOTATION_KEYS) == 72
    assert A + "enable-frontend-nlb" in INGRESS_ANNOTATION_KEYS
    assert A + "frontend-nlb-eip-allocations" in INGRESS_ANNOTATION_KEYS
    assert len(SERVICE_ANNOTATION_KEYS) == 49
    assert A + "actions.*" in INGRESS_ANNOTATION_KEYS
    assert A + "wafv2-acl-arn" in INGRESS_ANNOTATION_KEYS
    assert A + "jwt-validation" in INGRESS_ANNOTATION_KEYS
    # Upstream's key, and not the spelling aiolbc once read.
    assert S + "load-balancer-source-ranges" in SERVICE_ANNOTATION_KEYS
    assert S + "aws-load-balancer-source-ranges" not in SERVICE_ANNOTATION_KEYS


def test_the_retired_source_ranges_key_narrows_and_names_upstreams() -> None:
    [retired] = RETIRED_KEYS
    assert retired.key == S + "aws-load-balancer-source-ranges"
    assert retired.narrows
    assert not retired.acted_on
    assert retired.replaced_by == S + "load-balancer-source-ranges"
    assert entry_for(retired.key, "service") is retired


def test_what_narrows_access() -> None:
    narrowing = {e.key for e in (*INGRESS_KEYS, *SERVICE_KEYS) if e.narrows}
    for suffix in ("wafv2-acl-arn", "wafv2-acl-name", "waf-acl-id", "web-acl-id",
                   "shield-advanced-protection", "jwt-validation", "mutual-authentication",
                   "inbound-cidrs", "security-groups", "security-group-prefix-lists",
                   "auth-type", "auth-idp-oidc", "scheme"):
        assert A + suffix in narrowing, suffix
    for suffix in ("load-balancer-source-ranges", "aws-load-balancer-security-groups",
                   "aws-load-balancer-security-group-prefix-lists", "aws-load-balancer-scheme",
                   "aws-load-balancer-internal"):
        assert S + suffix in narrowing, suffix
    for suffix in ("listener-attributes.*", "tags", "enable-frontend-nlb", "transforms.*"):
        assert A + suffix not in narrowing, suffix
    # Every narrowing key aiolbc does not act on is on the Ingress (none of the Service's).
    assert not [e.key for e in SERVICE_KEYS if e.narrows and not e.acted_on]


def test_every_key_that_narrows_access_is_acted_on() -> None:
    """WAF, Shield, authentication, mutual TLS, CIDRs, source ranges and security groups: none
    of upstream's narrowing keys is left for the fail-closed refusal (the retired
    source-ranges spelling apart, which is not upstream's)."""
    assert not [e.key for e in (*INGRESS_KEYS, *SERVICE_KEYS) if e.narrows and not e.acted_on]


def test_what_is_reviewed_on_each_kind() -> None:
    assert reviewed(A + "anything", "ingress")
    assert not reviewed(S + "aws-load-balancer-type", "ingress")
    for key in (S + "aws-load-balancer-anything", S + "load-balancer-source-ranges",
                S + "load-balancer-whatever", S + "actions.TCP-80"):
        assert reviewed(key, "service"), key
    # Other controllers' keys under the same group are theirs.
    others: tuple[object, ...] = (S + "azure-load-balancer-internal", S + "do-loadbalancer-name",
                                  "app", 3)
    for other in others:
        assert not reviewed(other, "service"), other
    assert reviewed_annotations({S + "aws-load-balancer-typo": "x", "team": "a",
                                 S + "load-balancer-source-ranges": "10.0.0.0/8"}, "service") \
        == {S + "aws-load-balancer-typo": "x", S + "load-balancer-source-ranges": "10.0.0.0/8"}


def test_every_entry_says_what_it_is_for() -> None:
    for entry in catalogue.ALL_KEYS:
        assert entry.feature
        assert entry.feature == entry.feature.strip()
        assert entry.kind in ("ingress", "service")
        if entry.backend is not None:
            assert entry.kind == "ingress"
