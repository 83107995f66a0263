"""A Service's NLB annotations parsed into ServiceLBConfig: upstream defaults, every
annotation's effect, and one exact message per bad value."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from controller import app
from controller.annotations import AnnotationError
from controller.config import parse_config
from controller.service import ServiceLBConfig, parse_service_config
from controller.settings import StackDefaults
from tests.support.objects import web_service

P = "service.beta.kubernetes.io/"
DEFAULTS = StackDefaults()


def parse(svc: dict[str, Any], defaults: StackDefaults = DEFAULTS) -> ServiceLBConfig:
    return parse_service_config(svc, defaults=defaults)


def error(svc: dict[str, Any], defaults: StackDefaults = DEFAULTS) -> str:
    with pytest.raises(AnnotationError) as exc:
        parse(svc, defaults)
    return str(exc.value)


def test_defaults_equal_upstream() -> None:
    cfg = parse(web_service())
    assert cfg.model_dump() == {
        "load_balancer_type": None,
        "target_type": "instance",
        "name": None,
        "scheme": "internal",
        "scheme_from_annotation": False,
        "ip_address_type": "ipv4",
        "subnets": None,
        "ssl_certificates": (),
        "ssl_ports": (),
        "ssl_policy": "ELBSecurityPolicy-2016-08",
        "backend_protocol": "tcp",
        "alpn_policy": None,
        "health_check": {
            "protocol": "TCP", "port": "traffic-port", "path": None, "success_codes": None,
            "interval_seconds": 10, "timeout_seconds": 10, "healthy_threshold": 3,
            "unhealthy_threshold": 3,
        },
        "target_group_attributes": {"proxy_protocol_v2.enabled": "false"},
        "load_balancer_attributes": {},
        "tags": {},
        "target_node_labels": {},
        "multi_cluster_target_group": False,
        "security_groups": None,
        "prefix_lists": (),
        "source_ranges": None,
        "manage_backend_rules": None,
        "disable_security_groups": False,
        "icmp_path_mtu": False,
        "inbound_rules_on_private_link": None,
    }


def test_http_health_check_defaults_path_and_success_codes() -> None:
    hc = parse(web_service({"aws-load-balancer-healthcheck-protocol": "http"})).health_check
    assert (hc.protocol, hc.path, hc.success_codes) == ("HTTP", "/", "200-399")


def test_instance_targets_with_local_traffic_policy_use_the_node_health_check() -> None:
    svc = web_service(externalTrafficPolicy="Local", healthCheckNodePort=32001)
    hc = parse(svc).health_check
    assert hc.model_dump() == {
        "protocol": "HTTP", "port": 32001, "path": "/healthz", "success_codes": "200-399",
        "interval_seconds": 10, "timeout_seconds": 6, "healthy_threshold": 2,
        "unhealthy_threshold": 2,
    }
    ip = parse(web_service({"aws-load-balancer-nlb-target-type": "ip"},
                           externalTrafficPolicy="Local", healthCheckNodePort=32001))
    assert ip.health_check.protocol == "TCP"
    assert ip.health_check.port == "traffic-port"


def test_local_policy_annotations_still_win() -> None:
    svc = web_service({"aws-load-balancer-healthcheck-protocol": "TCP",
                       "aws-load-balancer-healthcheck-port": "traffic-port"},
                      externalTrafficPolicy="Local", healthCheckNodePort=32001)
    hc = parse(svc).health_check
    assert (hc.protocol, hc.port, hc.path, hc.healthy_threshold) == ("TCP", "traffic-port",
                                                                      None, 2)


# (annotation suffix, value, dotted attribute, expected parsed value)
EFFECTS: list[tuple[str, str, str, Any]] = [
    ("aws-load-balancer-type", "external", "load_balancer_type", "external"),
    ("aws-load-balancer-nlb-target-type", "ip", "target_type", "ip"),
    ("aws-load-balancer-name", "my-nlb-1", "name", "my-nlb-1"),
    ("aws-load-balancer-scheme", "internet-facing", "scheme", "internet-facing"),
    ("aws-load-balancer-internal", "false", "scheme", "internet-facing"),
    ("aws-load-balancer-ip-address-type", "dualstack", "ip_address_type", "dualstack"),
    ("aws-load-balancer-subnets", "subnet-1, mySubnet", "subnets", ("subnet-1", "mySubnet")),
    ("aws-load-balancer-ssl-cert",
     "arn:aws:acm:us-west-2:1:certificate/a,arn:aws:iam::1:server-certificate/x",
     "ssl_certificates", ("arn:aws:acm:us-west-2:1:certificate/a",
                          "arn:aws:iam::1:server-certificate/x")),
    ("aws-load-balancer-ssl-ports", "443, https", "ssl_ports", ("443", "https")),
    ("aws-load-balancer-ssl-negotiation-policy", "ELBSecurityPolicy-TLS13-1-2-2021-06",
     "ssl_policy", "ELBSecurityPolicy-TLS13-1-2-2021-06"),
    ("aws-load-balancer-backend-protocol", "ssl", "backend_protocol", "ssl"),
    ("aws-load-balancer-alpn-policy", "HTTP2Preferred", "alpn_policy", "HTTP2Preferred"),
    ("aws-load-balancer-healthcheck-protocol", "HTTPS", "health_check.protocol", "HTTPS"),
    ("aws-load-balancer-healthcheck-port", "8080", "health_check.port", 8080),
    ("aws-load-balancer-healthcheck-port", "http", "health_check.port", "http"),
    ("aws-load-balancer-healthcheck-healthy-threshold", "5", "health_check.healthy_threshold",
     5),
    ("aws-load-balancer-healthcheck-unhealthy-threshold", "7",
     "health_check.unhealthy_threshold", 7),
    ("aws-load-balancer-healthcheck-timeout", "6", "health_check.timeout_seconds", 6),
    ("aws-load-balancer-healthcheck-interval", "30", "health_check.interval_seconds", 30),
    ("aws-load-balancer-target-group-attributes", "deregistration_delay.timeout_seconds=120",
     "target_group_attributes", {"proxy_protocol_v2.enabled": "false",
                                 "deregistration_delay.timeout_seconds": "120"}),
    ("aws-load-balancer-target-group-attributes", "proxy_protocol_v2.enabled=true",
     "target_group_attributes", {"proxy_protocol_v2.enabled": "true"}),
    ("aws-load-balancer-proxy-protocol", "*", "target_group_attributes",
     {"proxy_protocol_v2.enabled": "true"}),
    ("aws-load-balancer-target-node-labels", "role=edge", "target_node_labels",
     {"role": "edge"}),
    ("aws-load-balancer-attributes", "deletion_protection.enabled=true,"
     "access_logs.s3.enabled=true", "load_balancer_attributes",
     {"deletion_protection.enabled": "true", "access_logs.s3.enabled": "true"}),
    ("aws-load-balancer-cross-zone-load-balancing-enabled", "true", "load_balancer_attributes",
     {"load_balancing.cross_zone.enabled": "true"}),
    ("aws-load-balancer-access-log-enabled", "true", "load_balancer_attributes",
     {"access_logs.s3.enabled": "true"}),
    ("aws-load-balancer-additional-resource-tags", "Environment=dev,Team=test", "tags",
     {"Environment": "dev", "Team": "test"}),
    ("aws-load-balancer-multi-cluster-target-group", "true", "multi_cluster_target_group",
     True),
]


def attribute(cfg: ServiceLBConfig, dotted: str) -> Any:
    value: Any = cfg
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("suffix", "raw", "dotted", "expected"), EFFECTS,
                         ids=[f"{e[0]}={e[1]}" for e in EFFECTS])
def test_each_annotation_changes_the_parsed_value(suffix: str, raw: str, dotted: str,
                                                  expected: Any) -> None:
    before = attribute(parse(web_service()), dotted)
    after = attribute(parse(web_service({suffix: raw})), dotted)
    assert after == expected
    assert after != before


@pytest.mark.parametrize(("suffix", "raw", "field", "expected"), [
    ("aws-load-balancer-healthcheck-path", "/ready", "path", "/ready"),
    ("aws-load-balancer-healthcheck-success-codes", "200,202", "success_codes", "200,202"),
])
def test_http_only_health_check_annotations(suffix: str, raw: str, field: str,
                                            expected: str) -> None:
    http = {"aws-load-balancer-healthcheck-protocol": "HTTP", suffix: raw}
    assert getattr(parse(web_service(http)).health_check, field) == expected
    # Upstream ignores both for TCP health checks.
    assert getattr(parse(web_service({suffix: raw})).health_check, field) is None


def test_scheme_annotation_wins_over_the_deprecated_internal_one() -> None:
    svc = web_service({"aws-load-balancer-scheme": "internal",
                       "aws-load-balancer-internal": "not-a-bool"})
    assert parse(svc).scheme == "internal"
    assert parse(web_service({"aws-load-balancer-internal": "true"}),
                 StackDefaults(scheme="internet-facing")).scheme == "internal"


def test_controller_defaults_apply() -> None:
    defaults = StackDefaults(scheme="internet-facing", target_type="ip",
                             ssl_policy="ELBSecurityPolicy-TLS13-1-2-2021-06",
                             tags={"team": "platform"})
    cfg = parse(web_service(), defaults)
    assert (cfg.scheme, cfg.target_type, cfg.ssl_policy, cfg.tags) == (
        "internet-facing", "ip", "ELBSecurityPolicy-TLS13-1-2-2021-06", {"team": "platform"})


def test_defaults_from_controller_flags() -> None:
    config = parse_config(["--cluster-name", "c", "--aws-vpc-id", "vpc-1",
                           "--default-load-balancer-scheme",
                           "internet-facing", "--default-target-type", "ip",
                           "--default-ssl-policy", "P", "--default-tags", "a=1,b=2"])
    defaults = app.service_settings(config, region="us-west-2").defaults
    assert defaults == StackDefaults(scheme="internet-facing", target_type="ip",
                                     ssl_policy="P", tags={"a": "1", "b": "2"})


def test_defaults_are_immutable() -> None:
    source = {"a": "1"}
    defaults = StackDefaults(tags=source)
    source["a"] = "2"
    assert defaults.tags == {"a": "1"}
    with pytest.raises(TypeError):
        defaults.tags["b"] = "x"  # type: ignore[index]


def test_default_tags_win_over_annotation_tags() -> None:
    svc = web_service({"aws-load-balancer-additional-resource-tags": "team=app,env=dev"})
    assert parse(svc, StackDefaults(tags={"team": "platform"})).tags == {
        "team": "platform", "env": "dev"}


def test_external_managed_tags_are_refused() -> None:
    svc = web_service({"aws-load-balancer-additional-resource-tags": "env=dev,Owner=me"})
    assert error(svc, StackDefaults(external_managed_tags=frozenset({"Owner"}))) == (
        f'annotation {P}aws-load-balancer-additional-resource-tags: "env=dev,Owner=me" sets '
        'tag "Owner", which is managed outside the controller (--external-managed-tags)')


def test_deprecated_attribute_annotations_win_ties() -> None:
    svc = web_service({
           "aws-load-balancer-attributes": "load_balancing.cross_zone.enabled=false,"
                                           "access_logs.s3.bucket=old",
           "aws-load-balancer-cross-zone-load-balancing-enabled": "true",
           "aws-load-balancer-access-log-enabled": "true",
           "aws-load-balancer-access-log-s3-bucket-name": "logs",
           "aws-load-balancer-access-log-s3-bucket-prefix": "nlb",
       })
    assert parse(svc).load_balancer_attributes == {
        "load_balancing.cross_zone.enabled": "true", "access_logs.s3.enabled": "true",
        "access_logs.s3.bucket": "logs", "access_logs.s3.prefix": "nlb"}
    off = web_service({"aws-load-balancer-access-log-enabled": "false",
                       "aws-load-balancer-access-log-s3-bucket-name": "logs"})
    assert parse(off).load_balancer_attributes == {}


def test_proxy_protocol_wins_over_target_group_attributes() -> None:
    svc = web_service({
        "aws-load-balancer-target-group-attributes": "proxy_protocol_v2.enabled=false",
        "aws-load-balancer-proxy-protocol": "*"})
    assert parse(svc).target_group_attributes == {"proxy_protocol_v2.enabled": "true"}
    empty = web_service({"aws-load-balancer-target-group-attributes": "proxy_protocol_v2.enabled="})
    assert parse(empty).target_group_attributes == {}


def test_nlb_ip_means_ip_targets_whatever_the_target_type_says() -> None:
    svc = web_service({"aws-load-balancer-type": "nlb-ip",
                       "aws-load-balancer-nlb-target-type": "instance"}, load_balancer_class=None)
    assert parse(svc).target_type == "ip"


def test_external_selection_takes_the_target_type_annotation() -> None:
    svc = web_service({"aws-load-balancer-type": "external",
                       "aws-load-balancer-nlb-target-type": "instance"}, load_balancer_class=None)
    assert parse(svc, StackDefaults(target_type="ip")).target_type == "instance"


def test_tls_ports() -> None:
    cert = {"aws-load-balancer-ssl-cert": "arn:aws:acm:us-west-2:1:certificate/a"}
    every = parse(web_service(cert))
    assert every.is_tls_port(port=443, name="https")
    assert every.is_tls_port(port=80)
    assert not every.is_tls_port(port=53, protocol="UDP")
    some = parse(web_service({**cert, "aws-load-balancer-ssl-ports": "443, metrics"}))
    assert some.is_tls_port(port=443)
    assert some.is_tls_port(port=9090, name="metrics")
    assert not some.is_tls_port(port=80, name="http")
    # Upstream's docs: "*" does not match any port.
    star = parse(web_service({**cert, "aws-load-balancer-ssl-ports": "*"}))
    assert not star.is_tls_port(port=443, name="https")
    assert not parse(web_service({"aws-load-balancer-ssl-ports": "443"})).is_tls_port(port=443)


def test_config_is_frozen() -> None:
    cfg = parse(web_service())
    with pytest.raises(ValidationError):
        cfg.scheme = "internet-facing"


# --- one exact message per bad value --------------------------------------------------------

BAD: list[tuple[dict[str, str], str]] = [
    ({"aws-load-balancer-healthcheck-interval": "ten"},
     'aws-load-balancer-healthcheck-interval: "ten" is not an integer'),
    ({"aws-load-balancer-healthcheck-interval": "301"},
     'aws-load-balancer-healthcheck-interval: "301" is out of range: want 5..300'),
    ({"aws-load-balancer-healthcheck-timeout": "1"},
     'aws-load-balancer-healthcheck-timeout: "1" is out of range: want 2..120'),
    ({"aws-load-balancer-healthcheck-healthy-threshold": "11"},
     'aws-load-balancer-healthcheck-healthy-threshold: "11" is out of range: want 2..10'),
    ({"aws-load-balancer-healthcheck-unhealthy-threshold": "1"},
     'aws-load-balancer-healthcheck-unhealthy-threshold: "1" is out of range: want 2..10'),
    ({"aws-load-balancer-healthcheck-protocol": "UDP"},
     'aws-load-balancer-healthcheck-protocol: "UDP" is not one of: TCP, HTTP, HTTPS'),
    ({"aws-load-balancer-healthcheck-port": "metrics"},
     'aws-load-balancer-healthcheck-port: "metrics" is not "traffic-port", a port number or '
     "the name of one of the Service's ports"),
    ({"aws-load-balancer-healthcheck-port": "0"},
     'aws-load-balancer-healthcheck-port: "0" is out of range: want 1..65535'),
    ({"aws-load-balancer-healthcheck-protocol": "HTTP",
      "aws-load-balancer-healthcheck-path": "healthz"},
     'aws-load-balancer-healthcheck-path: "healthz" must start with "/" and be at most 1024 '
     "printable ASCII characters"),
    ({"aws-load-balancer-healthcheck-protocol": "HTTP",
      "aws-load-balancer-healthcheck-success-codes": "200-600"},
     'aws-load-balancer-healthcheck-success-codes: "200-600" is not a list of HTTP codes or '
     "ranges within 200..599 (e.g. 200-399 or 200,202)"),
    ({"aws-load-balancer-healthcheck-protocol": "HTTP",
      "aws-load-balancer-healthcheck-success-codes": "399-200"},
     'aws-load-balancer-healthcheck-success-codes: "399-200" is not a list of HTTP codes or '
     "ranges within 200..599 (e.g. 200-399 or 200,202)"),
    ({"aws-load-balancer-nlb-target-type": "pod"},
     'aws-load-balancer-nlb-target-type: "pod" is not one of: instance, ip'),
    ({"aws-load-balancer-name": "x" * 33},
     f'aws-load-balancer-name: "{"x" * 33}" is longer than 32 characters'),
    ({"aws-load-balancer-name": "-edge"},
     "aws-load-balancer-name: \"-edge\" must be letters, digits and '-', not starting or "
     "ending with '-'"),
    ({"aws-load-balancer-name": "my_nlb"},
     "aws-load-balancer-name: \"my_nlb\" must be letters, digits and '-', not starting or "
     "ending with '-'"),
    ({"aws-load-balancer-name": "internal-edge"},
     'aws-load-balancer-name: "internal-edge" must not start with "internal-"'),
    ({"aws-load-balancer-scheme": "public"},
     'aws-load-balancer-scheme: "public" is not one of: internal, internet-facing'),
    ({"aws-load-balancer-internal": "yes"},
     'aws-load-balancer-internal: "yes" is not a boolean (use true or false)'),
    ({"aws-load-balancer-ip-address-type": "ipv6"},
     'aws-load-balancer-ip-address-type: "ipv6" is not one of: ipv4, dualstack'),
    ({"aws-load-balancer-subnets": " , "},
     'aws-load-balancer-subnets: " , " lists no subnet ID or name'),
    ({"aws-load-balancer-ssl-cert": "arn:aws:acm:us-west-2:1:certificate/a, my-cert"},
     'aws-load-balancer-ssl-cert: "arn:aws:acm:us-west-2:1:certificate/a, my-cert" has '
     '"my-cert", which is not a certificate ARN (ACM or IAM)'),
    ({"aws-load-balancer-ssl-cert": "arn:aws:s3:::bucket"},
     'aws-load-balancer-ssl-cert: "arn:aws:s3:::bucket" has "arn:aws:s3:::bucket", which is '
     "not a certificate ARN (ACM or IAM)"),
    ({"aws-load-balancer-ssl-negotiation-policy": ""},
     'aws-load-balancer-ssl-negotiation-policy: "" is empty'),
    ({"aws-load-balancer-backend-protocol": "http"},
     'aws-load-balancer-backend-protocol: "http" is not one of: tcp, ssl'),
    ({"aws-load-balancer-alpn-policy": "h2"},
     'aws-load-balancer-alpn-policy: "h2" is not one of: HTTP1Only, HTTP2Only, HTTP2Optional, '
     "HTTP2Preferred, None"),
    ({"aws-load-balancer-target-group-attributes": "stickiness.enabled"},
     'aws-load-balancer-target-group-attributes: "stickiness.enabled" has an item '
     '"stickiness.enabled" that is not key=value'),
    ({"aws-load-balancer-target-group-attributes": "preserve_client_ip.enabled=maybe"},
     'aws-load-balancer-target-group-attributes: "preserve_client_ip.enabled=maybe" sets '
     'preserve_client_ip.enabled="maybe", which is not true or false'),
    ({"aws-load-balancer-attributes": "deletion_protection.enabled=on"},
     'aws-load-balancer-attributes: "deletion_protection.enabled=on" sets '
     'deletion_protection.enabled="on", which is not true or false'),
    ({"aws-load-balancer-additional-resource-tags": "=x"},
     'aws-load-balancer-additional-resource-tags: "=x" has an item "=x" with an empty key'),
    ({"aws-load-balancer-proxy-protocol": "true"},
     'aws-load-balancer-proxy-protocol: "true" is not one of: *'),
    ({"aws-load-balancer-multi-cluster-target-group": "si"},
     'aws-load-balancer-multi-cluster-target-group: "si" is not a boolean (use true or false)'),
    ({"aws-load-balancer-cross-zone-load-balancing-enabled": "enabled"},
     'aws-load-balancer-cross-zone-load-balancing-enabled: "enabled" is not a boolean (use '
     "true or false)"),
    ({"aws-load-balancer-target-node-labels": "role"},
     'aws-load-balancer-target-node-labels: "role" has an item "role" that is not key=value'),
]


@pytest.mark.parametrize(("annotations", "expected"), BAD, ids=[b[1][:60] for b in BAD])
def test_bad_values_get_one_exact_message(annotations: dict[str, str], expected: str) -> None:
    assert error(web_service(annotations)) == f"annotation {P}{expected}"


def test_external_without_target_type_is_an_error() -> None:
    svc = web_service({"aws-load-balancer-type": "external"}, load_balancer_class=None)
    assert error(svc) == (f"annotation {P}aws-load-balancer-nlb-target-type is required with "
                          'aws-load-balancer-type "external" (use ip or instance)')
    # Selected by class, the target type defaults instead.
    assert parse(web_service({"aws-load-balancer-type": "external"})).target_type == "instance"


def test_first_error_in_field_order_is_reported() -> None:
    svc = web_service({"aws-load-balancer-healthcheck-interval": "ten",
                       "aws-load-balancer-scheme": "public",
                       "aws-load-balancer-name": "_"})
    assert error(svc).startswith(f"annotation {P}aws-load-balancer-name:")


def test_non_string_annotation_value_is_an_annotation_error() -> None:
    svc = web_service()
    svc["metadata"]["annotations"][P + "aws-load-balancer-healthcheck-interval"] = 10
    assert error(svc) == (f"annotation {P}aws-load-balancer-healthcheck-interval is not a "
                          "string (got int)")


def test_defaults_hash_by_value() -> None:
    a = StackDefaults(tags={"a": "1"}, external_managed_tags=frozenset({"x"}))
    b = StackDefaults(tags={"a": "1"}, external_managed_tags=frozenset({"x"}))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, StackDefaults()}) == 2


def test_local_policy_without_a_health_check_node_port_checks_the_traffic_port() -> None:
    hc = parse(web_service(externalTrafficPolicy="Local")).health_check
    assert (hc.protocol, hc.port, hc.path) == ("HTTP", "traffic-port", "/healthz")
    flag = parse(web_service(externalTrafficPolicy="Local", healthCheckNodePort=True)).health_check
    assert flag.port == "traffic-port"
