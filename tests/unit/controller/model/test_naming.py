"""Deterministic upstream-style names."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.model import (
    backend_security_group_name,
    ingress_security_group_name,
    load_balancer_name,
    service_load_balancer_name,
    service_security_group_name,
    target_group_name,
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
        cluster: str, stack_id: str, namespace: str, name: str, port: int,
        target_type: str) -> None:
    kwargs = dict(stack_id=stack_id, service_namespace=namespace, service_name=name,
                  service_uid="uid-1", service_port=str(port), target_port="8080",
                  target_type=target_type, protocol="HTTP")
    first = target_group_name(cluster, **kwargs)
    _check(first)
    assert first == target_group_name(cluster, **kwargs)
    assert first != target_group_name(cluster, **{**kwargs, "protocol": "HTTPS"})
    assert first != target_group_name(cluster + "x", **kwargs)


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
