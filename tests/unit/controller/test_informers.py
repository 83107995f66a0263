"""What the informer caches keep: trimmed objects give the controllers the same answers."""

from __future__ import annotations

import copy
from typing import Any

from controller.informers import LAST_APPLIED, TRIMMED, strip, trim_node
from controller.targetgroupbinding.targets import (
    find_service_port,
    instance_endpoints,
    node_fit_for_traffic,
)
from controller.targetgroupbinding.watches import node_view
from runtime.resources import NODES, SERVICES
from tests.support.objects import node, service, service_port


def _busy_node(name: str, **kwargs: Any) -> dict[str, Any]:
    obj = node(name, created="2026-01-01T00:00:00Z", **kwargs)
    obj["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    obj["status"].update(
        addresses=[{"type": "InternalIP", "address": "10.0.9.1"}],
        images=[{"names": [f"image-{i}"], "sizeBytes": i} for i in range(30)],
        nodeInfo={"kubeletVersion": "v1.31"}, capacity={"cpu": "2"}, allocatable={"cpu": "2"})
    return obj


def test_trimmed_nodes_give_the_same_instance_targets() -> None:
    svc = service("web", type_="NodePort", ports=[service_port(80, "http", node_port=30080)])
    port = find_service_port(svc, 80, service_key="default/web")
    nodes = [_busy_node("a"), _busy_node("b", ready=False), _busy_node("c", unschedulable=True)]
    trimmed = [trim_node(copy.deepcopy(n)) for n in nodes]
    assert instance_endpoints(svc, port, trimmed, selector=None, service_key="k") == \
        instance_endpoints(svc, port, nodes, selector=None, service_key="k")
    assert [node_fit_for_traffic(n) for n in trimmed] == [node_fit_for_traffic(n) for n in nodes]
    assert [node_view(n) for n in trimmed] == [node_view(n) for n in nodes]
    assert set(trimmed[0]["status"]) == {"conditions", "addresses"}
    assert "managedFields" not in trimmed[0]["metadata"]
    assert TRIMMED[NODES] is trim_node


def test_strip_drops_managed_fields_and_the_last_applied_configuration_only() -> None:
    svc = service("web", annotations={LAST_APPLIED: '{"big": true}', "mine": "kept"})
    svc["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    before = copy.deepcopy(svc)
    stripped = strip(svc)
    assert stripped["metadata"]["annotations"] == {"mine": "kept"}
    assert "managedFields" not in stripped["metadata"]
    assert stripped["spec"] == before["spec"]
    assert strip({"metadata": "garbage"}) == {"metadata": "garbage"}
    assert TRIMMED[SERVICES] is strip
