"""`actions.<PROTOCOL>-<port>` parsed and checked as upstream (`pkg/service/config_types.go`),
and the weighted forward it gives the listener."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.annotations import AnnotationError
from controller.model import ForwardAction, Ref
from controller.service.actions import parse_listener_actions
from controller.service.model import InvalidService, MissingService, ModelSettings, build_stack
from controller.settings import ClusterScope
from tests.support.objects import nlb_service

P = "service.beta.kubernetes.io/"
ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/canary/1e7d7b29959735a4"
SETTINGS = ModelSettings(cluster=ClusterScope(name="c", region="us-west-2", vpc_id="vpc-1"))


def _svc(value: Any, key: str = "actions.TCP-80") -> dict[str, Any]:
    raw = value if isinstance(value, str) else json.dumps(value)
    svc = nlb_service("web", {key: raw})
    svc["metadata"]["namespace"] = "default"
    return svc


@pytest.mark.parametrize(("value", "reason"), [
    ({"type": "redirect"}, "unknown action type: redirect"),
    ({"type": "forward"}, "a forward action needs forwardConfig"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [{}]}},
     "forwardConfig.targetGroups[0]: precisely one of targetGroupARN and serviceName can be "
     "specified"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [
        {"targetGroupARN": ARN, "serviceName": "x"}]}},
     "forwardConfig.targetGroups[0]: precisely one of targetGroupARN and serviceName can be "
     "specified"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [{"serviceName": "x"}]}},
     "forwardConfig.targetGroups[0]: missing servicePort"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [
        {"targetGroupARN": ARN, "weight": 1000}]}},
     "forwardConfig.targetGroups[0]: target group weight must be between 0 and 999"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [
        {"targetGroupARN": ARN, "weight": 1}, {"serviceName": "x", "servicePort": 80}]}},
     "forwardConfig: weight must be set when routing to multiple target groups"),
    ({"type": "forward", "forwardConfig": {"baseServiceWeight": -1, "targetGroups": []}},
     "forwardConfig: baseServiceWeight must be between 0 and 999"),
    ({"type": "forward", "forwardConfig": {"targetGroups": [
        {"targetGroupARN": "arn:aws:iam::123456789012:role/x"}]}},
     "forwardConfig.targetGroups[0]: targetGroupARN 'arn:aws:iam::123456789012:role/x' is "
     "not the ARN of a target group"),
])
def test_upstreams_checks_are_one_message(value: Any, reason: str) -> None:
    with pytest.raises(AnnotationError) as err:
        parse_listener_actions(_svc(value))
    assert err.value.reason == f"is invalid ({reason})"
    with pytest.raises(AnnotationError):
        build_stack(_svc(value), settings=SETTINGS)


def test_more_than_four_other_target_groups_are_refused() -> None:
    groups = [{"targetGroupARN": ARN[:-1] + str(i), "weight": 1} for i in range(5)]
    with pytest.raises(AnnotationError, match="at most 4 target groups"):
        parse_listener_actions(_svc({"type": "forward", "forwardConfig": {
            "targetGroups": groups}}))


def test_not_json_is_one_message() -> None:
    with pytest.raises(AnnotationError, match="is not valid JSON"):
        parse_listener_actions(_svc("{"))


def test_weighted_forward_with_stickiness() -> None:
    stack = build_stack(_svc({"type": "forward", "forwardConfig": {
        "baseServiceWeight": 10, "targetGroups": [{"targetGroupARN": ARN, "weight": 20}],
        "targetGroupStickinessConfig": {"enabled": True}}}), settings=SETTINGS)
    (action,) = stack.listeners["80"].default_actions
    assert isinstance(action, ForwardAction)
    weights = {("own" if isinstance(w.target_group_arn, Ref) else w.target_group_arn): w.weight
               for w in action.target_groups}
    assert weights == {"own": 10, ARN: 20}
    assert action.stickiness is not None
    assert action.stickiness.enabled


def test_a_key_naming_no_listener_is_refused() -> None:
    with pytest.raises(InvalidService, match=r"actions\.UDP-80 names no listener of it"):
        build_stack(_svc({"type": "forward", "forwardConfig": {"targetGroups": []}},
                         key="actions.UDP-80"), settings=SETTINGS)


def test_a_backend_service_gets_its_own_target_group_and_binding() -> None:
    canary = nlb_service("canary", ports=[{"name": "alt", "port": 81, "targetPort": 9090}],
                         uid="u-canary")
    canary["metadata"]["namespace"] = "default"
    services = {"default/canary": canary}
    svc = _svc({"type": "forward", "forwardConfig": {"baseServiceWeight": 10, "targetGroups": [
        {"serviceName": "canary", "servicePort": "alt", "weight": 30}]}})
    stack = build_stack(svc, settings=SETTINGS, services=services.get)
    assert len(stack.target_groups) == 2
    [backend] = [tg for rid, tg in stack.target_groups.items() if "canary" in rid]
    assert backend.port == 9090
    assert backend.protocol == "TCP"
    bindings = {b.service_ref.name: b for b in stack.target_group_bindings.values()}
    assert bindings["canary"].service_ref.port == 81
    assert bindings["canary"].labels == bindings["web"].labels  # the base Service's stack
    (action,) = stack.listeners["80"].default_actions
    assert isinstance(action, ForwardAction)
    assert sorted(w.weight for w in action.target_groups) == [10, 30]
    # Another base Service forwarding to the same backend gets a target group of its own.
    other = _svc({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "canary", "servicePort": 81}]}})
    other["metadata"]["uid"] = "u-other"
    again = build_stack(other, settings=SETTINGS, services=services.get)
    assert {tg.name for tg in again.target_groups.values()}.isdisjoint(
        {tg.name for tg in stack.target_groups.values()})


def test_a_missing_backend_or_port_is_one_message() -> None:
    svc = _svc({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "canary", "servicePort": 80}]}})
    with pytest.raises(MissingService, match="Service default/canary, which does not exist"):
        build_stack(svc, settings=SETTINGS)
    canary = nlb_service("canary", ports=[{"name": "alt", "port": 81}])
    with pytest.raises(InvalidService, match="port 80 of Service default/canary, which it does"):
        build_stack(svc, settings=SETTINGS, services={"default/canary": canary}.get)
