"""The Kubernetes side of a deploy, for unit tests that need objects "as deployed" without a
deployer: the managed TargetGroupBindings a deploy of a stack writes, and a Service carrying
what its reconcile writes (finalizer, checkpoint, address, ready condition). The target group
ARNs and security group IDs are made up; nothing here reads AWS."""

from __future__ import annotations

import copy

from controller import checkpoint
from controller.apis import SERVICE_FINALIZER
from controller.bindings import desired_object
from controller.deploy import ResolvedTargetGroupBinding
from controller.deploy.securitygroups import networking_object
from controller.model import Stack
from controller.service.annotations import annotation_findings
from controller.service.model import MODEL_VERSION, ModelSettings, build_stack
from controller.service.reconciler import ready_message
from controller.service.status import REASON_RECONCILED, status_patch
from runtime.objects import Obj

GROUP_ID = "sg-0123456789abcdef0"
HOSTNAME = "k8s-deployed-0123456789.elb.us-west-2.amazonaws.com"


def target_group_arn(index: int) -> str:
    return ("arn:aws:elasticloadbalancing:us-west-2:123456789012:"
            f"targetgroup/k8s-deployed-{index}/0123456789abcdef")


def bindings_as_deployed(stack: Stack) -> list[Obj]:
    """The managed bindings a deploy of `stack` writes, one per target group, as the API
    server would hold them."""
    found = []
    for index, (rid, resource) in enumerate(sorted(stack.target_group_bindings.items())):
        networking = (None if resource.networking is None
                      else networking_object(resource.networking, lambda _group: GROUP_ID))
        obj = desired_object(ResolvedTargetGroupBinding(rid, resource, target_group_arn(index),
                                                        networking=networking))
        obj["metadata"].update(uid=f"uid-{resource.name}", resourceVersion=str(index + 1))
        found.append(obj)
    return found


def service_as_deployed(service: Obj, *, settings: ModelSettings) -> tuple[Obj, list[Obj]]:
    """`service` as its reconcile leaves it (finalizer, checkpoint, address, ready condition
    for its generation) and the managed bindings of its stack."""
    stack = build_stack(service, settings=settings)
    svc = copy.deepcopy(service)
    meta = svc.setdefault("metadata", {})
    meta.setdefault("generation", 1)
    meta["finalizers"] = [*meta.get("finalizers", []), SERVICE_FINALIZER]
    meta.setdefault("annotations", {}).update(
        checkpoint.patch(checkpoint.compute(stack, version=MODEL_VERSION),
                         timestamp=0)["metadata"]["annotations"])
    body = status_patch(svc, ready=True, reason=REASON_RECONCILED,
                        message=ready_message(annotation_findings(service)), now=0,
                        hostname=HOSTNAME)
    assert body is not None
    svc["status"] = {**(svc.get("status") or {}), **body["status"]}
    return svc, bindings_as_deployed(stack)


__all__ = ["GROUP_ID", "HOSTNAME", "bindings_as_deployed", "service_as_deployed",
           "target_group_arn"]
