"""Deterministic names, checked against the vectors in upstream's own unit tests."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.model import (
    backend_security_group_name,
    ingress_security_group_name,
    ingress_target_group_name,
    load_balancer_name,
    service_load_balancer_name,
    service_security_group_name,
    service_target_group_name,
)

_VALID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$")
_any_text = st.text(max_size=80)


def _check(name: str) -> None:
    assert len(name) <= 32
    assert _VALID.match(name), name
    assert name.startswith("k8s-")


@settings(max_examples=200, deadline=None)
@given(_any_text, _any_text, _any_text, st.sampled_from(["internal", "internet-facing"]),
       st.one_of(st.none(), _any_text))
def test_load_balancer_names_are_valid_and_deterministic(
        cluster: str, namespace: str, name: str, scheme: str, group: str | None) -> None:
    first = load_balancer_name(cluster, namespace, name, scheme, group)
    _check(first)
    assert first == load_balancer_name(cluster, namespace, name, scheme, group)
    other = "internal" if scheme == "internet-facing" else "internet-facing"
    assert first != load_balancer_name(cluster, namespace, name, other, group)


@settings(max_examples=200, deadline=None)
@given(_any_text, _any_text, _any_text, _any_text, st.integers(1, 65535),
       st.sampled_from(["ip", "instance"]))
def test_target_group_names_are_valid_and_deterministic(
        cluster: str, group_id: str, namespace: str, name: str, port: int,
        target_type: str) -> None:
    kwargs = dict(group_id=group_id, ingress_namespace=namespace, ingress_name="ing",
                  service_namespace=namespace, service_name=name, service_uid="uid-1",
                  service_port=port, target_port=8080, target_type=target_type,
                  protocol="HTTP")
    first = ingress_target_group_name(cluster, **kwargs)  # type: ignore[arg-type]
    _check(first)
    assert first == ingress_target_group_name(cluster, **kwargs)  # type: ignore[arg-type]
    assert first != ingress_target_group_name(
        cluster, **{**kwargs, "protocol": "HTTPS"})  # type: ignore[arg-type]
    assert first != ingress_target_group_name(cluster + "x", **kwargs)  # type: ignore[arg-type]
    svc = service_target_group_name(
        cluster, namespace=namespace, name=name, uid="uid-1", target_port=8080,
        service_port=port, target_type=target_type, protocol="TCP",
        health_check_protocol="TCP", health_check_interval=10)
    _check(svc)


def test_implicit_group_layout_and_hash_inputs() -> None:
    name = load_balancer_name("prod", "my-namespace", "web.frontend", "internet-facing")
    uuid = hashlib.sha256(b"prod" + b"my-namespace/web.frontend" + b"internet-facing")
    assert name == f"k8s-mynamesp-webfront-{uuid.hexdigest()[:10]}"


def test_explicit_group_layout() -> None:
    name = load_balancer_name("prod", "ns", "ing", "internal", "team-a.shared-group-name")
    uuid = hashlib.sha256(b"prod" + b"team-a.shared-group-name" + b"internal").hexdigest()
    assert name == f"k8s-teamasharedgroupn-{uuid[:10]}"
    assert len(name) == 32


def test_service_load_balancer_hashes_the_uid() -> None:
    a = service_load_balancer_name("c", "default", "svc", "internal", uid="u1")
    b = service_load_balancer_name("c", "default", "svc", "internal", uid="u2")
    assert a != b
    assert a.startswith("k8s-default-svc-")
    uuid = hashlib.sha256(b"c" + b"u1" + b"internal").hexdigest()[:10]
    assert a.endswith(uuid)


# ---- security groups: upstream's names exactly ------------------------------------------------

def test_security_group_names_match_upstream_vectors() -> None:
    # pkg/ingress/model_build_managed_sg_test.go: cluster-dummy, ns-1/ing-1.
    assert ingress_security_group_name("cluster-dummy", "ns-1", "ing-1") == \
        "k8s-ns1-ing1-bd83176788"
    assert ingress_security_group_name("prod-eks-01", "default", "echo") == \
        "k8s-default-echo-1f7cb1ac02"
    assert ingress_security_group_name("prod-eks-01", "x", "y", group="shared-web") == \
        "k8s-sharedweb-dcdfb8f571"
    # pkg/service/model_builder_test.go ("Simple service with NLB SG"): the name is hashed
    # before the namespace, then the UID.
    assert service_security_group_name(
        "my-cluster", "default", "nlb-ip-svc-tls",
        uid="bdca2bd0-bfc6-449a-88a3-03451f05f18c") == "k8s-default-nlbipsvc-1da4b78715"
    # pkg/networking/backend_sg_provider_test.go: the cluster's case is kept.
    assert backend_security_group_name("testCluster") == "k8s-traffic-testCluster-411a1bcdb1"
    assert backend_security_group_name("prod-eks-01") == "k8s-traffic-prodeks01-19ad4ccda2"
    assert backend_security_group_name("my.cluster_name") == \
        "k8s-traffic-myclustername-21a2b5d507"


def test_the_frontend_group_name_ignores_the_scheme_and_the_backend_name_is_bounded() -> None:
    # A scheme change replaces the load balancer, not its group.
    assert ingress_security_group_name("c", "ns", "web") == ingress_security_group_name(
        "c", "ns", "web")
    long = "c" * 300
    name = backend_security_group_name(long)
    assert name == f"k8s-traffic-{'c' * 232}-{hashlib.sha256(long.encode()).hexdigest()[:10]}"
    assert len(name) <= 255


# ---- upstream's vectors ------------------------------------------------------------------------

def _ingress_tg(name: str, port: int | str, tg_port: int, target_type: str, protocol: str,
                **extra: object) -> str:
    # Upstream's test Services carry no UID, so the empty string is hashed.
    return ingress_target_group_name(
        "cluster-dummy", group_id="ns-1/ing-1", ingress_namespace="ns-1", ingress_name="ing-1",
        service_namespace="ns-1", service_name=name, service_uid="", service_port=port,
        target_port=tg_port, target_type=target_type, protocol=protocol,
        **extra)  # type: ignore[arg-type]


def test_ingress_names_match_upstream_model_builder_test() -> None:
    """Vectors from upstream's pkg/ingress/model_builder_test.go ("Ingress - vanilla
    internal", cluster `cluster-dummy`, group `ns-1/ing-1`): the ALB, and target groups for
    svc-1 and svc-2 (instance, port name `http`, nodePort 32768, HTTP) and svc-3 (ip, port name
    `https`, targetPort 8443, HTTPS). Upstream hashes its default protocol version `HTTP1`
    although no annotation sets one."""
    assert load_balancer_name("cluster-dummy", "ns-1", "ing-1", "internal") == \
        "k8s-ns1-ing1-b7e914000d"
    assert _ingress_tg("svc-1", "http", 32768, "instance", "HTTP") == "k8s-ns1-svc1-9889425938"
    # The Service's name is shown, not hashed: svc-2 gets the same hash.
    assert _ingress_tg("svc-2", "http", 32768, "instance", "HTTP") == "k8s-ns1-svc2-9889425938"
    assert _ingress_tg("svc-3", "https", 8443, "ip", "HTTPS") == "k8s-ns1-svc3-bf42870fba"
    assert _ingress_tg("svc-1", "http", 32768, "instance", "HTTP",
                       protocol_version="HTTP1") == "k8s-ns1-svc1-9889425938"
    assert _ingress_tg("svc-1", "http", 32768, "instance", "HTTP",
                       protocol_version="GRPC") != "k8s-ns1-svc1-9889425938"


def test_ingress_target_control_port_is_hashed_only_when_set() -> None:
    plain = _ingress_tg("svc-1", "http", 32768, "instance", "HTTP")
    assert _ingress_tg("svc-1", "http", 32768, "instance", "HTTP",
                       target_control_port=3000) != plain
    digest = hashlib.sha256("".join([
        "cluster-dummy", "ns-1/ing-1", "ns-1", "ing-1", "", "http", "32768", "instance", "HTTP",
        "HTTP1", "3000"]).encode()).hexdigest()[:10]
    assert _ingress_tg("svc-1", "http", 32768, "instance", "HTTP",
                       target_control_port=3000) == f"k8s-ns1-svc1-{digest}"


def _service_tg(name: str, uid: str, tg_port: int, port: int, hc_protocol: str,
                hc_interval: int = 10) -> str:
    return service_target_group_name(
        "my-cluster", namespace="default", name=name, uid=uid, target_port=tg_port,
        service_port=port, target_type="ip", protocol="TCP",
        health_check_protocol=hc_protocol, health_check_interval=hc_interval)


TLS_SVC_UID = "bdca2bd0-bfc6-449a-88a3-03451f05f18c"
IP_SVC_UID = "7ab4be33-11c2-4a7b-b655-7add8affab36"


def test_service_names_match_upstream_model_builder_test() -> None:
    """Vectors from upstream's pkg/service/model_builder_test.go (cluster `my-cluster`):
    "Simple service" (nlb-ip-svc-tls, port 80 -> 80, TCP health check every 10 s),
    "Multiple listeners, multiple target groups" (nlb-ip-svc, ports 80 and 83 -> 80, HTTP
    health check) and "TLS and access logging annotations" (internal=false, port 83 -> 8883).
    The target group port is hashed before the Service port."""
    assert service_load_balancer_name("my-cluster", "default", "nlb-ip-svc-tls", "internal",
                                      uid=TLS_SVC_UID) == "k8s-default-nlbipsvc-6b0ba8ff70"
    assert _service_tg("nlb-ip-svc-tls", TLS_SVC_UID, 80, 80, "TCP") == \
        "k8s-default-nlbipsvc-d4818dcd51"
    assert service_load_balancer_name("my-cluster", "default", "nlb-ip-svc", "internal",
                                      uid=IP_SVC_UID) == "k8s-default-nlbipsvc-518cdfc227"
    assert _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 80, "HTTP") == \
        "k8s-default-nlbipsvc-62f81639fc"
    assert _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 83, "HTTP") == \
        "k8s-default-nlbipsvc-3ede6b28b6"
    assert service_load_balancer_name("my-cluster", "default", "nlb-ip-svc-tls",
                                      "internet-facing", uid=IP_SVC_UID) == \
        "k8s-default-nlbipsvc-33e41aa671"
    assert _service_tg("nlb-ip-svc-tls", IP_SVC_UID, 8883, 83, "HTTP") == \
        "k8s-default-nlbipsvc-77ea0c7734"


def test_service_health_check_is_hashed_upper_case() -> None:
    base = _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 80, "HTTP")
    assert _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 80, "http") == base
    assert _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 80, "HTTP", hc_interval=30) != base
    assert _service_tg("nlb-ip-svc", IP_SVC_UID, 80, 80, "TCP") != base
