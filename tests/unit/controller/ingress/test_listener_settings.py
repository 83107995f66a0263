"""Mutual TLS, listener attributes and sslRedirectPort in the pure stage: parsing as upstream
(Go's encoding/json), errors as one message, IngressClassParams precedence."""

from __future__ import annotations

import pytest

from controller.annotations import AnnotationError
from controller.ingress.merge import BuildError
from controller.ingress.mutualtls import parse_mutual_authentication
from controller.model import MutualAuthentication
from tests.support.objects import class_params
from tests.unit.controller.annotation_objects import build, ingress_world

KEY = "alb.ingress.kubernetes.io/mutual-authentication"
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
