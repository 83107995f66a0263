"""The pure stage: a Service and its annotations → the desired NLB stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.config.featuregates import GATES
from controller.model import (
    LISTENER,
    LOAD_BALANCER,
    SECURITY_GROUP,
    TARGET_GROUP,
    TARGET_GROUP_BINDING,
    InvalidStack,
    Ref,
    SharedBackendSecurityGroup,
    SubnetDiscovery,
    service_load_balancer_name,
)
from controller.networking.settings import BackendSettings
from controller.service import (
    SERVICE_ANNOTATION_KEYS,
    InvalidService,
    ModelSettings,
    build_stack,
)
from controller.service.annotations import PREFIX
from controller.settings import ClusterScope, StackDefaults
from tests.support.objects import nlb_service, service_port, web_service

SETTINGS = ModelSettings(cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"))
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


DNS_PORTS = [service_port(53, 53, "dns", node_port=30053, protocol="UDP"),
             service_port(53, 53, "dns-tcp", node_port=30054),
             service_port(514, 514, "syslog", node_port=30514, protocol="UDP")]
TCP_UDP_ON = {"aws-load-balancer-enable-tcp-udp-listener": "true"}
MERGING = dataclasses.replace(SETTINGS, gates=GATES.parse("EnableTCPUDPListener=true"))


@pytest.mark.parametrize(("annotations", "settings"), [
    (TCP_UDP_ON, SETTINGS), ({}, MERGING)], ids=["annotation", "gate"])
def test_udp_and_merged_tcp_udp(annotations: dict[str, str], settings: ModelSettings) -> None:
    stack = build_stack(web_service(annotations, ports=DNS_PORTS), settings=settings)
    assert stack.listeners["53"].protocol == "TCP_UDP"
    assert stack.target_groups["shop/web:53"].protocol == "TCP_UDP"
    assert stack.target_groups["shop/web:53"].port == 30054  # the TCP port's node port
    assert stack.listeners["514"].protocol == "UDP"
    assert stack.target_groups["shop/web:514"].protocol == "UDP"


REFUSED_TCP_UDP = (
    "service shop/web port 53: TCP and UDP on one port need a TCP_UDP listener; set annotation "
    'service.beta.kubernetes.io/aws-load-balancer-enable-tcp-udp-listener: "true" (or start '
    "the controller with --feature-gates=EnableTCPUDPListener=true)")


@pytest.mark.parametrize(("annotations", "settings"), [
    ({}, SETTINGS), ({"aws-load-balancer-enable-tcp-udp-listener": "false"}, MERGING)],
    ids=["upstream-default", "annotation-over-gate"])
def test_tcp_and_udp_on_one_port_without_merging_are_refused(
        annotations: dict[str, str], settings: ModelSettings) -> None:
    # Upstream's default (the gate off) keeps the first port's listener and drops the other
    # without a word; here the Service is told and nothing is built.
    with pytest.raises(InvalidService) as exc:
        build_stack(web_service(annotations, ports=DNS_PORTS), settings=settings)
    assert str(exc.value) == REFUSED_TCP_UDP
    # Ports apart are served either way.
    apart = [service_port(53, 53, "dns", node_port=30053, protocol="UDP"),
             service_port(54, 54, "dns-tcp", node_port=30054)]
    stack = build_stack(web_service(annotations, ports=apart), settings=settings)
    assert {k: v.protocol for k, v in stack.listeners.items()} == {"53": "UDP", "54": "TCP"}


def test_a_bad_tcp_udp_switch_is_one_message() -> None:
    with pytest.raises(AnnotationError) as exc:
        build_stack(web_service({"aws-load-balancer-enable-tcp-udp-listener": "yes"},
                                ports=DNS_PORTS), settings=MERGING)
    assert "aws-load-balancer-enable-tcp-udp-listener" in str(exc.value)


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
    }), settings=dataclasses.replace(SETTINGS, defaults=StackDefaults(tags={"env": "prod"})))
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
    (web_service({"aws-load-balancer-ssl-cert": CERT, **TCP_UDP_ON},
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


def test_names_follow_upstream_model_builder_test() -> None:
    """Upstream's pkg/service/model_builder_test.go "Simple service": default/nlb-ip-svc-tls
    (`aws-load-balancer-type: nlb-ip`, port 80 -> 80) on cluster `my-cluster` gets the NLB
    `k8s-default-nlbipsvc-6b0ba8ff70` and the target group (and binding)
    `k8s-default-nlbipsvc-d4818dcd51`."""
    svc = nlb_service("nlb-ip-svc-tls", {"aws-load-balancer-type": "nlb-ip"},
                      uid="bdca2bd0-bfc6-449a-88a3-03451f05f18c", target_type=None,
                      load_balancer_class=None,
                      ports=[service_port(80, 80, name="", protocol="TCP")])
    stack = build_stack(svc, settings=ModelSettings(cluster=ClusterScope(
        name="my-cluster", region="us-west-2", vpc_id="vpc-1")))
    assert stack.load_balancers["LoadBalancer"].name == "k8s-default-nlbipsvc-6b0ba8ff70"
    tg = stack.target_groups["default/nlb-ip-svc-tls:80"]
    assert tg.name == "k8s-default-nlbipsvc-d4818dcd51"
    assert stack.target_group_bindings["default/nlb-ip-svc-tls:80"].name == tg.name


def test_target_group_name_hashes_the_health_check() -> None:
    base = build_stack(web_service(), settings=SETTINGS).target_groups["shop/web:80"].name
    slower = build_stack(web_service({"aws-load-balancer-healthcheck-interval": "30"}),
                         settings=SETTINGS).target_groups["shop/web:80"].name
    http = build_stack(web_service({"aws-load-balancer-healthcheck-protocol": "http"}),
                       settings=SETTINGS).target_groups["shop/web:80"].name
    assert len({base, slower, http}) == 3


# ---- security groups --------------------------------------------------------------------------

def _sources(stack: Any) -> set[tuple[str, int, str]]:
    group = stack.security_groups["ManagedLBSecurityGroup"]
    return {(r.protocol, r.from_port, str(r.cidr_ipv4 or r.cidr_ipv6 or r.prefix_list_id))
            for r in group.ingress}


def test_the_managed_group_admits_the_source_ranges_spec_first() -> None:
    notes = {"load-balancer-source-ranges": "192.0.2.0/24"}
    both = build_stack(web_service(notes, loadBalancerSourceRanges=["10.0.0.0/8"]),
                       settings=SETTINGS)
    assert _sources(both) == {("tcp", 80, "10.0.0.0/8"), ("tcp", 443, "10.0.0.0/8")}
    note = build_stack(web_service(notes), settings=SETTINGS)
    assert _sources(note) == {("tcp", 80, "192.0.2.0/24"), ("tcp", 443, "192.0.2.0/24")}
    lb = note.load_balancers["LoadBalancer"]
    assert lb.security_groups == (Ref.to(SECURITY_GROUP, "ManagedLBSecurityGroup", "groupID"),
                                  SharedBackendSecurityGroup())
    with pytest.raises(InvalidService, match="needs a dualstack load balancer"):
        build_stack(web_service({"load-balancer-source-ranges": "2001:db8::/32"}),
                    settings=SETTINGS)
    # Every IPv6 range is named, and where they came from.
    with pytest.raises(InvalidService, match=(
            r"spec\.loadBalancerSourceRanges: ::/0, 2001:db8::/32 admit no one: IPv6 sources "
            r"never reach an ipv4 load balancer.*no other source is given, so the load "
            r"balancer would admit no one; refused")):
        build_stack(web_service(loadBalancerSourceRanges=["::/0", "2001:db8::/32"]),
                    settings=SETTINGS)
    with pytest.raises(InvalidService, match=r"/load-balancer-source-ranges: ::/0 admits "
                                             r"no one: [^;]*; refused"):
        build_stack(web_service({"load-balancer-source-ranges": "10.0.0.0/8,::/0"}),
                    settings=SETTINGS)
    with pytest.raises(InvalidService, match=r"spec\.loadBalancerSourceRanges"):
        build_stack(web_service(loadBalancerSourceRanges=["10.0.0.0/33"]), settings=SETTINGS)


def test_a_managed_group_over_ec2_s_rule_quota_is_split() -> None:
    # Before: 62 rules (2 ports x 31 ranges) were refused; now two or more groups share them.
    ranges = [f"10.0.{i}.0/24" for i in range(31)]
    stack = build_stack(web_service(loadBalancerSourceRanges=ranges), settings=SETTINGS)
    parts = sorted(stack.security_groups)
    assert parts[0] == "ManagedLBSecurityGroup"
    assert len(parts) >= 2
    assert all(len(stack.security_groups[p].ingress) <= 60 for p in parts)
    names = {g.name for g in stack.security_groups.values()}
    first = stack.security_groups["ManagedLBSecurityGroup"].name
    assert names == {first} | {f"{first}-{p.rsplit('-', 1)[1]}" for p in parts[1:]}
    assert sum(len(g.ingress) for g in stack.security_groups.values()) == 62
    lb = stack.load_balancers["LoadBalancer"]
    assert set(lb.security_groups) == {*(Ref.to(SECURITY_GROUP, p, "groupID") for p in parts),
                                       SharedBackendSecurityGroup()}
    # Past the five groups a load balancer may carry (four beside the backend group): refused.
    with pytest.raises(InvalidService, match=r"service shop/web: the managed security groups "
                                             r"would need 242 inbound IPv4 rules.*more than fit "
                                             r"in the 4 managed security groups"):
        build_stack(web_service(loadBalancerSourceRanges=[
            f"10.{i // 250}.{i % 250}.0/24" for i in range(121)]), settings=SETTINGS)


def test_no_groups_at_all_with_disable_nlb_sg() -> None:
    stack = build_stack(web_service({"aws-load-balancer-disable-nlb-sg": "true",
                                     "aws-load-balancer-nlb-target-type": "ip"}),
                        settings=SETTINGS)
    assert stack.security_groups == {}
    assert stack.load_balancers["LoadBalancer"].security_groups == ()
    assert all(b.networking is None for b in stack.target_group_bindings.values())


def test_binding_ports_follow_the_protocol_and_the_health_check() -> None:
    svc = web_service({"aws-load-balancer-nlb-target-type": "ip", **TCP_UDP_ON,
                       "aws-load-balancer-healthcheck-port": "9000"}, ports=[
        service_port(80, 8080, "http"), service_port(53, 5353, "dns", protocol="UDP"),
        service_port(53, 5353, "dns-tcp")])
    stack = build_stack(svc, settings=SETTINGS)

    def ports(port: int) -> list[tuple[str, int | str | None]]:
        networking = stack.target_group_bindings[f"shop/web:{port}"].networking
        assert networking is not None
        return [(p.protocol, p.port) for p in networking.ingress[0].ports]

    assert ports(80) == [("TCP", 8080), ("TCP", 9000)]
    # TCP and UDP on one port share a TCP_UDP target group: both protocols are opened.
    assert ports(53) == [("TCP", 5353), ("TCP", 9000), ("UDP", 5353)]
    wide = build_stack(svc, settings=dataclasses.replace(
        SETTINGS, backend_sg=BackendSettings(disable_restricted_rules=True)))
    networking = wide.target_group_bindings["shop/web:53"].networking
    assert networking is not None
    assert [(p.protocol, p.port) for p in networking.ingress[0].ports] == [("TCP", None),
                                                                           ("UDP", None)]


TWO_TCP = [service_port(80, 8080, "http", node_port=30080),
           service_port(3306, 3306, "db", node_port=30306)]


def _tg_attributes(annotations: dict[str, str]) -> dict[int, dict[str, str]]:
    stack = build_stack(web_service(annotations, ports=TWO_TCP), settings=SETTINGS)
    return {port: dict(stack.target_groups[f"shop/web:{port}"].attributes)
            for port in (80, 3306)}


def test_per_port_target_group_attributes_as_upstream_composes_them() -> None:
    # As upstream's documented example: the base for every port, the port's key over it, an
    # empty value there keeping the base's.
    assert _tg_attributes({
        "aws-load-balancer-target-group-attributes":
            "deregistration_delay.timeout_seconds=120,stickiness.enabled=true",
        "aws-load-balancer-target-group-attributes.3306":
            "deregistration_delay.connection_termination.enabled=true,"
            "deregistration_delay.timeout_seconds=30,stickiness.enabled=",
    }) == {
        80: {"proxy_protocol_v2.enabled": "false", "deregistration_delay.timeout_seconds": "120",
             "stickiness.enabled": "true"},
        3306: {"proxy_protocol_v2.enabled": "false",
               "deregistration_delay.timeout_seconds": "30", "stickiness.enabled": "true",
               "deregistration_delay.connection_termination.enabled": "true"}}


def test_proxy_protocol_per_target_group_and_what_wins() -> None:
    ppv2 = "proxy_protocol_v2.enabled"
    per_tg = {"aws-load-balancer-proxy-protocol-per-target-group": "3306"}
    assert {p: a[ppv2] for p, a in _tg_attributes(per_tg).items()} == {80: "false",
                                                                       3306: "true"}
    # Over the attributes annotations (the port's too): the listed ports on, the others off.
    assert {p: a[ppv2] for p, a in _tg_attributes({
        **per_tg, "aws-load-balancer-target-group-attributes": f"{ppv2}=true",
        "aws-load-balancer-target-group-attributes.3306": f"{ppv2}=false"}).items()} == {
        80: "false", 3306: "true"}
    # `aws-load-balancer-proxy-protocol: "*"` wins over it.
    assert {p: a[ppv2] for p, a in _tg_attributes(
        {**per_tg, "aws-load-balancer-proxy-protocol": "*"}).items()} == {80: "true",
                                                                          3306: "true"}
    # Empty: on no port.
    assert {p: a[ppv2] for p, a in _tg_attributes(
        {"aws-load-balancer-proxy-protocol-per-target-group": ""}).items()} == {
        80: "false", 3306: "false"}


@pytest.mark.parametrize(("annotations", "message"), [
    ({"aws-load-balancer-proxy-protocol-per-target-group": "80, mysql"},
     f'annotation {PREFIX}aws-load-balancer-proxy-protocol-per-target-group: "80, mysql" has '
     '"mysql", which is not a port number'),
    ({"aws-load-balancer-target-group-attributes.db": "stickiness.enabled=true"},
     f'annotation {PREFIX}aws-load-balancer-target-group-attributes.db: '
     '"stickiness.enabled=true" does not end in a port number (upstream reads '
     f'{PREFIX}aws-load-balancer-target-group-attributes.<port> only)'),
    ({"aws-load-balancer-target-group-attributes.3306": "preserve_client_ip.enabled=maybe"},
     f'annotation {PREFIX}aws-load-balancer-target-group-attributes.3306: '
     '"preserve_client_ip.enabled=maybe" sets preserve_client_ip.enabled="maybe", which is '
     'not true or false'),
])
def test_bad_per_port_annotations_are_one_message(annotations: dict[str, str],
                                                 message: str) -> None:
    with pytest.raises(AnnotationError) as exc:
        build_stack(web_service(annotations, ports=TWO_TCP), settings=SETTINGS)
    assert str(exc.value) == message


@pytest.mark.parametrize(("annotations", "message"), [
    ({"aws-load-balancer-target-group-attributes.81": "stickiness.enabled=true"},
     f"service shop/web: annotation {PREFIX}aws-load-balancer-target-group-attributes.81 "
     "names no port of it (its ports: 80, 3306)"),
    ({"aws-load-balancer-proxy-protocol-per-target-group": "80,443"},
     f"service shop/web: annotation {PREFIX}aws-load-balancer-proxy-protocol-per-target-group "
     "names port 443, which is not one of its ports (80, 3306)"),
])
def test_a_port_the_service_lacks_is_one_message(annotations: dict[str, str],
                                                 message: str) -> None:
    with pytest.raises(InvalidService) as exc:
        build_stack(web_service(annotations, ports=TWO_TCP), settings=SETTINGS)
    assert str(exc.value) == message
