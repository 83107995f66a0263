"""Mutual TLS, listener attributes and sslRedirectPort in the pure stage: parsing as upstream
(Go's encoding/json), errors as one message, IngressClassParams precedence."""

from __future__ import annotations

import dataclasses

import pytest

from controller.annotations import AnnotationError
from controller.config.featuregates import GATES
from controller.errors import InvalidInput
from controller.ingress import admit_params, build_group
from controller.ingress.merge import BuildError
from controller.ingress.model import BuiltGroup
from controller.ingress.mutualtls import parse_mutual_authentication
from controller.model import MutualAuthentication
from runtime.objects import Obj
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
)
from tests.unit.controller.annotation_objects import build, ingress_world
from tests.unit.controller.ingress.caches import SETTINGS as UNIT_SETTINGS
from tests.unit.controller.ingress.caches import caches, loader

A = "alb.ingress.kubernetes.io/"
KEY = A + "mutual-authentication"
FRAME = "routing.http.response.x_frame_options.header_value"
HTTPS = {"listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
         "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/abc"}


def test_fields_in_any_case_and_upstreams_defaults() -> None:
    parsed = parse_mutual_authentication(
        KEY, '[{"PORT": 443, "Mode": "verify", "truststore": "ts", "extra": 1},'
             ' {"port": 8443, "mode": "passthrough"}]')
    assert parsed == {
        443: MutualAuthentication(mode="verify", trust_store="ts",
                                  ignore_client_certificate_expiry=False),
        8443: MutualAuthentication(mode="passthrough")}


@pytest.mark.parametrize(("raw", "reason"), [
    ("[]", "empty mutualAuthentication configuration"),
    ("nope", "not valid JSON"),
    ('[{"port": 0, "mode": "off"}]', "listen port 0"),
    ('[{"port": "443", "mode": "off"}]', "want a whole number"),
    ('[{"port": 443.0, "mode": "off"}]', "want a whole number"),
    ('[{"port": 443}]', "no mode for port 443"),
    ('[{"port": 443, "mode": "strict"}]', "mode 'strict'"),
    ('[{"port": 443, "mode": "verify"}]', "needs a trustStore"),
    ('[{"port": 443, "mode": "off", "trustStore": "ts"}]', "mode off does not take"),
    ('[{"port": 443, "mode": "passthrough", "ignoreClientCertificateExpiry": true}]',
     "ignoreClientCertificateExpiry"),
    ('[{"port": 443, "mode": "off", "advertiseTrustStoreCaNames": "on"}]',
     "advertiseTrustStoreCaNames"),
    ('[{"port": 443, "mode": "verify", "trustStore": "t", "advertiseTrustStoreCaNames": "x"}]',
     "want on or off"),
    ('[{"port": 443, "mode": "off"}, {"port": 443, "mode": "off"}]', "twice"),
])
def test_bad_values_are_one_message(raw: str, reason: str) -> None:
    with pytest.raises(AnnotationError) as caught:
        parse_mutual_authentication(KEY, raw)
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_https_listener_carries_mutual_tls_and_a_bad_value_fails_the_build() -> None:
    c, _ = ingress_world({**HTTPS, "mutual-authentication":
                          '[{"port": 443, "mode": "verify", "trustStore": "ts"}]'})
    listeners = build(c).stack.listeners
    assert listeners["443"].mutual_authentication == MutualAuthentication(
        mode="verify", trust_store="ts", ignore_client_certificate_expiry=False)
    assert listeners["80"].mutual_authentication is None
    c, _ = ingress_world({**HTTPS, "mutual-authentication": '[{"port": 443, "mode": "x"}]'})
    with pytest.raises(BuildError) as caught:
        build(c)
    assert str(caught.value).startswith(
        "Ingress default/shop: annotation alb.ingress.kubernetes.io/mutual-authentication")


def test_mutual_tls_on_a_port_that_is_not_https_is_a_warning() -> None:
    c, _ = ingress_world({**HTTPS, "mutual-authentication": '[{"port": 80, "mode": "off"}]'})
    built = build(c)
    assert built.stack.listeners["80"].mutual_authentication is None
    assert any("mutual TLS applies to HTTPS listeners only" in w for w in built.warnings)


def test_listener_attributes_from_annotations_and_class_params_win() -> None:
    notes = {**HTTPS, "listener-attributes.HTTPS-443":
             "routing.http.response.server.enabled=false,"
             "routing.http.response.x_frame_options.header_value=DENY"}
    c, _ = ingress_world(notes)
    assert build(c).stack.listeners["443"].attributes == {
        "routing.http.response.server.enabled": "false",
        "routing.http.response.x_frame_options.header_value": "DENY"}
    params = class_params("p", {"listeners": [{"protocol": "HTTPS", "port": 443,
                                               "listenerAttributes": [{
                                                   "key": "routing.http.response.server.enabled",
                                                   "value": "true"}]}]})
    c, _ = ingress_world(notes, params=params)
    assert build(c).stack.listeners["443"].attributes == {
        "routing.http.response.server.enabled": "true",
        "routing.http.response.x_frame_options.header_value": "DENY"}


def test_ssl_redirect_port_from_class_params_replaces_the_annotation() -> None:
    c, _ = ingress_world({**HTTPS, "ssl-redirect": "8443"},
                         params=class_params("p", {"sslRedirectPort": "443"}))
    [action] = build(c).stack.listeners["80"].default_actions
    assert action.model_dump()["port"] == "443"


def _group(*members: Obj) -> BuiltGroup:
    c = caches(ingress_class(), backend_service("web"), *members)
    return build_group(loader(c).load(Request("", "shop")), c, UNIT_SETTINGS)


def _member(name: str, mtls: str | None = None, **more: str) -> Obj:
    notes = {A + "group.name": "shop", **{A + k: v for k, v in HTTPS.items()},
             **{A + k.replace("_", "-"): v for k, v in more.items()}}
    if mtls is not None:
        notes[A + "mutual-authentication"] = mtls
    return ingress(name, annotations=notes, paths=[ingress_path(f"/{name}", "web")])


def test_members_agreeing_on_mutual_tls_share_it_and_disagreeing_ones_are_named() -> None:
    verify = '[{"port": 443, "mode": "verify", "trustStore": "ts"}]'
    built = _group(_member("a", verify), _member("b", verify.replace('"port"', '"Port"')),
                   _member("c"))
    assert built.stack.listeners["443"].mutual_authentication == MutualAuthentication(
        mode="verify", trust_store="ts", ignore_client_certificate_expiry=False)
    with pytest.raises(BuildError) as caught:
        _group(_member("a", verify), _member("b", '[{"port": 443, "mode": "passthrough"}]'))
    assert str(caught.value) == (
        "annotation alb.ingress.kubernetes.io/mutual-authentication conflicts within the group "
        "for port 443: default/a has 'mode=verify,trustStore=ts,"
        "ignoreClientCertificateExpiry=false', default/b has 'mode=passthrough'")


def test_the_gate_turns_an_unconfigured_https_listener_off() -> None:
    c = caches(ingress_class(), backend_service("web"), _member("a"))
    group = loader(c).load(Request("", "shop"))
    off = build_group(group, c, UNIT_SETTINGS)
    assert off.stack.listeners["443"].mutual_authentication is None
    gated = dataclasses.replace(UNIT_SETTINGS,
                                gates=GATES.parse("EnhancedDefaultBehavior=true"))
    on = build_group(group, c, gated)
    assert on.stack.listeners["443"].mutual_authentication == MutualAuthentication(mode="off")
    assert on.stack.listeners["80"].mutual_authentication is None


def test_members_disagreeing_on_an_attribute_fail_unless_class_params_set_it() -> None:
    a = _member("a", **{"listener-attributes.HTTPS-443": f"{FRAME}=DENY"})
    b = _member("b", **{"listener-attributes.HTTPS-443": f"{FRAME}=SAMEORIGIN"})
    with pytest.raises(BuildError, match="default/a has 'DENY', default/b has 'SAMEORIGIN'"):
        _group(a, b)


@pytest.mark.parametrize(("spec", "reason"), [
    ({"sslRedirectPort": "https"}, "spec.sslRedirectPort"),
    ({"sslRedirectPort": "70000"}, "spec.sslRedirectPort"),
    ({"listeners": [{"protocol": "TCP", "port": 80}]}, "spec.listeners.0.protocol"),
    ({"listeners": [{"protocol": "HTTP", "port": 0}]}, "spec.listeners.0.port"),
    ({"listeners": [{"protocol": "HTTP", "port": 80}, {"protocol": "HTTP", "port": 80}]},
     "HTTP-80 is listed twice"),
])
def test_bad_class_params_are_denied(spec: Obj, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        admit_params(class_params("p", spec))
    assert reason in str(caught.value)
