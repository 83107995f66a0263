"""Readiness gates from the controller's side, without a server: the slim pod cache, which
not-ready endpoints wait only for target health, which gates a new pod gets, and the rules a
binding's spec must share with its target group."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis import LEGACY_TARGET_HEALTH_CONDITION_PREFIX, target_health_condition
from controller.apis.targetgroupbinding import InvalidSpec, parse_spec
from controller.targetgroupbinding import gates_for, with_gates
from controller.targetgroupbinding.checks import check_target_type
from controller.targetgroupbinding.pods import (
    bindings_of_pod,
    gate_index,
    pending_endpoints,
    pod_view,
    slim_pod,
    waits_only_for_target_health,
)
from controller.targetgroupbinding.targetgroups import TargetGroupInfo
from controller.targetgroupbinding.targets import ip_endpoints
from controller.targetgroupbinding.wiring import hot_loop_options
from runtime.hotloop import HotLoopOptions
from runtime.reconcile import Request
from runtime.store import Store
from tests.support.objects import (
    endpoint,
    endpoint_slice,
    pod,
    service,
    service_port,
    target_group_binding,
)

GATE = target_health_condition("web")
OTHER_GATE = target_health_condition("web-nlb")


def waiting_pod(name: str = "web-1", *, gates: tuple[str, ...] = (GATE,),
                conditions: dict[str, str] | None = None, **more: str) -> dict[str, Any]:
    return pod(name, labels={"app": "web", "pod-template-hash": "abc"}, gates=gates,
               conditions={"PodScheduled": "True", "ContainersReady": "True", "Ready": "False",
                           **(conditions or {}), **more}, ip="10.0.1.5")


# ---- the slim cache ----------------------------------------------------------------------------

def test_a_pod_without_target_health_gates_keeps_only_its_identity() -> None:
    full = pod("web-1", labels={"app": "web"}, gates=("example.com/other",),
               conditions={"Ready": "True"}, ip="10.0.1.5")
    full["metadata"].update(resourceVersion="7", annotations={"a": "b" * 1000})
    assert slim_pod(full) == {"metadata": {"name": "web-1", "namespace": "default",
                                           "uid": "uid-web-1", "resourceVersion": "7"}}


def test_a_gated_pod_keeps_its_gates_and_the_conditions_that_decide() -> None:
    full = waiting_pod(gates=(GATE, "example.com/other"),
                       conditions={GATE: "False", "example.com/other": "True"})
    full["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    slim = slim_pod(full)
    assert slim["spec"] == {"readinessGates": [{"conditionType": GATE},
                                               {"conditionType": "example.com/other"}]}
    assert {c["type"]: c["status"] for c in slim["status"]["conditions"]} == {
        "ContainersReady": "True", GATE: "False", "example.com/other": "True"}
    assert "labels" not in slim["metadata"]
    assert slim["metadata"]["deletionTimestamp"] == "2024-01-01T00:00:00Z"
    # Everything the reconciler asks of a pod gives the same answer on the slim copy.
    assert waits_only_for_target_health(slim, GATE) is waits_only_for_target_health(full, GATE)
    assert pod_view(slim) == pod_view(full)


@pytest.mark.parametrize("hostile", [
    {}, {"metadata": "x"}, {"spec": {"readinessGates": ["x", {"conditionType": 3}]}},
    {"metadata": {"name": "p", "namespace": "n"}, "status": {"conditions": "x"},
     "spec": {"readinessGates": [{"conditionType": GATE}]}},
])
def test_hostile_pods_never_raise(hostile: dict[str, Any]) -> None:
    slim_pod(hostile)
    gate_index(hostile)
    pod_view(hostile)
    bindings_of_pod(hostile)
    assert waits_only_for_target_health(hostile, "x") is False


def test_a_pod_names_its_bindings_in_its_gates() -> None:
    gated = waiting_pod(gates=(GATE, OTHER_GATE, "example.com/other"))
    assert gate_index(gated) == ["default/web", "default/web-nlb"]
    assert bindings_of_pod(gated) == [Request("default", "web"), Request("default", "web-nlb")]


def test_our_own_condition_writes_do_not_change_the_view() -> None:
    before = waiting_pod(conditions={GATE: "False"})
    after = waiting_pod(conditions={GATE: "True"})
    assert pod_view(before) == pod_view(after)
    assert pod_view(before) != pod_view(waiting_pod(ContainersReady="False"))


# ---- which pods wait only for target health ----------------------------------------------------

@pytest.mark.parametrize(("conditions", "gates", "expected"), [
    ({}, (GATE,), True),
    ({OTHER_GATE: "False"}, (GATE, OTHER_GATE), True),  # another binding's gate is ours too
    ({"ContainersReady": "False"}, (GATE,), False),
    ({"example.com/other": "False"}, (GATE, "example.com/other"), False),
    ({"example.com/other": "True"}, (GATE, "example.com/other"), True),
    ({}, (OTHER_GATE,), False),  # not this binding's pod
])
def test_waits_only_for_target_health(conditions: dict[str, str], gates: tuple[str, ...],
                                      expected: bool) -> None:
    assert waits_only_for_target_health(waiting_pod(gates=gates, conditions=conditions),
                                        GATE) is expected


def test_pending_endpoints_are_the_not_ready_ones_that_wait_for_our_gate() -> None:
    pods = Store()
    for name in ("web-10.0.1.5", "web-10.0.1.6", "web-10.0.1.7"):
        pods.upsert(slim_pod(waiting_pod(name)))
    pods.upsert(slim_pod(waiting_pod("web-10.0.1.8", ContainersReady="False")))
    endpoints = [endpoint("10.0.1.5", service="web", ready=False),
                 endpoint("10.0.1.6", service="web", ready=False, terminating=True),
                 endpoint("10.0.1.7", service="web", ready=False, uid="another-pod"),
                 endpoint("10.0.1.8", service="web", ready=False),
                 endpoint("10.0.1.9", service="web", ready=True)]
    slices = [endpoint_slice("web", endpoints=endpoints)]
    port = service_port()
    pending = pending_endpoints(port, slices, pods.get, condition=GATE)
    assert [e.target.id for e in pending] == ["10.0.1.5"]
    # The same identifier as once it is ready: the checkpoint does not move when it turns.
    ready = ip_endpoints(port, [endpoint_slice("web", endpoints=[
        endpoint("10.0.1.5", service="web", uid="uid-web-10.0.1.5")])])
    assert pending[0].checkpoint_id == ready[0].checkpoint_id


# ---- which gates a new pod gets -----------------------------------------------------------------

def _stores(*objects: dict[str, Any]) -> tuple[Store, Store]:
    bindings, services = Store(), Store()
    for obj in objects:
        (bindings if obj["kind"] == "TargetGroupBinding" else services).upsert(obj)
    return bindings, services


def test_gates_for_every_ip_binding_whose_service_selects_the_pod() -> None:
    bindings, services = _stores(
        service("web", namespace="default", selector={"app": "web"}),
        service("all", namespace="default", selector={}),
        service("other", namespace="default", selector={"app": "other"}),
        target_group_binding("web", service="web", namespace="default"),
        target_group_binding("web-nlb", service="web", namespace="default"),
        target_group_binding("web-instance", service="web", namespace="default",
                             target_type="instance"),
        target_group_binding("untyped", service="web", namespace="default", target_type=None),
        target_group_binding("no-selector", service="all", namespace="default"),
        target_group_binding("elsewhere", service="other", namespace="default"),
        target_group_binding("missing", service="gone", namespace="default"),
        target_group_binding("web", service="web", namespace="prod"))
    new = pod("web-1", labels={"app": "web", "tier": "front"})
    assert gates_for(new, "default", bindings=bindings, services=services) == [GATE, OTHER_GATE]
    assert gates_for(new, "staging", bindings=bindings, services=services) == []


def test_a_binding_being_deleted_gives_no_gate() -> None:
    tgb = target_group_binding("web", service="web", namespace="default")
    tgb["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    bindings, services = _stores(service("web", namespace="default", selector={"app": "web"}),
                                 tgb)
    assert gates_for(pod("p", labels={"app": "web"}), "default", bindings=bindings,
                     services=services) == []


def test_with_gates_adds_once_and_drops_the_legacy_ones() -> None:
    legacy = LEGACY_TARGET_HEALTH_CONDITION_PREFIX + "web"
    original = pod("p", gates=("example.com/other", legacy, GATE))
    updated = with_gates(original, [GATE, OTHER_GATE])
    assert [g["conditionType"] for g in updated["spec"]["readinessGates"]] == [
        "example.com/other", GATE, OTHER_GATE]
    assert [g["conditionType"] for g in original["spec"]["readinessGates"]] == [
        "example.com/other", legacy, GATE]  # not modified
    # Nothing to add: the pod is left as it is, legacy gates included.
    assert with_gates(original, []) is original
    assert with_gates(updated, [GATE]) is updated


# ---- the target type a binding must share with its target group --------------------------------

TG = TargetGroupInfo(arn="arn:aws:elasticloadbalancing:us-west-2:1:targetgroup/web/1",
                     name="web", target_type="ip", vpc_id="vpc-1", ip_address_type="ipv4",
                     port=80, protocol="HTTP")


def test_a_target_type_is_the_target_groups_or_refused() -> None:
    unset = parse_spec(target_group_binding("web", service="web", arn=TG.arn, target_type=None))
    assert check_target_type(unset, TG) == "ip"
    other = parse_spec(target_group_binding("web", service="web", arn=TG.arn,
                                            target_type="instance"))
    with pytest.raises(InvalidSpec, match="targetType instance does not match target group "
                                          "web of type ip"):
        check_target_type(other, TG)
    lambda_tg = TargetGroupInfo(arn="arn:l", name="fn", target_type="lambda", vpc_id="",
                                ip_address_type="", port=None)
    with pytest.raises(InvalidSpec, match="target group fn has unsupported target type lambda"):
        check_target_type(unset, lambda_tg)


# ---- requeues while gates wait ----------------------------------------------------------------

@pytest.mark.parametrize("requeue", [15.0, 1.0, 0.05])
def test_the_hot_loop_guard_never_slows_a_binding_that_follows_its_own_requeues(
        requeue: float) -> None:
    options = hot_loop_options(requeue)
    assert options.limit is not None
    assert options.limit >= options.window / requeue  # what the requeues add up to
    assert options.limit >= HotLoopOptions().limit  # type: ignore[operator]
