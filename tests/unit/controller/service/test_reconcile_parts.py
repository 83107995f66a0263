"""The cache-only parts of the Service reconciler: managed-binding comparison, status patches,
and which events are queued at which priority."""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

from controller import checkpoint
from controller.apis import (
    CHECKPOINT_ANNOTATION,
    CHECKPOINT_TIMESTAMP_ANNOTATION,
    SERVICE_FINALIZER,
)
from controller.bindings import desired_object, matches_model, pair, retained_arns, up_to_date
from controller.deploy import ResolvedTargetGroupBinding
from controller.service import ModelSettings, build_stack
from controller.service.model import checkpoint_of
from controller.service.status import CONDITION_TYPE, clear_patch, status_patch
from controller.service.watches import service_for_binding, service_stack_index, services_we_build
from controller.settings import ClusterScope
from runtime.handlers import Deferred, EnqueueForObject
from runtime.reconcile import LOW, NORMAL, Request
from tests.support.objects import web_service

SETTINGS = ModelSettings(cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"))
ARN = "arn:aws:elasticloadbalancing:us-west-2:1:targetgroup/x/1"
# What a deploy fills in: the backend group's ID, on the target port.
NETWORKING = {"ingress": [{"from": [{"securityGroup": {"groupID": "sg-0b"}}],
                           "ports": [{"protocol": "TCP", "port": 8080}]}]}


def resolved() -> ResolvedTargetGroupBinding:
    svc = web_service({"aws-load-balancer-nlb-target-type": "ip",
                       "aws-load-balancer-target-node-labels": "a=b"})
    stack = build_stack(svc, settings=SETTINGS)
    return ResolvedTargetGroupBinding("shop/web:80", stack.target_group_bindings["shop/web:80"],
                                      ARN, networking=NETWORKING)


def test_desired_binding_object() -> None:
    obj = desired_object(resolved())
    assert obj["kind"] == "TargetGroupBinding"
    assert obj["metadata"]["labels"] == {"service.k8s.aws/stack-name": "web",
                                         "service.k8s.aws/stack-namespace": "shop"}
    assert obj["spec"] == {"targetGroupARN": ARN, "targetType": "ip",
                           "serviceRef": {"name": "web", "port": 80}, "ipAddressType": "ipv4",
                           "networking": NETWORKING}
    assert service_stack_index(obj) == ["shop/web"]
    assert service_for_binding(obj) == [Request("shop", "web")]
    assert service_for_binding({"metadata": {"labels": {}}}) == []


def test_comparison_ignores_annotations_and_foreign_labels() -> None:
    binding = resolved()
    desired = desired_object(binding)
    live = copy.deepcopy(desired)
    live["metadata"].update(
        uid="u", resourceVersion="7", finalizers=["elbv2.k8s.aws/resources"],
        annotations={CHECKPOINT_ANNOTATION: "a/b",
                     CHECKPOINT_TIMESTAMP_ANNOTATION: "1"})
    live["metadata"]["labels"]["extra"] = "x"
    live["status"] = {"observedGeneration": 1}
    assert up_to_date(live, desired)
    assert matches_model([live], [binding.spec])
    # The group IDs only a deploy knows are taken on trust, like the target group's ARN.
    other_group = copy.deepcopy(live)
    other_group["spec"]["networking"]["ingress"][0]["from"][0]["securityGroup"]["groupID"] = "sg-9"
    assert matches_model([other_group], [binding.spec])
    for path, value in ((("spec", "targetType"), "instance"),
                        (("spec", "serviceRef"), {"name": "web", "port": 443}),
                        (("spec", "networking"), None),
                        (("spec", "networking"), {"ingress": [{
                            "from": [{"securityGroup": {"groupID": "sg-0b"}}],
                            "ports": [{"protocol": "TCP", "port": 8081}]}]})):
        changed = copy.deepcopy(live)
        if value is None:
            del changed[path[0]][path[1]]
        else:
            changed[path[0]][path[1]] = value
        assert not up_to_date(changed, desired)
        assert not matches_model([changed], [binding.spec])
    unlabelled = copy.deepcopy(live)
    del unlabelled["metadata"]["labels"]["service.k8s.aws/stack-name"]
    assert not up_to_date(unlabelled, desired)
    deleting = copy.deepcopy(live)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not matches_model([deleting], [binding.spec])
    assert not matches_model([], [binding.spec])
    assert not matches_model([live, live], [binding.spec])  # one too many


def test_bindings_are_matched_by_target_group_not_by_name() -> None:
    """Upstream's identity (pkg/deploy/elbv2/target_group_binding_synthesizer.go): a binding
    named after an older target group name is the same binding, kept and updated in place;
    only what this controller writes is compared and replaced."""
    binding = resolved()
    upstream = desired_object(binding)
    upstream["metadata"]["name"] = "k8s-shop-web-0123456789"
    upstream["spec"].update(vpcID="vpc-1", targetGroupProtocol="TCP",
                            multiClusterTargetGroup=False)
    assert matches_model([upstream], [binding.spec])
    assert up_to_date(upstream, desired_object(binding))
    # Its networking is ours too: upstream's, admitting another group, is rewritten.
    other_rules = copy.deepcopy(upstream)
    other_rules["spec"]["networking"] = {"ingress": []}
    assert not up_to_date(other_rules, desired_object(binding))
    paired = pair([binding], [upstream])
    assert paired.pairs == [(binding, upstream)]
    assert paired.stale == []
    other = copy.deepcopy(upstream)
    other["spec"]["targetGroupARN"] = ARN + "-old"
    paired = pair([binding], [other])
    assert paired.pairs == [(binding, None)]
    assert paired.stale == [other]
    going = copy.deepcopy(upstream)
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    paired = pair([binding], [going])
    assert (paired.pairs, paired.waiting, paired.stale) == ([], [binding], [])
    assert retained_arns([other, going]) == {ARN, ARN + "-old"}


def test_fields_the_mutating_webhook_added_are_still_what_the_model_wants() -> None:
    binding = resolved()
    desired = desired_object(binding)
    live = copy.deepcopy(desired)
    live["spec"].update(vpcID="vpc-1", targetGroupProtocol="TCP")
    assert up_to_date(live, desired)
    assert matches_model([live], [binding.spec])
    # Any other field the model does not set is a difference.
    live["spec"]["nodeSelector"] = {"matchLabels": {"a": "b"}}
    assert not up_to_date(live, desired)
    assert not matches_model([live], [binding.spec])


def test_status_patches_only_when_something_changes() -> None:
    svc = web_service()
    svc["metadata"]["generation"] = 2
    body = status_patch(svc, ready=True, reason="Reconciled", message="ok", now=1.0,
                        hostname="nlb.example")
    assert body is not None
    assert body["status"]["loadBalancer"] == {"ingress": [{"hostname": "nlb.example"}]}
    [cond] = body["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["observedGeneration"]) == (
        CONDITION_TYPE, "True", 2)
    svc["status"] = body["status"]
    assert status_patch(svc, ready=True, reason="Reconciled", message="ok", now=2.0,
                        hostname="nlb.example") is None
    failed = status_patch(svc, ready=False, reason="InvalidAnnotation", message="bad", now=3.0)
    assert failed is not None
    assert "loadBalancer" not in failed["status"]  # a failure keeps the address
    svc["status"]["conditions"].append({"type": "Other", "status": "True"})
    assert clear_patch(svc) == {"status": {"loadBalancer": {"ingress": None},
                                           "conditions": [{"type": "Other", "status": "True"}]}}
    assert clear_patch(web_service()) is None


class Recorded:
    def __init__(self) -> None:
        self.items: list[tuple[Request, int]] = []

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        self.items.append((request, priority))

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        self.enqueue(request, priority=decision())  # decided at once


def _handler(target: Recorded, *, enabled: bool = True) -> EnqueueForObject:
    """The Service controller's `for_` watch, as its wiring declares it."""
    return EnqueueForObject(
        target, predicates=[services_we_build("service.k8s.aws/nlb")],
        priority=checkpoint.priority_function(partial(checkpoint_of, settings=SETTINGS),
                                              enabled=enabled))


def _with_checkpoint(svc: dict[str, Any], value: str | None) -> dict[str, Any]:
    svc["metadata"]["annotations"][CHECKPOINT_ANNOTATION] = value
    return svc


def test_restart_priorities() -> None:
    target = Recorded()
    handler = _handler(target)
    unchanged = web_service()
    _with_checkpoint(unchanged, checkpoint_of(unchanged, settings=SETTINGS))
    changed = _with_checkpoint(web_service({"aws-load-balancer-scheme": "internet-facing"}),
                               checkpoint_of(web_service(), settings=SETTINGS))
    invalid = _with_checkpoint(web_service({"aws-load-balancer-healthcheck-interval": "x"}), "v1:x")
    handler.on_add(unchanged, True)
    handler.on_add(changed, True)
    handler.on_add(invalid, True)
    handler.on_add(unchanged, False)  # a real add is always NORMAL
    handler.on_update(unchanged, unchanged)  # resync
    assert [p for _, p in target.items] == [LOW, NORMAL, NORMAL, NORMAL, LOW]


def test_services_that_are_not_ours_are_not_queued() -> None:
    target = Recorded()
    handler = _handler(target)
    plain = web_service(type_="ClusterIP", load_balancer_class=None)
    handler.on_add(plain, True)
    assert target.items == []
    # Still carrying our finalizer (it stopped qualifying): queued, at NORMAL, for cleanup.
    plain["metadata"]["finalizers"] = [SERVICE_FINALIZER]
    _with_checkpoint(plain, "v1:old")
    handler.on_add(plain, True)
    assert target.items == [(Request("shop", "web"), NORMAL)]


def test_checkpoints_disabled() -> None:
    target = Recorded()
    unchanged = web_service()
    _with_checkpoint(unchanged, checkpoint_of(unchanged, settings=SETTINGS))
    _handler(target, enabled=False).on_add(unchanged, True)
    assert target.items == [(Request("shop", "web"), NORMAL)]
