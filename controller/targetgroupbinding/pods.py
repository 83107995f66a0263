"""What the TargetGroupBinding controller knows about pods, and how little: enough to tell a pod
that waits only for its target-health readiness gates from one that is not ready at all.

The cache holds every pod (a binding's endpoints can be any pod), so each entry is cut down as
it arrives (`slim_pod`, the informer's transform): a pod without a target-health gate keeps its
name, namespace, uid and resourceVersion; one with a gate also keeps its readiness gates, its
deletion timestamp and the conditions that decide (ContainersReady and the gates'). Measured
by `tests/bench/pod_cache.py` on a typical Deployment's pods: about 0.9 KB a pod without a
gate and 2.7 KB with one, against 20 KB for the whole pod (16x less with a fifth of the pods
gated: 120 MB instead of 1.9 GB for 100,000 pods). Labels, the rest of the spec and status are
never needed: the EndpointSlices already say which pod backs which address (a QUIC pod's
server IDs excepted: quic.py).

A pod whose containers are ready but whose readiness gates are not yet all True is not ready
in its EndpointSlice; `pending_endpoints` finds those that wait only for target-health gates
(every other gate True), so that the binding registers them and the gate can turn True.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from controller.apis import DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME, TARGET_HEALTH_CONDITION_PREFIX
from controller.targetgroupbinding.quic import quic_fields
from controller.targetgroupbinding.sliceendpoints import SliceEndpoint, endpoints_of
from controller.targetgroupbinding.targets import Endpoint, Target
from runtime.objects import Obj, as_list, dig, is_deleting, namespace_of
from runtime.reconcile import Request

CONTAINERS_READY: Final = "ContainersReady"
GATE_INDEX: Final = "target-health-gate"  # pod → "namespace/binding" of each of its gates
_META_KEPT: Final = ("name", "namespace", "uid", "resourceVersion")


def readiness_gates(pod: Obj) -> list[str]:
    return [gate["conditionType"] for gate in as_list(dig(pod, "spec", "readinessGates"))
            if isinstance(gate, dict) and isinstance(gate.get("conditionType"), str)]


def conditions(pod: Obj) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in as_list(dig(pod, "status", "conditions"))
            if isinstance(c, dict) and isinstance(c.get("type"), str)}


def _target_health(gate: str) -> bool:
    return gate.startswith(TARGET_HEALTH_CONDITION_PREFIX)


def slim_pod(obj: Obj, *, quic_env: str = DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME) -> Obj:
    """The pod as the cache keeps it (never raises: a pod is user data). A pod annotated with
    QUIC containers also keeps that annotation and, of those containers, the ports and the
    variable `quic_env` (its QUIC server ID, quic.py)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kept: Obj = {"metadata": {k: meta[k] for k in _META_KEPT if k in meta}}
    quic = quic_fields(obj, quic_env)
    if quic is not None:
        kept["metadata"]["annotations"] = quic["annotations"]
        kept["spec"] = {"containers": quic["containers"]}
    gates = readiness_gates(obj)
    if not any(_target_health(g) for g in gates):
        return kept
    if meta.get("deletionTimestamp"):
        kept["metadata"]["deletionTimestamp"] = meta["deletionTimestamp"]
    wanted = {CONTAINERS_READY, *gates}
    kept.setdefault("spec", {})["readinessGates"] = [{"conditionType": g} for g in gates]
    kept["status"] = {"conditions": [
        {k: c[k] for k in ("type", "status", "reason", "message", "lastTransitionTime")
         if k in c}
        for c in conditions(obj).values() if c["type"] in wanted]}
    return kept


@dataclass(frozen=True, slots=True)
class PodTrimmer:
    """`slim_pod` with the process's `--quic-environment-variable-name`: the informer's
    transform (equal trimmers are one transform to the shared informer)."""

    quic_env: str = DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME

    def __call__(self, obj: Obj) -> Obj:
        return slim_pod(obj, quic_env=self.quic_env)


def gate_index(pod: Obj) -> list[str]:
    namespace = namespace_of(pod)
    return [f"{namespace}/{gate.removeprefix(TARGET_HEALTH_CONDITION_PREFIX)}"
            for gate in readiness_gates(pod) if _target_health(gate)] if namespace else []


def pod_view(pod: Obj) -> Any:
    """What can make a gated pod newly registrable: its containers' readiness, gates that are
    not target health (ours are written by the controller itself), deletion."""
    conds = conditions(pod)
    others = tuple((g, conds.get(g, {}).get("status")) for g in readiness_gates(pod)
                   if not _target_health(g))
    return (conds.get(CONTAINERS_READY, {}).get("status"), others, is_deleting(pod))


def bindings_of_pod(pod: Obj) -> list[Request]:
    """A pod names its bindings in its gates: no lookup needed."""
    return [Request(*key.split("/", 1)) for key in gate_index(pod)]


def waits_only_for_target_health(pod: Obj, condition: str) -> bool:
    """Carries the gate `condition`, its containers are ready and every readiness gate that is
    not target health is True: only target health keeps it from being ready."""
    gates = readiness_gates(pod)
    if condition not in gates or is_deleting(pod):
        return False
    conds = conditions(pod)
    if conds.get(CONTAINERS_READY, {}).get("status") != "True":
        return False
    return all(conds.get(g, {}).get("status") == "True" for g in gates
               if not _target_health(g))


def pod_endpoints(service_port: Obj, slices: Iterable[Obj], *, ip_address_type: str = "ipv4"
                  ) -> Iterator[tuple[Target, SliceEndpoint, str]]:
    """(target, slice endpoint, pod key) of every pod-backed endpoint at the Service port,
    whatever its conditions."""
    family = "IPv6" if ip_address_type == "ipv6" else "IPv4"
    wanted_name = service_port.get("name") or ""
    for slice_ in slices:
        if slice_.get("addressType", "IPv4") != family:
            continue
        namespace = namespace_of(slice_)
        endpoints = endpoints_of(slice_)
        for port in as_list(slice_.get("ports")):
            if not isinstance(port, dict) or (wanted_name
                                              and (port.get("name") or "") != wanted_name):
                continue
            number = port.get("port")
            if not isinstance(number, int) or isinstance(number, bool):
                continue
            for endpoint in endpoints:
                if endpoint.pod:
                    yield (Target(endpoint.address, number), endpoint,
                           f"{namespace}/{endpoint.pod}")


def pending_endpoints(service_port: Obj, slices: Iterable[Obj],
                      pod: Callable[[str], Obj | None], *, condition: str,
                      ip_address_type: str = "ipv4") -> list[Endpoint]:
    """Endpoints not ready in their slice whose pod waits only for target health, with
    `condition` among its gates: registered so that their target can become healthy."""
    found: dict[Target, Endpoint] = {}
    for target, endpoint, pod_key in pod_endpoints(service_port, slices,
                                                    ip_address_type=ip_address_type):
        if endpoint.ready or endpoint.terminating:
            continue
        cached = pod(pod_key)
        uid = endpoint.uid
        if cached is None or (uid and dig(cached, "metadata", "uid") != uid):
            continue
        if waits_only_for_target_health(cached, condition):
            found[target] = Endpoint(target, f"{target.identifier}:{uid}")
    return sorted(found.values())


__all__ = ["CONTAINERS_READY", "GATE_INDEX", "PodTrimmer", "bindings_of_pod", "conditions",
           "gate_index",
           "pending_endpoints", "pod_endpoints", "pod_view", "readiness_gates", "slim_pod",
           "waits_only_for_target_health"]

