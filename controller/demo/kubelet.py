"""The kubelet and the EndpointSlice controller, played against the local API server (which runs
neither), for the pods of one namespace:

- a new pod is started at once: a pod IP, phase Running, containers ready; its `Ready`
  condition is True only when every readiness gate's condition is True, and follows them (the
  TargetGroupBinding controller sets the target-health ones);
- a deleted pod terminates gracefully: it stays (a finalizer of the played kubelet stands in for
  the real kubelet's hold on it) for its `terminationGracePeriodSeconds`, serving, and only then
  goes; its endpoints say `terminating` meanwhile;
- every Service with a selector gets one EndpointSlice listing its pods (ready, serving,
  terminating, as the real controller writes them), at each Service port's target port.

`events` records what happened when (monotonic time), for the demo's narration and the rollout
test's timeline."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from runtime.client import KubeClient
from runtime.errors import ApiError, Conflict, NotFound
from runtime.informer import SharedInformer
from runtime.objects import Obj, as_list, dig, is_deleting, labels_of, name_of, uid_of
from runtime.resources import ENDPOINTSLICES, PODS, SERVICES
from runtime.statusconditions import rfc3339

TERMINATION_FINALIZER: Final = "kubelet.demo.aiolbc/graceful-termination"
SLICE_SUFFIX: Final = "-played"
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
MANAGED_BY: Final = {"endpointslice.kubernetes.io/managed-by": "kubelet.demo.aiolbc"}


@dataclass(frozen=True, slots=True)
class PodEvent:
    time: float
    pod: str
    ip: str
    kind: str  # started, ready, unready, terminating, removed


def pod_ready(pod: Obj) -> bool:
    """Containers ready and every readiness gate True: the kubelet's rule."""
    conditions = {c.get("type"): c.get("status") for c in as_list(dig(pod, "status", "conditions"))
                  if isinstance(c, dict)}
    gates = [g.get("conditionType") for g in as_list(dig(pod, "spec", "readinessGates"))
             if isinstance(g, dict)]
    return conditions.get("ContainersReady") == "True" and all(
        conditions.get(g) == "True" for g in gates)


def _ready_condition(pod: Obj) -> str | None:
    for cond in as_list(dig(pod, "status", "conditions")):
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return str(cond.get("status"))
    return None


class PlayedKubelet:
    def __init__(self, client: KubeClient, namespace: str, *, subnet: str = "10.0.1",
                 first_host: int = 20,
                 network: Callable[[str], Awaitable[None]] | None = None) -> None:
        """`network(ip)`: what the VPC CNI does before a pod runs (give the address a network
        interface in the VPC), so that the controller can find the pod's security group."""
        self.client = client
        self._network = network
        self.namespace = namespace
        self.events: list[PodEvent] = []
        self._subnet = subnet
        self._next_host = first_host
        self._pods = SharedInformer(client, PODS, namespace=namespace)
        self._services = SharedInformer(client, SERVICES, namespace=namespace)
        self._dirty = asyncio.Event()
        # Terminating pods by uid: the timer of their grace period, then "due", then "removed".
        self._terminating: dict[str, asyncio.TimerHandle | str] = {}
        self._slices: dict[str, Any] = {}
        # What this kubelet wrote, by pod uid: the cache may not show it yet.
        self._ips: dict[str, str] = {}
        self._ready: dict[str, bool] = {}
        self._task: asyncio.Task[None] | None = None

    # ---- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> PlayedKubelet:
        for informer in (self._pods, self._services):
            informer.add_handler(on_add=lambda *_: self._dirty.set(),
                                 on_update=lambda *_: self._dirty.set(),
                                 on_delete=lambda *_: self._dirty.set())
            informer.start()
        for informer in (self._pods, self._services):
            await informer.wait_for_sync()
        self._task = asyncio.create_task(self._run(), name="played-kubelet")
        return self

    async def stop(self) -> None:
        for state in self._terminating.values():
            if isinstance(state, asyncio.TimerHandle):
                state.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for informer in (self._pods, self._services):
            await informer.stop()

    async def __aenter__(self) -> PlayedKubelet:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def pods(self) -> list[Obj]:
        return self._pods.store.list()

    def _record(self, pod: Obj, kind: str) -> None:
        self.events.append(PodEvent(time.monotonic(), name_of(pod),
                                    str(dig(pod, "status", "podIP") or ""), kind))

    # ---- the loop -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._sync()
            except (ApiError, OSError):
                await asyncio.sleep(0.05)  # a write raced another; look again
                self._dirty.set()

    async def _sync(self) -> None:
        for pod in self.pods():
            await self._sync_pod(pod)
        for svc in self._services.store.list():
            await self._sync_slice(svc)

    async def _sync_pod(self, pod: Obj) -> None:
        uid = uid_of(pod)
        if is_deleting(pod):
            state = self._terminating.get(uid)
            if state == "due":
                await self._remove(pod)
            elif state is None:
                self._record(pod, "terminating")
                grace = dig(pod, "spec", "terminationGracePeriodSeconds")
                delay = float(grace) if isinstance(grace, int | float) else 30.0
                self._terminating[uid] = asyncio.get_running_loop().call_later(
                    delay, self._removal_due, uid)
            return
        if uid not in self._ips:
            await self._start_pod(pod)
            return
        if not dig(pod, "status", "podIP"):
            return  # our start is not in the cache yet
        ready = pod_ready(pod)
        if self._ready.get(uid) != ready:
            await self._set_conditions(pod, Ready=ready)
            self._ready[uid] = ready
            self._record(pod, "ready" if ready else "unready")

    async def _start_pod(self, pod: Obj) -> None:
        ip = f"{self._subnet}.{self._next_host}"
        self._next_host += 1
        if self._network is not None:
            await self._network(ip)
        self._ips[uid_of(pod)] = ip
        await self.client.patch(PODS, name_of(pod), {"metadata": {
            "finalizers": [*(pod["metadata"].get("finalizers") or []), TERMINATION_FINALIZER]}},
            self.namespace)
        started = {**pod, "status": {"podIP": ip, "conditions": [
            *(c for c in as_list(dig(pod, "status", "conditions"))
              if isinstance(c, dict) and c.get("type") != "ContainersReady"),
            {"type": "ContainersReady", "status": "True"}]}}
        ready = pod_ready(started)
        await self._set_conditions(pod, extra={"phase": "Running", "podIP": ip,
                                               "podIPs": [{"ip": ip}]},
                                   PodScheduled=True, Initialized=True, ContainersReady=True,
                                   Ready=ready)
        self._ready[uid_of(pod)] = ready
        self._record(started, "started")
        if ready:
            self._record(started, "ready")

    async def _set_conditions(self, pod: Obj, *, extra: Obj | None = None,
                              **conditions: bool) -> None:
        now = rfc3339(time.time())
        body = {"metadata": {"uid": uid_of(pod)}, "status": {**(extra or {}), "conditions": [
            {"type": t, "status": "True" if v else "False", "lastTransitionTime": now}
            for t, v in conditions.items()]}}
        with contextlib.suppress(NotFound, Conflict):
            await self.client.patch(PODS, name_of(pod), body, self.namespace,
                                    patch_type="strategic", subresource="status")

    def _removal_due(self, uid: str) -> None:
        self._terminating[uid] = "due"
        self._dirty.set()

    async def _remove(self, pod: Obj) -> None:
        name = name_of(pod)
        kept = [f for f in pod["metadata"].get("finalizers") or []
                if f != TERMINATION_FINALIZER]
        with contextlib.suppress(NotFound):
            await self.client.patch(PODS, name, {"metadata": {
                "finalizers": kept or None, "resourceVersion": pod["metadata"][
                    "resourceVersion"]}}, self.namespace)
        self._terminating[uid_of(pod)] = "removed"
        self._record(pod, "removed")

    # ---- EndpointSlices -----------------------------------------------------------------------

    def _selected(self, selector: dict[str, str]) -> Iterator[Obj]:
        for pod in sorted(self.pods(), key=name_of):
            labels = labels_of(pod)
            if dig(pod, "status", "podIP") and all(labels.get(k) == v
                                                   for k, v in selector.items()):
                yield pod

    async def _sync_slice(self, svc: Obj) -> None:
        selector = dig(svc, "spec", "selector")
        if not isinstance(selector, dict) or not selector:
            return
        ports = [{"name": p.get("name") or "", "protocol": p.get("protocol") or "TCP",
                  "port": p.get("targetPort") if isinstance(p.get("targetPort"), int)
                  else p.get("port")} for p in as_list(dig(svc, "spec", "ports"))
                 if isinstance(p, dict)]
        endpoints = []
        for pod in self._selected(selector):
            ready = self._ready.get(uid_of(pod), _ready_condition(pod) == "True")
            terminating = is_deleting(pod)
            endpoints.append({
                "addresses": [pod["status"]["podIP"]],
                "conditions": {"ready": ready and not terminating, "serving": ready,
                               "terminating": terminating},
                "targetRef": {"kind": "Pod", "name": name_of(pod), "namespace": self.namespace,
                              "uid": uid_of(pod)}})
        name = name_of(svc) + SLICE_SUFFIX
        wanted = {"ports": ports, "endpoints": endpoints}
        if self._slices.get(name) == wanted:
            return
        body: Obj = {"apiVersion": ENDPOINTSLICES.api_version, "kind": ENDPOINTSLICES.kind,
                     "metadata": {"name": name, "namespace": self.namespace,
                                  "labels": {SERVICE_NAME_LABEL: name_of(svc), **MANAGED_BY}},
                     "addressType": "IPv4", **wanted}
        try:
            current = await self.client.get(ENDPOINTSLICES, name, self.namespace)
        except NotFound:
            await self.client.create(ENDPOINTSLICES, body, self.namespace)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await self.client.update(ENDPOINTSLICES, body)
        self._slices[name] = wanted


__all__ = ["TERMINATION_FINALIZER", "PlayedKubelet", "PodEvent", "pod_ready"]
