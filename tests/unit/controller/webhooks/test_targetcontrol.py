"""The ALB target control agent sidecar as upstream v3.5.0 builds it
(pkg/inject/albtargetcontrol/target_control_injector.go and its test)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.apis.albtargetcontrolconfig import ALBTargetControlConfigSpec
from controller.webhooks.targetcontrol import (
    INJECT_LABEL,
    INJECTED_ANNOTATION,
    NAMESPACE_LABEL,
    InvalidAgentAnnotation,
    has_agent,
    injection_enabled,
    valid_address,
    with_agent,
)

SPEC = ALBTargetControlConfigSpec.model_validate({
    "image": "agent:1", "dataAddress": "0.0.0.0:80", "controlAddress": "0.0.0.0:3000",
    "destinationAddress": "127.0.0.1:8080", "maxConcurrency": 5})
PREFIX = "elbv2.k8s.aws/alb-target-control-agent-"


def _pod(*, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]}}


def _agent(pod: dict[str, Any]) -> dict[str, Any]:
    [agent] = [c for c in pod["spec"]["containers"] if c["name"] == "alb-target-control-agent"]
    assert isinstance(agent, dict)
    return agent


def _env(agent: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in agent["env"]}


@pytest.mark.parametrize(("label", "namespace", "enabled"), [
    ("true", None, True), ("false", {NAMESPACE_LABEL: "enabled"}, False),
    (None, {NAMESPACE_LABEL: "enabled"}, True), (None, {NAMESPACE_LABEL: "disabled"}, False),
    (None, {}, False), (None, None, False), ("maybe", {NAMESPACE_LABEL: "enabled"}, True),
])
def test_who_asks_for_the_agent(label: str | None, namespace: dict[str, str] | None,
                                enabled: bool) -> None:
    pod = _pod(labels={INJECT_LABEL: label} if label else None)
    assert injection_enabled(pod, namespace) is enabled


def test_the_sidecar_is_upstreams() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    new = with_agent(pod, SPEC)
    assert pod == before  # the request's pod is left alone
    assert [c["name"] for c in new["spec"]["containers"]] == ["app", "alb-target-control-agent"]
    agent = _agent(new)
    assert agent["image"] == "agent:1"
    assert agent["env"] == [
        {"name": "TARGET_CONTROL_DATA_ADDRESS", "value": "0.0.0.0:80"},
        {"name": "TARGET_CONTROL_CONTROL_ADDRESS", "value": "0.0.0.0:3000"},
        {"name": "TARGET_CONTROL_DESTINATION_ADDRESS", "value": "127.0.0.1:8080"},
        {"name": "TARGET_CONTROL_MAX_CONCURRENCY", "value": "5"}]
    assert agent["ports"] == [{"name": "data", "containerPort": 80, "protocol": "TCP"},
                              {"name": "control", "containerPort": 3000, "protocol": "TCP"}]
    assert "resources" not in agent
    assert new["metadata"]["annotations"] == {INJECTED_ANNOTATION: "true"}
    assert has_agent(new)
    assert not has_agent(pod)


def test_optional_fields_and_resources_from_the_config() -> None:
    spec = SPEC.model_copy(update={
        "tls_cert_path": "/c", "tls_key_path": "/k", "tls_security_policy": "P",
        "protocol_version": "GRPC", "rust_log": "debug",
        "resources": SPEC.model_validate({**SPEC.model_dump(by_alias=True), "resources": {
            "limits": {"cpu": "100m"}}}).resources})
    agent = _agent(with_agent(_pod(), spec))
    assert list(_env(agent))[4:] == [
        "TARGET_CONTROL_TLS_CERT_PATH", "TARGET_CONTROL_TLS_KEY_PATH",
        "TARGET_CONTROL_TLS_SECURITY_POLICY", "TARGET_CONTROL_PROTOCOL_VERSION", "RUST_LOG"]
    assert _env(agent)["RUST_LOG"] == "debug"
    assert agent["resources"] == {"limits": {"cpu": "100m"}}


def test_the_pods_annotations_win() -> None:
    pod = _pod(annotations={
        PREFIX + "image": "mine:2", PREFIX + "data-address": "0.0.0.0:8443",
        PREFIX + "control-address": "[::]:4000",
        PREFIX + "destination-address": "127.0.0.1:9000", PREFIX + "max-concurrency": "0",
        PREFIX + "protocol-version": "HTTP1", PREFIX + "rust-log": "error",
        PREFIX + "tls-cert-path": "/x", PREFIX + "cpu-request": "50m",
        PREFIX + "memory-limit": "64Mi", PREFIX + "cpu-limit": "lots"})
    agent = _agent(with_agent(pod, SPEC))
    assert agent["image"] == "mine:2"
    env = _env(agent)
    assert env["TARGET_CONTROL_DATA_ADDRESS"] == "0.0.0.0:8443"
    assert env["TARGET_CONTROL_CONTROL_ADDRESS"] == "[::]:4000"
    assert env["TARGET_CONTROL_DESTINATION_ADDRESS"] == "127.0.0.1:9000"
    assert env["TARGET_CONTROL_MAX_CONCURRENCY"] == "0"
    assert env["TARGET_CONTROL_PROTOCOL_VERSION"] == "HTTP1"
    assert env["TARGET_CONTROL_TLS_CERT_PATH"] == "/x"
    assert [p["containerPort"] for p in agent["ports"]] == [8443, 4000]
    # a quantity that does not parse is ignored, as upstream
    assert agent["resources"] == {"requests": {"cpu": "50m"}, "limits": {"memory": "64Mi"}}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("max-concurrency", "1001", "invalid concurrency value: 1001 (must be 0-1000)"),
    ("max-concurrency", "x", "invalid concurrency value: x (must be 0-1000)"),
    ("data-address", "localhost:80", "invalid data address format: localhost:80 (expected "
     "host:port format, e.g., 0.0.0.0:80)"),
    ("control-address", "0.0.0.0", "invalid control address format: 0.0.0.0"),
    ("destination-address", "::1:80", "invalid destination address format: ::1:80"),
    ("protocol-version", "HTTP3", "invalid protocol version: HTTP3 (must be HTTP1, HTTP2, or "
     "GRPC)"),
    ("protocol-version", "", "invalid protocol version:  (must be"),
    ("rust-log", "trace", "invalid rust log level: trace (must be debug, info, or error)"),
])
def test_an_annotation_upstream_refuses_is_its_message(key: str, value: str,
                                                       message: str) -> None:
    with pytest.raises(InvalidAgentAnnotation) as caught:
        with_agent(_pod(annotations={PREFIX + key: value}), SPEC)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(("address", "valid"), [
    ("0.0.0.0:80", True), ("[::1]:80", True), ("10.0.0.1:+80", True), ("host:80", False),
    ("::1:80", False), ("[::1]80", False), ("1.2.3.4:", False), ("1.2.3.4:99999999999", False),
    ("[fe80::1%eth0]:80", False), ("", False),
])
def test_addresses_as_go_reads_them(address: str, valid: bool) -> None:
    assert valid_address(address) is valid
