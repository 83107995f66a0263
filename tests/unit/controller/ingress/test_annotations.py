"""Ingress annotation parsing: upstream's defaults, one clear error per bad value, and no
other exception for any string."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.ingress.annotations import (
    parse_auth,
    parse_ingress,
    parse_target_group,
)
from controller.ingress.merge import BuildError
from controller.ingress.model import build_group
from runtime.reconcile import Request
from tests.support.objects import backend_service, ingress, ingress_class, secret
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"

INGRESS_KEYS = [
    "scheme", "load-balancer-name", "ip-address-type", "subnets", "security-groups",
    "load-balancer-attributes", "listen-ports", "certificate-arn", "ssl-policy", "ssl-redirect",
    "inbound-cidrs", "tags", "actions.web", "conditions.web", "group.name", "group.order",
]
TG_KEYS = [
    "target-type", "backend-protocol", "backend-protocol-version", "target-group-attributes",
    "healthcheck-port", "healthcheck-protocol", "healthcheck-path",
    "healthcheck-interval-seconds", "healthcheck-timeout-seconds", "healthy-threshold-count",
    "unhealthy-threshold-count", "success-codes", "multi-cluster-target-group",
]
AUTH_KEYS = ["auth-type", "auth-idp-oidc", "auth-idp-cognito", "auth-scope",
             "auth-session-cookie", "auth-session-timeout", "auth-on-unauthenticated-request",
             "jwt-validation"]
ALL_KEYS = INGRESS_KEYS + TG_KEYS + AUTH_KEYS

# Text that looks like what people write, plus anything at all.
values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "true", "1", "-1", "5000", "HTTP", "ip", "internal", "[]", "{}",
                     '[{"HTTP": 80}]', '[{"HTTPS": 0}]', '{"type":"forward"}', "a=b,c",
                     "=x", "subnet-1", "0.0.0.0/0", "traffic-port", "200-299"]),
    st.from_regex(r"\[\{\"(HTTP|HTTPS|TCP)\": ?-?[0-9]{1,6}\}\]", fullmatch=True),
)


def test_defaults() -> None:
    ann = parse_ingress(ingress("a"))
    assert ann.scheme is None
    assert ann.listen_ports is None
    assert ann.certificate_arns == ()
    tg = parse_target_group(ingress("a"), backend_service("web"), default_target_type="instance")
    assert (tg.target_type, tg.protocol, tg.hc_path, tg.hc_interval, tg.hc_timeout,
            tg.healthy_threshold, tg.unhealthy_threshold, tg.success_codes, tg.hc_port) == (
        "instance", "HTTP", "/", 15, 5, 2, 2, "200", "traffic-port")
    grpc = parse_target_group(ingress("a", annotations={A + "backend-protocol-version": "GRPC"}),
                              None, default_target_type="ip")
    assert (grpc.hc_path, grpc.success_codes) == ("/AWS.ALB/healthcheck", "12")
    assert parse_auth(ingress("a"), None) is None


def test_service_wins_for_target_group_settings() -> None:
    ing = ingress("a", annotations={A + "target-type": "ip", A + "healthcheck-path": "/ing",
                                    A + "multi-cluster-target-group": "true"})
    svc = backend_service("web", annotations={A + "healthcheck-path": "/svc",
                                      A + "multi-cluster-target-group": "false"})
    tg = parse_target_group(ing, svc, default_target_type="instance")
    assert (tg.target_type, tg.hc_path) == ("ip", "/svc")
    assert tg.multi_cluster  # the Ingress's value first, as upstream


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("scheme", "public", "is not one of: internal, internet-facing"),
    ("listen-ports", '[{"HTTP": 80, "HTTPS": 443}]', "not one"),
    ("listen-ports", '[{"TCP": 80}]', "want HTTP or HTTPS"),
    ("listen-ports", "80", "unexpected structure"),
    ("ssl-redirect", "https", "is not an integer"),
    ("subnets", " , ", "lists no subnet ID or name"),
    ("inbound-cidrs", "10.0.0.0/33", "not a CIDR"),
    ("certificate-arn", "cert-1", "not a certificate ARN (ACM or IAM)"),
    ("load-balancer-name", "-bad", "must be letters, digits and '-'"),
    ("tags", "novalue", "not key=value"),
    ("actions.web", '{"type":"redirect"}', "needs redirectConfig"),
    ("actions.web", '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"x"}]}}',
     "needs a servicePort"),
    ("conditions.web", '[{"field":"source-ip","sourceIpConfig":{"values":["nope"]}}]',
     "not a CIDR"),
    ("conditions.web", '[{"field":"http-header"}]', "needs its config"),
])
def test_ingress_errors_name_key_and_value(key: str, value: str, reason: str) -> None:
    with pytest.raises(AnnotationError) as info:
        parse_ingress(ingress("a", annotations={A + key: value}))
    text = str(info.value)
    assert text.startswith(f"annotation {A}{key}")
    assert reason in text
    assert "\n" not in text


def test_listen_ports_and_actions_parse() -> None:
    ann = parse_ingress(ingress("a", annotations={
        A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 8443}]',
        A + "actions.fixed": '{"type":"fixed-response","fixedResponseConfig":'
        '{"contentType":"text/plain","statusCode":"503","messageBody":"down"}}',
        A + "inbound-cidrs": "10.0.0.0/8, 192.168.0.0/16",
    }))
    assert [(p.protocol, p.port) for p in ann.listen_ports or ()] == [("HTTP", 80),
                                                                      ("HTTPS", 8443)]
    fixed = ann.actions["fixed"].fixed_response_config
    assert fixed is not None
    assert fixed.status_code == "503"
    assert fixed.message_body == "down"
    assert ann.inbound_cidrs == ("10.0.0.0/8", "192.168.0.0/16")


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(ALL_KEYS), value=values)
def test_any_string_is_parsed_or_one_clear_error(key: str, value: str) -> None:
    ing = ingress("a", annotations={A + key: value})
    svc = backend_service("web")
    for parse in (lambda: parse_ingress(ing),
                  lambda: parse_target_group(ing, svc, default_target_type="ip"),
                  lambda: parse_auth(ing, svc)):
        text = f"annotation {A}"
        try:
            parse()
        except AnnotationError as exc:
            text = str(exc)
        assert "\n" not in text
        assert text.startswith(f"annotation {A}")


@settings(max_examples=200, deadline=None)
@given(annotations=st.dictionaries(st.sampled_from(ALL_KEYS), values, max_size=4))
def test_building_never_raises_anything_but_build_error(annotations: dict[str, str]) -> None:
    c = caches(ingress_class("alb"), backend_service("web"), secret("s", {"clientID": "i",
                                                                  "clientSecret": "s"}),
               ingress("a", annotations={A + k: v for k, v in annotations.items()}))
    group = loader(c).load(Request("default", "a"))
    if not group.members:
        return  # a valid group.name moved it to an explicit group
    message = ""
    try:
        build_group(group, c, SETTINGS)
    except BuildError as exc:
        message = str(exc)
    assert "\n" not in message
