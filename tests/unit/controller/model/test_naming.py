"""Deterministic upstream-style names."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.model import load_balancer_name, service_load_balancer_name, target_group_name

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
