"""QUIC server IDs as upstream makes and reads them (`pkg/inject/quic`, `pkg/k8s/pod_info.go`):
the 64-bit layout, the sequence within a millisecond, a pod's ID per container port, what the
pod cache keeps, and the injection into the named containers."""

from __future__ import annotations

import asyncio
import base64
import random
from typing import Any

from controller.apis import QUIC_ENABLED_CONTAINERS_ANNOTATION
from controller.targetgroupbinding.pods import PodTrimmer, slim_pod
from controller.targetgroupbinding.quic import (
    EPOCH_MS,
    ServerIdGenerator,
    elb_format,
    server_id_for,
    with_server_ids,
)
from runtime.clock import FakeClock

ENV = "AWS_LBC_QUIC_SERVER_ID"
A = base64.b64encode(bytes.fromhex("0123456789abcdef")).decode()
B = base64.b64encode(bytes.fromhex("00000000000000ff")).decode()


def _pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (),
         annotated: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u",
                         "annotations": ({QUIC_ENABLED_CONTAINERS_ANNOTATION: "a,b"}
                                         if annotated else {})},
            "spec": {"containers": list(containers), "initContainers": list(init)}}


def _container(name: str, port: int | None, value: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "image": "x"}
    if port is not None:
        found["ports"] = [{"containerPort": port}]
    if value is not None:
        found["env"] = [{"name": "OTHER", "value": "1"}, {"name": ENV, "value": value}]
    return found


async def test_ids_are_upstreams_layout_and_unique_within_a_millisecond() -> None:
    clock = FakeClock(wall_start=1_700_000_000.0)

    async def worker() -> int:
        return 5

    generator = ServerIdGenerator(worker, clock=clock, rng=random.Random(1))
    values = [int.from_bytes(base64.b64decode(await generator.generate()), "big")
              for _ in range(3)]
    assert len(set(values)) == 3
    for value in values:
        assert value >> 24 == 1_700_000_000_000 - EPOCH_MS
        assert (value >> 7) & ((1 << 17) - 1) == 5
    # Consecutive in one millisecond: the sequence counts up.
    assert [v & 127 for v in values][1:] == [(values[0] & 127) + 1, (values[0] & 127) + 2]


async def test_a_used_up_millisecond_waits_for_the_next() -> None:
    clock = FakeClock(wall_start=1_700_000_000.0)

    async def worker() -> int:
        return 0

    generator = ServerIdGenerator(worker, clock=clock, rng=random.Random(0))
    seen = set()
    waiting = None
    for _ in range(128):
        task = generator.generate()
        try:
            seen.add(await asyncio.wait_for(task, 0.05))
        except TimeoutError:
            waiting = True
            break
    assert waiting  # 128 IDs cannot fit one millisecond: the generator waits for the clock
    assert len(seen) < 128


def test_elb_format() -> None:
    assert elb_format(A) == "0x0123456789abcdef"
    assert elb_format("not base64!") is None
    assert elb_format("") is None


def test_a_pods_id_per_container_port_sidecars_included() -> None:
    pod = _pod(_container("a", 8443, A), _container("web", 80, None),
               init=(dict(_container("b", 9443, B), restartPolicy="Always"),
                     _container("once", 7443, B)))
    assert server_id_for(pod, 8443, ENV) == "0x0123456789abcdef"
    assert server_id_for(pod, 9443, ENV) == "0x00000000000000ff"
    assert server_id_for(pod, 80, ENV) == "0x0123456789abcdef"  # the first ID found
    assert server_id_for(pod, 7443, ENV) == "0x0123456789abcdef"  # an init container that ends
    assert server_id_for(pod, 8443, "ELSE") is None
    assert server_id_for(_pod(_container("a", 8443, A), annotated=False), 8443, ENV) is None
    assert server_id_for(_pod(_container("a", 8443, "%%")), 8443, ENV) is None


def test_the_pod_cache_keeps_what_the_ids_need_and_no_more() -> None:
    pod = _pod(_container("a", 8443, A), _container("web", 80, None))
    pod["metadata"]["labels"] = {"app": "x"}
    kept = PodTrimmer(ENV)(pod)
    assert server_id_for(kept, 8443, ENV) == "0x0123456789abcdef"
    assert kept["spec"]["containers"] == [{"name": "a", "ports": [{"containerPort": 8443}],
                                           "env": [{"name": ENV, "value": A}]}]
    assert "labels" not in kept["metadata"]
    assert PodTrimmer(ENV) == PodTrimmer(ENV)  # one transform to the shared informer
    assert "spec" not in slim_pod(_pod(_container("a", 8443, A), annotated=False))
    # Hostile shapes never raise.
    assert slim_pod({"metadata": {"annotations": {QUIC_ENABLED_CONTAINERS_ANNOTATION: "a"}},
                     "spec": {"containers": "x", "initContainers": [1, None]}})


async def test_injection_into_the_named_containers_only() -> None:
    calls = iter(["ID1", "ID2"])

    async def generate() -> str:
        return next(calls)

    pod = _pod(_container("a", 8443, None), _container("c", 80, None),
               init=(_container("b", None, A),))
    out = await with_server_ids(pod, ENV, generate)
    envs = {c["name"]: c.get("env") for k in ("containers", "initContainers")
            for c in out["spec"][k]}
    assert envs["a"] == [{"name": ENV, "value": "ID1"}]
    assert envs["c"] is None
    assert envs["b"] == pod["spec"]["initContainers"][0]["env"]  # had one: kept
    assert "env" not in pod["spec"]["containers"][0]  # the request's pod is not changed
    unchanged = _pod(_container("z", 80, None))
    assert await with_server_ids(unchanged, ENV, generate) is unchanged
