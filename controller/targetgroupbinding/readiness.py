"""The readiness-gate step of a TargetGroupBinding reconcile (ip targets): each pod behind the
binding that carries its gate `target-health.elbv2.k8s.aws/<binding>` gets the pod condition
of that type, True once its target is `healthy` at AWS, else False with AWS's reason and
description (`Elb.RegistrationInProgress`, `Target.FailedHealthChecks`, ...). The kubelet
counts the pod ready only when every gate is True, so a rollout waits for the load balancer.

Conditions are written with a strategic merge patch of `pods/status` that carries the pod's
uid (a precondition: a new pod of the same name is never marked) and touches only that one
condition. Nothing is written when the pod already says the same. While any gate is not True
the binding is looked at again after the requeue duration: target health moves at AWS with no
event to wake anything.

When the binding is deleted, its gates are released (True, "Target Group Binding is deleted",
as upstream does), so that its pods do not stay unready forever. When the binding is refused
(its target group is gone, or it may not act on it), the gates still waiting say so: False with
the binding's reason and message, so that the pod tells why it is not Ready. A gate already True
stays True: the pod serves, and taking it out of its Service's endpoints would not help.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Set

import structlog
from prometheus_client import Histogram

from controller.apis import target_health_condition
from controller.targetgroupbinding.pods import (
    GATE_INDEX,
    conditions,
    pod_endpoints,
    readiness_gates,
)
from controller.targetgroupbinding.targetgroups import REGISTERING, TargetState
from controller.targetgroupbinding.targets import Target
from runtime.client import KubeClient
from runtime.clock import Clock
from runtime.errors import Conflict, NotFound
from runtime.objects import Obj, key_of, name_of, namespace_of, uid_of
from runtime.resources import PODS
from runtime.statusconditions import rfc3339
from runtime.store import Store

log = structlog.get_logger("targetgroupbinding")

DELETED = TargetState("healthy", "", "Target Group Binding is deleted")


def _wanted(health: TargetState) -> tuple[str, str, str]:
    if health.state == "healthy":
        return "True", health.reason, health.description
    return "False", health.reason, health.description


class ReadinessGates:
    def __init__(self, client: KubeClient, pods: Store, clock: Clock, *,
                 ready_seconds: Histogram | None = None) -> None:
        self._client = client
        self._pods = pods
        self._clock = clock
        # awslbc_readiness_gate_ready_seconds: from the condition's turning False to True.
        self._ready_seconds = ready_seconds

    def _gated(self, tgb: Obj, service_port: Obj, slices: Iterable[Obj], targets: Set[Target],
               ip_address_type: str) -> list[tuple[Target, Obj]]:
        """The pods behind `targets` that carry this binding's gate."""
        condition = target_health_condition(name_of(tgb))
        found: dict[str, tuple[Target, Obj]] = {}
        for target, endpoint, pod_key in pod_endpoints(service_port, slices,
                                                        ip_address_type=ip_address_type):
            if target not in targets:
                continue
            pod = self._pods.get(pod_key)
            uid = endpoint.uid
            if pod is None or (uid and uid_of(pod) != uid):
                continue
            if condition in readiness_gates(pod):
                found[pod_key] = (target, pod)
        return list(found.values())

    def pending(self, tgb: Obj, service_port: Obj, slices: Iterable[Obj], targets: Set[Target],
                ip_address_type: str) -> bool:
        """From the caches only: some pod of the binding waits for its gate to turn True (a
        checkpoint match must not skip the reconcile that would turn it)."""
        condition = target_health_condition(name_of(tgb))
        return any(conditions(pod).get(condition, {}).get("status") != "True"
                   for _, pod in self._gated(tgb, service_port, slices, targets,
                                             ip_address_type))

    async def update(self, tgb: Obj, service_port: Obj, slices: Iterable[Obj],
                     targets: Set[Target], health: Mapping[Target, TargetState],
                     ip_address_type: str) -> bool:
        """Set the condition of each gated pod behind `targets` (the registered ones) from its
        target's health; True while any is not True yet."""
        condition = target_health_condition(name_of(tgb))
        waiting = False
        for target, pod in self._gated(tgb, service_port, slices, targets, ip_address_type):
            state = health.get(target, REGISTERING)
            before = conditions(pod).get(condition)
            status = await self._set(pod, condition, state)
            waiting = waiting or status != "True"
            if status == "True" and before is not None and before.get("status") != "True":
                self._observe_ready(tgb, before.get("lastTransitionTime"))
        return waiting

    def _observe_ready(self, tgb: Obj, since: object) -> None:
        """Upstream's measure: the gate's unhealthy-to-healthy flip, from the time it last
        turned unhealthy (a stamp that cannot be read is no measure)."""
        if self._ready_seconds is None or not isinstance(since, str):
            return
        try:
            started = datetime.datetime.fromisoformat(since).timestamp()
        except ValueError:
            return
        self._ready_seconds.labels(namespace_of(tgb) or "", name_of(tgb)).observe(
            max(0.0, self._clock.wall() - started))

    async def refused(self, tgb: Obj, reason: str, message: str) -> None:
        """The binding is refused (`reason`, `message`: its Ready condition's): every pod
        whose gate for it is not True says why."""
        condition = target_health_condition(name_of(tgb))
        state = TargetState("", reason, f"TargetGroupBinding {name_of(tgb)}: {message}")
        for pod in self._pods.by_index(GATE_INDEX, key_of(tgb)):
            if conditions(pod).get(condition, {}).get("status") != "True":
                await self._set(pod, condition, state)

    async def release(self, tgb: Obj) -> None:
        """The binding is going away: none of its pods may wait for it any more."""
        condition = target_health_condition(name_of(tgb))
        for pod in self._pods.by_index(GATE_INDEX, key_of(tgb)):
            await self._set(pod, condition, DELETED)

    async def _set(self, pod: Obj, condition: str, health: TargetState) -> str:
        status, reason, message = _wanted(health)
        current = conditions(pod).get(condition)
        if (current is not None and current.get("status") == status
                and (current.get("reason") or "") == reason
                and (current.get("message") or "") == message):
            return status
        changed = current is None or current.get("status") != status
        stamp = current.get("lastTransitionTime") if current and not changed else None
        body = {"metadata": {"uid": uid_of(pod)}, "status": {"conditions": [{
            "type": condition, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": stamp or rfc3339(self._clock.wall())}]}}
        try:
            await self._client.patch(PODS, name_of(pod), body, namespace_of(pod),
                                     patch_type="strategic", subresource="status")
        except (NotFound, Conflict):
            return status  # gone, or a new pod of that name: not ours to mark
        log.info("pod readiness gate", pod=key_of(pod), condition=condition, status=status,
                 reason=reason)
        return status


__all__ = ["DELETED", "ReadinessGates"]
