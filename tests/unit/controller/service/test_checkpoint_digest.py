"""A Service's checkpoint ignores what must not matter and changes with everything that shapes
its load balancer: every annotation we read, the spec fields the builder reads, and the
controller configuration that shapes the model."""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.apis import CHECKPOINT_ANNOTATION, CHECKPOINT_TIMESTAMP_ANNOTATION
from controller.networking.settings import BackendSettings
from controller.service import SERVICE_ANNOTATION_KEYS, ModelSettings
from controller.service.annotations import PREFIX
from controller.service.model import checkpoint_of
from controller.settings import ClusterScope, StackDefaults
from tests.support.objects import service_port, web_service

SETTINGS = ModelSettings(cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"))
CERT = {"aws-load-balancer-ssl-cert": "arn:aws:acm:us-west-2:1:certificate/a"}
HTTP_HC = {"aws-load-balancer-healthcheck-protocol": "HTTP"}
LOGS = {"aws-load-balancer-access-log-enabled": "true"}


def cp(service: dict[str, Any], settings: ModelSettings = SETTINGS) -> str | None:
    return checkpoint_of(service, settings=settings)


# key suffix → (context annotations, value a, value b); None means "annotation absent".
CHANGES: dict[str, tuple[dict[str, str], str | None, str | None]] = {
    "aws-load-balancer-type": (
        {"aws-load-balancer-nlb-target-type": "ip"}, "external", "classic"),
    "aws-load-balancer-nlb-target-type": ({}, "ip", "instance"),
    "aws-load-balancer-name": ({}, "nlb-a", "nlb-b"),
    "aws-load-balancer-scheme": ({}, "internal", "internet-facing"),
    "aws-load-balancer-internal": ({}, "true", "false"),
    "aws-load-balancer-ip-address-type": ({}, "ipv4", "dualstack"),
    "aws-load-balancer-subnets": ({}, "subnet-1", "subnet-2"),
    "aws-load-balancer-ssl-cert": ({}, "arn:aws:acm:r:1:certificate/a",
                                   "arn:aws:acm:r:1:certificate/b"),
    "aws-load-balancer-ssl-ports": (CERT, "443", "80"),
    "aws-load-balancer-ssl-negotiation-policy": (CERT, "PolicyA", "PolicyB"),
    "aws-load-balancer-backend-protocol": (CERT, "tcp", "ssl"),
    "aws-load-balancer-alpn-policy": (CERT, "HTTP2Only", "HTTP1Only"),
    "aws-load-balancer-healthcheck-protocol": ({}, "TCP", "HTTP"),
    "aws-load-balancer-healthcheck-port": ({}, "traffic-port", "9000"),
    "aws-load-balancer-healthcheck-path": (HTTP_HC, "/a", "/b"),
    "aws-load-balancer-healthcheck-healthy-threshold": ({}, "2", "5"),
    "aws-load-balancer-healthcheck-unhealthy-threshold": ({}, "2", "5"),
    "aws-load-balancer-healthcheck-timeout": ({}, "5", "6"),
    "aws-load-balancer-healthcheck-interval": ({}, "10", "20"),
    "aws-load-balancer-healthcheck-success-codes": (HTTP_HC, "200", "200-299"),
    "aws-load-balancer-target-group-attributes": (
        {}, "deregistration_delay.timeout_seconds=10", "deregistration_delay.timeout_seconds=20"),
    "aws-load-balancer-target-node-labels": (
        {"aws-load-balancer-nlb-target-type": "instance"}, "pool=a", "pool=b"),
    "aws-load-balancer-attributes": (
        {}, "load_balancing.cross_zone.enabled=true", "load_balancing.cross_zone.enabled=false"),
    "aws-load-balancer-additional-resource-tags": ({}, "team=a", "team=b"),
    "aws-load-balancer-proxy-protocol": ({}, None, "*"),
    "aws-load-balancer-multi-cluster-target-group": ({}, "false", "true"),
    "aws-load-balancer-access-log-enabled": ({}, "false", "true"),
    "aws-load-balancer-access-log-s3-bucket-name": (LOGS, "logs-a", "logs-b"),
    "aws-load-balancer-access-log-s3-bucket-prefix": (LOGS, "p1", "p2"),
    "aws-load-balancer-cross-zone-load-balancing-enabled": ({}, "false", "true"),
    "aws-load-balancer-security-groups": ({}, "sg-1", "sg-2"),
    "aws-load-balancer-security-group-prefix-lists": ({}, "pl-1", "pl-2"),
    "load-balancer-source-ranges": ({}, "10.0.0.0/8", "10.1.0.0/16"),
    "aws-load-balancer-manage-backend-security-group-rules": (
        {"aws-load-balancer-security-groups": "sg-1"}, "false", "true"),
    "aws-load-balancer-disable-nlb-sg": ({}, "false", "true"),
    "aws-load-balancer-enable-icmp-for-path-mtu-discovery": ({}, "off", "on"),
    "aws-load-balancer-inbound-sg-rules-on-private-link-traffic": ({}, "on", "off"),
    "aws-load-balancer-minimum-load-balancer-capacity": ({}, None, "CapacityUnits=3000"),
    "aws-load-balancer-listener-attributes.TCP-80": ({}, "tcp.idle_timeout.seconds=60",
                                                     "tcp.idle_timeout.seconds=120"),
    "aws-load-balancer-proxy-protocol-per-target-group": ({}, None, "80"),
    "actions.TCP-80": ({}, None, '{"type": "forward", "forwardConfig": {"targetGroups": [{'
                       '"targetGroupARN": "arn:aws:elasticloadbalancing:us-west-2:123456789012'
                       ':targetgroup/b/1e7d7b29959735a4"}]}}'),
    "aws-load-balancer-target-group-attributes.80": (
        {}, "deregistration_delay.timeout_seconds=10", "deregistration_delay.timeout_seconds=20"),
    "aws-load-balancer-eip-allocations": (
        {"aws-load-balancer-scheme": "internet-facing"}, "eipalloc-1", "eipalloc-2"),
    "aws-load-balancer-private-ipv4-addresses": ({}, "10.0.0.1", "10.0.0.2"),
    "aws-load-balancer-ipv6-addresses": (
        {"aws-load-balancer-ip-address-type": "dualstack"}, "2600::1", "2600::2"),
    "aws-load-balancer-enable-prefix-for-ipv6-source-nat": (
        {"aws-load-balancer-ip-address-type": "dualstack"}, "off", "on"),
    "aws-load-balancer-source-nat-ipv6-prefixes": (
        {"aws-load-balancer-ip-address-type": "dualstack",
         "aws-load-balancer-enable-prefix-for-ipv6-source-nat": "on"},
        "auto_assigned", "2600:1f13:0:1:1::/80"),
}


# Keys that never change a stack that builds both ways, only whether it builds at all:
# key → (Service ports, the value that builds, the value the Service is refused with).
REFUSES: dict[str, tuple[list[dict[str, Any]], str, str]] = {
    # A TCP port cannot be QUIC (what QUIC changes: test_quic_ports_change_the_checkpoint).
    "aws-load-balancer-quic-enabled-ports": ([service_port(80, 80, "http", node_port=30080)],
                                             "", "http"),
    "aws-load-balancer-enable-tcp-udp-listener": (
        [service_port(53, 53, "dns", node_port=30053, protocol="UDP"),
         service_port(53, 53, "dns-tcp", node_port=30054)], "true", "false"),
}


def test_every_annotation_we_read_is_covered() -> None:
    assert {PREFIX + re.sub(r"\.(TCP-)?80$", ".*", key) for key in (*CHANGES, *REFUSES)} == set(
        SERVICE_ANNOTATION_KEYS)


@pytest.mark.parametrize("key", sorted(REFUSES))
def test_a_key_that_decides_whether_the_stack_builds(key: str) -> None:
    ports, builds, refused = REFUSES[key]
    assert cp(web_service({key: builds}, ports=ports)) is not None
    with pytest.raises(ValueError, match=key):
        cp(web_service({key: refused}, ports=ports))


@pytest.mark.parametrize("key", sorted(CHANGES))
def test_changes_with_every_annotation_we_read(key: str) -> None:
    context, a, b = CHANGES[key]
    # The type annotation selects Services only when they name no class.
    spec: dict[str, Any] = ({"loadBalancerClass": None} if key == "aws-load-balancer-type"
                            else {})
    first = web_service({**context, **({key: a} if a is not None else {})}, **spec)
    second = web_service({**context, **({key: b} if b is not None else {})}, **spec)
    assert cp(first) is not None
    assert cp(first) != cp(second)


def test_quic_ports_change_the_checkpoint() -> None:
    ports = [service_port(443, 8443, "quic", protocol="UDP")]
    ip = {"aws-load-balancer-nlb-target-type": "ip"}
    udp = cp(web_service(ip, ports=ports))
    quic = cp(web_service({**ip, "aws-load-balancer-quic-enabled-ports": "quic"}, ports=ports))
    assert udp is not None
    assert quic is not None
    assert udp != quic


def _port(**changes: Any) -> dict[str, Any]:
    return {**service_port(node_port=30080), **changes}


# (target type, spec change): each spec field the builder reads, where it matters.
SPEC_CHANGES = [
    *[(tt, {"ports": [_port(port=81)]}) for tt in ("ip", "instance")],
    *[(tt, {"ports": [_port(protocol="UDP")]}) for tt in ("ip", "instance")],
    *[(tt, {"ports": [_port(), _port(name="dns", protocol="UDP", port=53)]})
      for tt in ("ip", "instance")],
    ("ip", {"ports": [_port(targetPort=8081)]}),
    ("instance", {"ports": [_port(nodePort=30081)]}),
    ("instance", {"externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
    *[(tt, {"loadBalancerClass": "example.com/other"}) for tt in ("ip", "instance")],
    *[(tt, {"loadBalancerSourceRanges": ["10.0.0.0/8"]}) for tt in ("ip", "instance")],
]


@pytest.mark.parametrize(("target_type", "change"), SPEC_CHANGES)
def test_changes_with_what_shapes_the_load_balancer(target_type: str,
                                                    change: dict[str, Any]) -> None:
    notes = {"aws-load-balancer-nlb-target-type": target_type}
    base = web_service(notes, ports=[_port()])
    changed = web_service(notes, **{"ports": [_port()], **change})
    assert cp(base) is not None
    assert cp(changed) != cp(base)


@pytest.mark.parametrize("target_type", ["ip", "instance"])
def test_the_type_counts_only_with_service_type_load_balancer_only(target_type: str) -> None:
    """Upstream serves a NodePort Service that asks for an NLB by annotation the same as a
    LoadBalancer one (the same NLB, so the same checkpoint), unless the
    ServiceTypeLoadBalancerOnly gate is on (then it is not ours: no checkpoint)."""
    from controller.config import parse_config
    notes = {"aws-load-balancer-nlb-target-type": target_type}
    base = web_service(notes, ports=[_port()])
    node_port = web_service(notes, ports=[_port()], type="NodePort")
    assert cp(node_port) == cp(base) is not None
    gates = parse_config(["--cluster-name", "c", "--feature-gates",
                          "ServiceTypeLoadBalancerOnly=true"]).gates
    only = dataclasses.replace(SETTINGS, gates=gates)
    assert cp(base, only) is not None
    assert cp(node_port, only) is None


def test_changes_with_identity_and_ip_family() -> None:
    base = web_service({"aws-load-balancer-nlb-target-type": "ip",
                        "aws-load-balancer-ip-address-type": "dualstack"})
    for path, value in ((("metadata", "uid"), "u-2"), (("metadata", "name"), "web2"),
                        (("metadata", "namespace"), "other"), (("spec", "ipFamilies"), ["IPv6"])):
        changed = copy.deepcopy(base)
        changed[path[0]][path[1]] = value
        assert cp(changed) != cp(base), path


@pytest.mark.parametrize("other", [
    dataclasses.replace(SETTINGS, cluster=dataclasses.replace(SETTINGS.cluster, name="staging")),
    dataclasses.replace(SETTINGS, cluster=dataclasses.replace(SETTINGS.cluster,
                                                              region="eu-west-1")),
    dataclasses.replace(SETTINGS, cluster=dataclasses.replace(SETTINGS.cluster, vpc_id="vpc-2")),
    dataclasses.replace(SETTINGS, defaults=StackDefaults(scheme="internet-facing")),
    dataclasses.replace(SETTINGS, defaults=StackDefaults(target_type="ip")),
    dataclasses.replace(SETTINGS, defaults=StackDefaults(tags={"env": "prod"})),
    dataclasses.replace(SETTINGS, defaults=StackDefaults(ssl_policy="Other")),
    dataclasses.replace(SETTINGS, defaults=StackDefaults(
        external_managed_tags=frozenset({"owner"}))),
    dataclasses.replace(SETTINGS, load_balancer_class="example.com/nlb"),
    dataclasses.replace(SETTINGS, backend_sg=BackendSettings(enabled=False)),
    dataclasses.replace(SETTINGS, backend_sg=BackendSettings(group_id="sg-0123")),
    dataclasses.replace(SETTINGS, backend_sg=BackendSettings(disable_restricted_rules=True)),
])
def test_changes_with_controller_configuration(other: ModelSettings) -> None:
    service = web_service(CERT)
    assert cp(service, other) != cp(service, SETTINGS)


def test_no_checkpoint_when_deleted_or_not_ours() -> None:
    deleted = web_service()
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert cp(deleted) is None
    assert cp(web_service(type="ClusterIP", loadBalancerClass=None)) is None


NOISE_KEYS = st.text(min_size=1, max_size=30).filter(
    lambda k: k not in SERVICE_ANNOTATION_KEYS)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    return value


@settings(max_examples=150)
@given(
    annotations=st.dictionaries(NOISE_KEYS, st.text(max_size=20), max_size=5),
    labels=st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=20), max_size=5),
    status=st.dictionaries(st.text(max_size=10), JSON, max_size=3),
    resource_version=st.text(max_size=10),
    generation=st.integers(1, 1000),
    checkpoint_value=st.text(max_size=50),
    reorder=st.booleans(),
)
def test_ignores_what_must_not_matter(annotations: dict[str, str], labels: dict[str, str],
                                      status: dict[str, Any], resource_version: str,
                                      generation: int, checkpoint_value: str,
                                      reorder: bool) -> None:
    base = web_service({"aws-load-balancer-healthcheck-interval": "20", **CERT})
    noisy = copy.deepcopy(base)
    meta = noisy["metadata"]
    meta["annotations"].update(annotations)
    meta["annotations"][CHECKPOINT_ANNOTATION] = checkpoint_value
    meta["annotations"][CHECKPOINT_TIMESTAMP_ANNOTATION] = "1700000000"
    meta.update(labels=labels, resourceVersion=resource_version, generation=generation,
                creationTimestamp="2026-01-01T00:00:00Z", finalizers=["service.k8s.aws/resources"],
                managedFields=[{"manager": "kubectl", "operation": "Update"}])
    noisy["status"] = status
    noisy["spec"].update(clusterIP="10.0.0.9", sessionAffinity="ClientIP")
    if reorder:
        noisy = _reordered(noisy)
    assert cp(noisy) == cp(base)
