"""QUIC server IDs, as upstream (`pkg/inject/quic`, `pkg/k8s/pod_info.go`): the pod webhook
gives each container named by the pod's `aws-load-balancer-quic-enabled-containers` annotation
(init containers included) a server ID in an environment variable (`--quic-environment-
variable-name`, default `AWS_LBC_QUIC_SERVER_ID`) unless it has one; a target of a QUIC or
TCP_QUIC target group is registered with its pod's ID, and a target whose pod has none is not
registered.

An ID is 64 bits (upstream's layout): 39 bits of milliseconds since 2020-01-01, a 17-bit worker
ID and a 7-bit sequence, written as base64 of its 8 big-endian bytes into the container and
as `0x` and 16 hexadecimal digits to AWS. The worker ID comes from the ConfigMap
`kube-system/quic-server-id-worker-tracker` (key `nextWorkerId`), which each process that
injects takes the next number from once, so that replicas and restarts do not share one.

Reading a pod's ID (upstream's podInfoBuilder): only a pod carrying the annotation has IDs; a
container (or a sidecar, an init container with `restartPolicy: Always`) whose variable holds
valid base64 gives its ID to each of its container ports, and the first such is the pod's ID
for any other port.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import random
from collections.abc import Callable
from typing import Any, Final

from controller.apis import QUIC_ENABLED_CONTAINERS_ANNOTATION
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import Conflict, NotFound
from runtime.objects import Obj, annotations_of, as_dict, as_list
from runtime.resources import CONFIGMAPS

EPOCH_MS: Final = 1_577_836_800_000  # 2020-01-01T00:00:00Z
WORKER_ID_BITS: Final = 17
SEQUENCE_BITS: Final = 7
MAX_WORKER_ID: Final = (1 << WORKER_ID_BITS) - 1
MAX_SEQUENCE: Final = (1 << SEQUENCE_BITS) - 1
WORKER_CONFIGMAP: Final = "quic-server-id-worker-tracker"
WORKER_NAMESPACE: Final = "kube-system"
WORKER_KEY: Final = "nextWorkerId"


# ---- reading a pod's IDs ---------------------------------------------------------------------

def _containers(pod: Obj) -> list[dict[str, Any]]:
    """The containers and the sidecars (init containers that keep running)."""
    spec = as_dict(pod.get("spec"))
    found = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    found.extend(c for c in as_list(spec.get("initContainers"))
                 if isinstance(c, dict) and c.get("restartPolicy") == "Always")
    return found


def elb_format(value: str) -> str | None:
    """A container's base64 ID as AWS takes it (`0x` and lowercase hex); None if not base64."""
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    return "0x" + raw.hex() if raw else None


def server_ids(pod: Obj | None, env_name: str) -> tuple[dict[int, str], str | None]:
    """(ID by container port, the pod's default ID) of a pod (never raises: user data)."""
    if pod is None or QUIC_ENABLED_CONTAINERS_ANNOTATION not in annotations_of(pod):
        return {}, None
    by_port: dict[int, str] = {}
    default: str | None = None
    for container in _containers(pod):
        value = next((e.get("value") for e in as_list(container.get("env"))
                      if isinstance(e, dict) and e.get("name") == env_name), None)
        found = elb_format(value) if isinstance(value, str) else None
        if found is None:
            continue
        for port in as_list(container.get("ports")):
            number = as_dict(port).get("containerPort")
            if isinstance(number, int) and not isinstance(number, bool):
                by_port[number] = found
        default = default or found
    return by_port, default


def server_id_for(pod: Obj | None, port: int, env_name: str) -> str | None:
    """The ID a target of the pod at `port` is registered with (upstream's GetQUICServerID)."""
    by_port, default = server_ids(pod, env_name)
    return by_port.get(port, default)


def quic_fields(pod: Obj, env_name: str) -> Obj | None:
    """What the pod cache keeps for a QUIC pod: the annotation and, of each container with the
    variable, its name, ports and that variable; None for any other pod."""
    value = annotations_of(pod).get(QUIC_ENABLED_CONTAINERS_ANNOTATION)
    if not isinstance(value, str):
        return None
    kept: list[Obj] = []
    for container in _containers(pod):
        env = [{"name": env_name, "value": e.get("value")} for e in as_list(container.get("env"))
               if isinstance(e, dict) and e.get("name") == env_name
               and isinstance(e.get("value"), str)]
        if env:
            kept.append({"name": container.get("name"),
                         "ports": [{"containerPort": as_dict(p).get("containerPort")}
                                   for p in as_list(container.get("ports"))],
                         "env": env})
    return {"annotations": {QUIC_ENABLED_CONTAINERS_ANNOTATION: value}, "containers": kept}


# ---- giving a new pod its IDs (the pod webhook) ----------------------------------------------

class WorkerIds:
    """The worker ID of this process, taken from the tracking ConfigMap once (upstream's
    workerIdGenerator: a random first ID, then the next one for each process that asks)."""

    def __init__(self, client: KubeClient, *, rng: random.Random | None = None) -> None:
        self._client = client
        self._rng = rng or random.Random()

    async def take(self) -> int:
        for _ in range(5):  # a racing replica took one meanwhile: read again
            try:
                cm = await self._client.get(CONFIGMAPS, WORKER_CONFIGMAP, WORKER_NAMESPACE)
            except NotFound:
                cm = None
            data = as_dict((cm or {}).get("data"))
            stored = data.get(WORKER_KEY)
            worker = (int(stored) if isinstance(stored, str) and stored.isdigit()
                      else self._rng.randint(0, MAX_WORKER_ID)) % (MAX_WORKER_ID + 1)
            data_out = {**data, WORKER_KEY: str((worker + 1) % MAX_WORKER_ID)}
            try:
                if cm is None:
                    await self._client.create(CONFIGMAPS, {
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": WORKER_CONFIGMAP, "namespace": WORKER_NAMESPACE},
                        "data": data_out}, WORKER_NAMESPACE)
                else:
                    # Guarded by the version read: two replicas never take the same number.
                    await self._client.update(CONFIGMAPS, {**cm, "data": data_out})
            except Conflict:  # AlreadyExists too
                continue
            return worker
        raise RuntimeError(f"configmap {WORKER_NAMESPACE}/{WORKER_CONFIGMAP} kept changing; "
                           "no QUIC worker ID taken")


class ServerIdGenerator:
    """Upstream's IDs: unique per process through the worker ID, per millisecond through the
    sequence (which starts at random each millisecond)."""

    def __init__(self, take_worker_id: Callable[[], Any], *, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self._take = take_worker_id
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._worker: int | None = None
        self._sequence = 0
        self._last = 0
        self._lock = asyncio.Lock()

    def _millis(self) -> int:
        return int(self._clock.wall() * 1000)

    async def generate(self) -> str:
        async with self._lock:
            if self._worker is None:
                self._worker = int(await self._take())
            now = self._millis()
            if now < self._last:
                raise RuntimeError("clock moved backwards, refusing to generate a QUIC "
                                   "server ID")
            if now == self._last:
                self._sequence = (self._sequence + 1) & MAX_SEQUENCE
                if self._sequence == 0:  # this millisecond is used up: wait for the next
                    while now <= self._last:
                        await self._clock.sleep(0.001)
                        now = self._millis()
                    self._sequence = self._rng.randint(0, MAX_SEQUENCE - 1)
            else:
                self._sequence = self._rng.randint(0, MAX_SEQUENCE - 1)
            self._last = now
            value = (((now - EPOCH_MS) << (WORKER_ID_BITS + SEQUENCE_BITS))
                     | (self._worker << SEQUENCE_BITS) | self._sequence)
            return base64.b64encode((value & (2**64 - 1)).to_bytes(8, "big")).decode()


def named_containers(pod: Obj) -> set[str]:
    value = annotations_of(pod).get(QUIC_ENABLED_CONTAINERS_ANNOTATION)
    return set(value.split(",")) if isinstance(value, str) else set()


async def with_server_ids(pod: Obj, env_name: str,
                          generate: Callable[[], Any]) -> Obj:
    """The pod with an ID in each container and init container the annotation names that has
    none (upstream's Mutate); the pod itself when nothing changes."""
    names = named_containers(pod)
    if not names:
        return pod
    out: Obj | None = None
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(as_list(as_dict(pod.get("spec")).get(kind))):
            if not isinstance(container, dict) or container.get("name") not in names:
                continue
            env = as_list(container.get("env"))
            if any(isinstance(e, dict) and e.get("name") == env_name for e in env):
                continue
            if out is None:
                out = copy.deepcopy(pod)
            target = out["spec"][kind][index]
            target["env"] = [*env, {"name": env_name, "value": await generate()}]
    return pod if out is None else out


__all__ = ["EPOCH_MS", "WORKER_CONFIGMAP", "WORKER_KEY", "WORKER_NAMESPACE", "ServerIdGenerator",
           "WorkerIds", "elb_format", "named_containers", "quic_fields", "server_id_for",
           "server_ids", "with_server_ids"]
