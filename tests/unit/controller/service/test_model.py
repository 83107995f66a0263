"""The pure stage: a Service and its annotations → the desired NLB stack."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.model import (
    LISTENER,
    LOAD_BALANCER,
    SECURITY_GROUP,
    TARGET_GROUP,
    TARGET_GROUP_BINDING,
    InvalidStack,
    Ref,
    SubnetDiscovery,
    service_load_balancer_name,
)
from controller.service import (
    SERVICE_ANNOTATION_KEYS,
    InvalidService,
    ModelSettings,
    ServiceDefaults,
    build_stack,
)
from controller.service.annotations import PREFIX
from tests.support.objects import service_port, web_service

SETTINGS = ModelSettings(cluster_name="prod", region="us-west-2", vpc_id="vpc-1")
CERT = "arn:aws:acm:us-west-2:1:certificate/a"


def test_default_stack() -> None:
    stack = build_stack(web_service(), settings=SETTINGS)
    assert stack.id == "shop/web"
    assert stack.kind == "service"
    lb = stack.load_balancers["LoadBalancer"]
    assert lb.type == "network"
    assert lb.scheme == "internal"
    assert lb.subnets == SubnetDiscovery(role="internal-elb")
    assert lb.name == service_load_balancer_name("prod", "shop", "web", "internal", uid="u-1")
    assert sorted(stack.listeners) == ["443", "80"]
    assert {lid: lis.protocol for lid, lis in stack.listeners.items()} == {"443": "TCP",
                                                                           "80": "TCP"}
    tg = stack.target_groups["shop/web:80"]
    assert (tg.protocol, tg.port, tg.target_type) == ("TCP", 30080, "instance")
    assert tg.health_check.protocol == "TCP"
    assert tg.health_check.port == "traffic-port"
    assert (tg.health_check.interval_seconds, tg.health_check.timeout_seconds) == (10, 10)
    assert tg.attributes == {"proxy_protocol_v2.enabled": "false"}
    forward = stack.listeners["80"].default_actions[0]
    assert forward.type == "forward"
    assert forward.target_groups[0].target_group_arn == Ref.to(
        TARGET_GROUP, "shop/web:80", "targetGroupARN")
    binding = stack.target_group_bindings["shop/web:80"]
    assert binding.name == tg.name
    assert binding.namespace == "shop"
    assert binding.target_type == "instance"
    assert (binding.service_ref.name, binding.service_ref.port) == ("web", 80)
    assert binding.labels == {"service.k8s.aws/stack-name": "web",
                              "service.k8s.aws/stack-namespace": "shop"}
    assert binding.node_selector is None
    assert {t for t, _, _ in stack.iter_resources()} == {
        SECURITY_GROUP, TARGET_GROUP, LOAD_BALANCER, LISTENER, TARGET_GROUP_BINDING}


def test_ip_targets_use_target_ports() -> None:
    stack = build_stack(web_service({"aws-load-balancer-nlb-target-type": "ip"}, ports=[
        service_port(80, 8080, "http"), service_port(81, "web", "named")]), settings=SETTINGS)
    assert stack.target_groups["shop/web:80"].port == 8080
    assert stack.target_groups["shop/web:81"].port == 1  # a named target port: upstream's 1
    assert stack.target_group_bindings["shop/web:80"].target_type == "ip"


def test_tls_listeners_from_certificate_annotations() -> None:
    stack = build_stack(web_service({"aws-load-balancer-ssl-cert": CERT,
                                     "aws-load-balancer-ssl-ports": "https",
                                     "aws-load-balancer-alpn-policy": "HTTP2Preferred",
                                     "aws-load-balancer-backend-protocol": "ssl"}),
                        settings=SETTINGS)
    tls, plain = stack.listeners["443"], stack.listeners["80"]
    assert (tls.protocol, tuple(tls.certificates), tls.ssl_policy, tls.alpn_policy) == (
        "TLS", (CERT,), "ELBSecurityPolicy-2016-08", "HTTP2Preferred")
    assert (plain.protocol, tuple(plain.certificates), plain.ssl_policy) == ("TCP", (), None)
    assert stack.target_groups["shop/web:443"].protocol == "TLS"
    assert stack.target_groups["shop/web:80"].protocol == "TCP"


def test_udp_and_merged_tcp_udp() -> None:
    stack = build_stack(web_service(ports=[
        service_port(53, 53, "dns", node_port=30053, protocol="UDP"),
        service_port(53, 53, "dns-tcp", node_port=30054),
        service_port(514, 514, "syslog", node_port=30514, protocol="UDP")]), settings=SETTINGS)
    assert stack.listeners["53"].protocol == "TCP_UDP"
    assert stack.target_groups["shop/web:53"].protocol == "TCP_UDP"
    assert stack.target_groups["shop/web:53"].port == 30054  # the TCP port's node port
    assert stack.listeners["514"].protocol == "UDP"
    assert stack.target_groups["shop/web:514"].protocol == "UDP"


def test_annotations_reach_the_model() -> None:
    stack = build_stack(web_service({
        "aws-load-balancer-name": "my-nlb", "aws-load-balancer-scheme": "internet-facing",
        "aws-load-balancer-healthcheck-protocol": "http",
        "aws-load-balancer-healthcheck-path": "/ready",
        "aws-load-balancer-healthcheck-port": "http",
        "aws-load-balancer-additional-resource-tags": "team=a",
        "aws-load-balancer-target-node-labels": "pool=edge",
        "aws-load-balancer-multi-cluster-target-group": "true",
        "aws-load-balancer-attributes": "load_balancing.cross_zone.enabled=true",
    }), settings=ModelSettings(cluster_name="prod", region="us-west-2", vpc_id="vpc-1",
                               defaults=ServiceDefaults(tags={"env": "prod"})))
    lb = stack.load_balancers["LoadBalancer"]
    assert (lb.name, lb.scheme, lb.subnets) == ("my-nlb", "internet-facing",
                                                SubnetDiscovery(role="elb"))
    assert lb.attributes == {"load_balancing.cross_zone.enabled": "true"}
    assert lb.tags == {"team": "a", "env": "prod"}
    tg = stack.target_groups["shop/web:443"]
    assert tg.health_check.protocol == "HTTP"
    assert tg.health_check.path == "/ready"
    assert tg.health_check.port == 30080  # the named port's node port (instance targets)
    assert tg.health_check.matcher is not None
    assert tg.health_check.matcher.http_code == "200-399"
    binding = stack.target_group_bindings["shop/web:443"]
    assert binding.node_selector == {"pool": "edge"}
    assert binding.multi_cluster_target_group is True


def test_listed_subnets_replace_discovery() -> None:
    stack = build_stack(web_service({"aws-load-balancer-subnets": "subnet-b, subnet-a"}),
                        settings=SETTINGS)
    assert tuple(stack.load_balancers["LoadBalancer"].subnets) == (
        "subnet-a", "subnet-b")


def test_dualstack_ip_targets_follow_the_first_ip_family() -> None:
    notes = {"aws-load-balancer-nlb-target-type": "ip",
             "aws-load-balancer-ip-address-type": "dualstack"}
    v6 = build_stack(web_service(notes, ipFamilies=["IPv6", "IPv4"]), settings=SETTINGS)
    assert v6.target_groups["shop/web:80"].ip_address_type == "ipv6"
    assert v6.target_group_bindings["shop/web:80"].ip_address_type == "ipv6"
    v4 = build_stack(web_service(notes, ipFamilies=["IPv4"]), settings=SETTINGS)
    assert v4.target_groups["shop/web:80"].ip_address_type == "ipv4"


@pytest.mark.parametrize(("service", "message"), [
    (web_service(ports=[]), "service shop/web has no ports"),
    (web_service(ports=[service_port(80, 8080, "http")]),
     "service shop/web port 80 has no nodePort, which instance targets need "
     "(allocateLoadBalancerNodePorts is false?)"),
    (web_service(ports=[service_port(80, 80, "s", node_port=30080, protocol="SCTP")]),
     "service shop/web port 80: protocol SCTP is not supported by a network load balancer"),
    (web_service(ports=[service_port(80, 80, "a", node_port=30080),
                        service_port(80, 81, "b", node_port=30081)]),
     "service shop/web uses port 80 twice"),
    (web_service({"aws-load-balancer-ssl-cert": CERT},
                 ports=[service_port(53, 53, "a", node_port=30053),
                        service_port(53, 53, "b", node_port=30054, protocol="UDP")]),
     "service shop/web port 53: a TLS listener cannot also carry UDP"),
    (web_service({"aws-load-balancer-nlb-target-type": "ip",
                  "aws-load-balancer-healthcheck-port": "named"},
                 ports=[service_port(80, "web", "named")]),
     "service shop/web: health check port 'named' resolves to 'web', not a port number"),
])
def test_bad_specs_give_one_clear_message(service: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidService) as exc:
        build_stack(service, settings=SETTINGS)
    assert str(exc.value) == message


def test_bad_annotations_raise_annotation_errors() -> None:
    with pytest.raises(AnnotationError, match="healthcheck-interval"):
        build_stack(web_service({"aws-load-balancer-healthcheck-interval": "x"}), settings=SETTINGS)


def test_too_many_tags_is_one_clear_error() -> None:
    tags = ",".join(f"t{i}=v" for i in range(48))
    with pytest.raises(InvalidStack) as exc:
        build_stack(web_service({"aws-load-balancer-additional-resource-tags": tags}),
                    settings=SETTINGS)
    assert str(exc.value).startswith("service shop/web: ")
    assert "48 tags: at most 47 allowed" in str(exc.value)


PORTS = st.lists(st.fixed_dictionaries({
    "name": st.sampled_from(["http", "https", "dns", "x"]),
    "port": st.integers(-1, 70000),
    "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "tcp"]),
}, optional={
    "targetPort": st.one_of(st.integers(-1, 70000), st.sampled_from(["web", "http", ""])),
    "nodePort": st.one_of(st.integers(-1, 70000), st.none()),
}), max_size=4)
NOTES = st.dictionaries(
    st.sampled_from(sorted(k.removeprefix(PREFIX) for k in SERVICE_ANNOTATION_KEYS)),
    st.sampled_from(["", "ip", "instance", "true", "x", "80", "http", "traffic-port", CERT,
                     "a=b", "*", "internet-facing", "dualstack", "HTTP", "ssl", "/p", "2",
                     "subnet-1", "200-299"]), max_size=6)


@settings(max_examples=300, deadline=None)
@given(notes=NOTES, ports=PORTS, families=st.sampled_from([None, ["IPv6"], ["IPv4"]]),
       local=st.booleans())
def test_only_clear_errors_escape(notes: dict[str, str], ports: list[dict[str, Any]],
                                  families: list[str] | None, local: bool) -> None:
    spec: dict[str, Any] = {"externalTrafficPolicy": "Local" if local else "Cluster",
                            "healthCheckNodePort": 32000}
    if families:
        spec["ipFamilies"] = families
    try:
        stack = build_stack(web_service(notes, ports=ports, **spec), settings=SETTINGS)
    except (AnnotationError, InvalidService, InvalidStack) as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert "\n" not in message
        return
    assert len(stack.listeners) == len(stack.target_groups) == len(
        stack.target_group_bindings) >= 1
