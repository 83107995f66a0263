"""Target computation from EndpointSlices and Nodes, TGB spec parsing and checkpoint format."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis import LabelSelector
from controller.apis.targetgroupbinding import InvalidSpec, parse_spec
from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.targets import (
    BackendNotFound,
    Target,
    find_service_port,
    instance_endpoints,
    ip_endpoints,
)
from tests.support.objects import endpoint, endpoint_slice, node, service, service_port

SERVICE = service("web", namespace="default", type_="NodePort", ports=[
    service_port(80, "http", protocol=None, node_port=30080),
    service_port(9000, 9000, "admin", protocol=None, node_port=30900)])


def _slice(endpoints: list[dict[str, Any]], *, family: str = "IPv4") -> dict[str, Any]:
    return endpoint_slice("web", endpoints=endpoints, address_type=family,
                          ports=(("http", 8080), ("admin", 9000)))


def test_service_port_by_number_and_name() -> None:
    assert find_service_port(SERVICE, 80, service_key="default/web")["name"] == "http"
    assert find_service_port(SERVICE, "admin", service_key="default/web")["port"] == 9000
    with pytest.raises(BackendNotFound, match="unable to find port 81 on service default/web"):
        find_service_port(SERVICE, 81, service_key="default/web")
    with pytest.raises(BackendNotFound, match="service default/nope not found"):
        find_service_port(None, 80, service_key="default/nope")


def test_ip_targets_are_ready_pods_at_the_named_endpoint_port() -> None:
    port = find_service_port(SERVICE, 80, service_key="default/web")
    slices = [
        _slice([endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False),
                endpoint("10.0.0.3", terminating=True), endpoint("10.0.0.4", ready=None),
                endpoint("10.0.0.5", kind="Node")]),
        _slice([endpoint("10.0.0.6", uid="p6")]),
        _slice([endpoint("fd00::1")], family="IPv6"),
    ]
    endpoints = ip_endpoints(port, slices)
    # A readiness not given counts as ready (Kubernetes' rule, upstream's too).
    assert [e.target for e in endpoints] == [Target("10.0.0.1", 8080), Target("10.0.0.4", 8080),
                                             Target("10.0.0.6", 8080)]
    assert endpoints[2].checkpoint_id == "10.0.0.6:8080:p6"
    assert [e.target for e in ip_endpoints(port, slices, ip_address_type="ipv6")] == [
        Target("fd00::1", 8080)]


def _node(name: str, *, instance: str = "", ready: str = "True", labels: dict[str, str] | None
          = None, unschedulable: bool = False, taints: list[dict[str, str]] | None = None
          ) -> dict[str, Any]:
    return node(name, instance or None, ready=ready, labels=labels, unschedulable=unschedulable,
                taints=taints or [], created="2026-01-01T00:00:00Z")


def test_instance_targets_skip_unfit_nodes_and_apply_the_selector() -> None:
    port = find_service_port(SERVICE, 80, service_key="default/web")
    nodes = [
        _node("a", labels={"pool": "web"}),
        _node("b", ready="False", labels={"pool": "web"}),
        _node("c", unschedulable=True, labels={"pool": "web"}),
        _node("d", taints=[{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}],
              labels={"pool": "web"}),
        _node("e", labels={"pool": "web", "node.kubernetes.io/exclude-from-external-load-"
                           "balancers": ""}),
        _node("f", labels={"pool": "batch"}),
        _node("g", instance="not-an-instance", labels={"pool": "web"}),
    ]
    selector = LabelSelector.model_validate({"matchLabels": {"pool": "web"}})
    got = instance_endpoints(SERVICE, port, nodes, selector=selector, service_key="default/web")
    assert [e.target for e in got] == [Target("i-a", 30080)]
    assert got[0].checkpoint_id == "i-a:30080:1767225600000"
    everything = instance_endpoints(SERVICE, port, nodes, selector=None, service_key="k")
    assert {e.target.id for e in everything} == {"i-a", "i-f"}


def test_instance_targets_need_a_node_port_service() -> None:
    svc = {"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}}
    with pytest.raises(InvalidSpec, match="must be of type NodePort or LoadBalancer"):
        instance_endpoints(svc, {"port": 80}, [], selector=None, service_key="default/x")


@pytest.mark.parametrize(("spec", "message"), [
    ({"serviceRef": {"name": "web", "port": 80}},
     "one of targetGroupARN or targetGroupName is required"),
    ({"targetGroupName": "tg", "serviceRef": {"name": "web", "port": 80}, "targetType": "pod"},
     "targetType"),
    ({"targetGroupName": "tg"}, "serviceRef"),
    ({"targetGroupName": "tg", "serviceRef": {"name": "web", "port": 80},
      "nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "operator In needs values"),
])
def test_bad_specs_have_one_clear_message(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpec) as info:
        parse_spec({"spec": spec})
    assert message in str(info.value)
    assert str(info.value).startswith("invalid TargetGroupBinding spec: ")


def test_checkpoint_format_and_sensitivity() -> None:
    port = find_service_port(SERVICE, 80, service_key="default/web")
    eps = ip_endpoints(port, [_slice([endpoint("10.0.0.1"), endpoint("10.0.0.2")])])
    spec = {"targetGroupName": "tg", "serviceRef": {"name": "web", "port": 80}}
    value = checkpoint.compute(eps, spec)
    left, _, right = value.partition("/")
    assert len(left) == len(right) == 43
    assert checkpoint.compute(list(reversed(eps)), dict(reversed(spec.items()))) == value
    assert checkpoint.compute(eps[:1], spec) != value
    assert checkpoint.compute(eps, {**spec, "targetType": "ip"}) != value
    patch = checkpoint.patch(value, 1700000000.7)
    assert patch["metadata"]["annotations"] == {
        "elbv2.k8s.aws/checkpoint": value, "elbv2.k8s.aws/checkpoint-timestamp": "1700000000"}
    assert checkpoint.stored({"metadata": {"annotations": patch["metadata"]["annotations"]}}) \
        == value


def test_endpoints_fail_open_registers_unknown_nodes_only_when_none_is_ready() -> None:
    """Upstream's EndpointsFailOpen gate (on by default): with no Ready node, the nodes whose
    Ready is Unknown carry the traffic rather than none; off, none does."""
    port = find_service_port(SERVICE, 80, service_key="default/web")
    unknown = [node("u1", ready="Unknown"), node("u2", ready="Unknown"), node("f", ready=False)]
    opened = instance_endpoints(SERVICE, port, unknown, selector=None, service_key="k")
    assert {e.target.id for e in opened} == {"i-u1", "i-u2"}
    assert instance_endpoints(SERVICE, port, unknown, selector=None, service_key="k",
                              fail_open=False) == []
    mixed = [*unknown, node("r")]
    for fail_open in (True, False):
        assert {e.target.id for e in instance_endpoints(
            SERVICE, port, mixed, selector=None, service_key="k", fail_open=fail_open)} == {"i-r"}
