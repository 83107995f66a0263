"""Benchmark of multi-cluster target tracking: the reconcile latency of one TargetGroupBinding
with 150 targets under 10% endpoint churn per round, with `multiClusterTargetGroup` off and on in
the same run, and the tracking ConfigMap writes it costs.

Usage: python tests/bench/multicluster.py [--quick] [--rounds N] [--targets N] [--churn F]

Everything is local: the local API server (with the CRDs) and a moto server on loopback. The
reconciler runs on a Manager's informers and is called directly, so what is timed is one
reconcile (cache reads, DescribeTargetHealth, Register/DeregisterTargets, the ConfigMap write,
checkpoint and status patches), not queueing. Checkpoints are off, so a no-op reconcile still
diffs against AWS and reaches the tracker: it must write nothing. The client-side AWS throttle
is off: at its defaults (Register/Deregister 4/s) its waits, not the reconcile, would be
measured after a few rounds. Rounds alternate between the two bindings so drift in the
machine's speed hits both alike. Upstream's figure for the
tracking overhead: ~25 ms, ~5%.

The last stdout line is one JSON object: reconcile_ms_off, reconcile_ms_on (medians of changed
reconciles), overhead_pct, configmap_writes_per_changed_reconcile,
configmap_writes_per_noop_reconcile (must be 0), noop_ms_off, noop_ms_on, rounds, targets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, AWSSettings
from controller.aws.throttle import ThrottleConfig
from controller.reconcilers import LaneSettings
from controller.settings import ClusterScope
from controller.standins import MotoStandIn
from controller.targetgroupbinding import (
    Settings,
    build_reconciler,
)
from controller.targetgroupbinding.reconciler import TargetGroupBindingReconciler
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.logging import configure_logging
from runtime.manager import Manager
from runtime.reconcile import Request
from runtime.resources import ENDPOINTSLICES, SERVICES
from runtime.store import Store

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"
NS = "default"
PORT = 8080


@dataclass
class Binding:
    name: str
    octet: int  # second octet of its pods' addresses
    multi_cluster: bool
    rng: random.Random
    ips: list[str] = field(default_factory=list)
    changed_ms: list[float] = field(default_factory=list)
    noop_ms: list[float] = field(default_factory=list)
    changed_writes: int = 0
    noop_writes: int = 0
    _next: int = 0

    def new_ip(self) -> str:
        self._next += 1
        return f"10.{self.octet}.{self._next // 250}.{self._next % 250 + 1}"

    def churn(self, fraction: float) -> None:
        replaced = max(1, round(len(self.ips) * fraction))
        for index in self.rng.sample(range(len(self.ips)), replaced):
            self.ips[index] = self.new_ip()

    def slice_body(self) -> dict[str, Any]:
        return {
            "metadata": {"name": f"{self.name}-abc", "namespace": NS,
                         "labels": {"kubernetes.io/service-name": self.name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": PORT, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"pod-{ip}", "uid": f"u-{ip}"}}
                          for ip in self.ips],
        }


def _configmap_writes(server: EnvTestServer) -> int:
    return sum(1 for r in server.request_log
               if r.verb in ("create", "update", "patch") and "/configmaps" in r.path)


async def _caught_up(store: Store, key: str, resource_version: str) -> None:
    while True:
        obj = store.get(key)
        if obj is not None and obj["metadata"].get("resourceVersion") == resource_version:
            return
        await asyncio.sleep(0.002)


async def _leading(manager: Manager) -> None:
    while True:
        if manager.leading:
            return
        await asyncio.sleep(0.01)


async def _fresh_binding(client: KubeClient, store: Store, name: str) -> None:
    current = await client.get(TARGETGROUPBINDINGS, name, NS)
    await _caught_up(store, f"{NS}/{name}", str(current["metadata"]["resourceVersion"]))


async def _timed(reconciler: TargetGroupBindingReconciler, name: str) -> float:
    started = time.perf_counter()
    await reconciler.reconcile(Request(NS, name))
    return (time.perf_counter() - started) * 1000


async def run(*, rounds: int, targets: int, churn: float) -> dict[str, Any]:
    with MotoStandIn() as moto, tempfile.TemporaryDirectory() as tmp:
        seed = moto.seed()
        aws = AWSSettings(region=seed.region, endpoint_url=moto.url, access_key="testing",
                          secret_key="testing", throttle=ThrottleConfig(rules=()))
        async with EnvTestServer(crds=[CRDS]) as server, \
                AWSClientPool(aws, registry=CollectorRegistry()) as pool:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with await KubeClient.from_kubeconfig(kubeconfig) as client:
                manager = Manager(client, registry=CollectorRegistry())
                reconciler = build_reconciler(
                    manager, pool=pool, settings=Settings(
                        cluster=ClusterScope(name=seed.cluster_name, vpc_id=seed.vpc_id),
                        lanes=LaneSettings(checkpoints=False)))
                bindings_store = manager.informer(TARGETGROUPBINDINGS).store
                slices_store = manager.informer(ENDPOINTSLICES).store
                runner = asyncio.create_task(manager.run())
                try:
                    await _leading(manager)
                    return await _measure(server, client, pool, reconciler, bindings_store,
                                          slices_store, seed.vpc_id, rounds=rounds,
                                          targets=targets, churn=churn)
                finally:
                    manager.stop()
                    await runner


async def _measure(server: EnvTestServer, client: KubeClient, pool: AWSClientPool,
                   reconciler: TargetGroupBindingReconciler, bindings_store: Store,
                   slices_store: Store, vpc_id: str, *, rounds: int, targets: int,
                   churn: float) -> dict[str, Any]:
    rng = random.Random(3853)
    bindings = [Binding("off", 1, False, rng), Binding("on", 2, True, rng)]
    for b in bindings:
        resp = await pool.call("elbv2", "CreateTargetGroup", Name=f"bench-{b.name}",
                               Protocol="HTTP", Port=80, VpcId=vpc_id, TargetType="ip")
        arn = resp["TargetGroups"][0]["TargetGroupArn"]
        b.ips = [b.new_ip() for _ in range(targets)]
        await client.create(SERVICES, {"metadata": {"name": b.name}, "spec": {
            "type": "NodePort", "selector": {"app": b.name},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}, NS)
        created = await client.create(ENDPOINTSLICES, b.slice_body(), NS)
        spec: dict[str, Any] = {"targetGroupARN": arn, "targetType": "ip",
                                "serviceRef": {"name": b.name, "port": 80}}
        if b.multi_cluster:
            spec["multiClusterTargetGroup"] = True
        await client.create(TARGETGROUPBINDINGS, {
            "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": {"name": b.name}, "spec": spec}, NS)
        await _caught_up(slices_store, f"{NS}/{b.name}-abc",
                         str(created["metadata"]["resourceVersion"]))
        for _ in range(2):  # finalizer, first registration, tracking ConfigMap: not timed
            await _fresh_binding(client, bindings_store, b.name)
            await reconciler.reconcile(Request(NS, b.name))

    for _ in range(rounds):
        for b in bindings:
            b.churn(churn)
            current = await client.get(ENDPOINTSLICES, f"{b.name}-abc", NS)
            body = b.slice_body()
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            updated = await client.update(ENDPOINTSLICES, body)
            await _caught_up(slices_store, f"{NS}/{b.name}-abc",
                             str(updated["metadata"]["resourceVersion"]))
            await _fresh_binding(client, bindings_store, b.name)
            before = _configmap_writes(server)
            b.changed_ms.append(await _timed(reconciler, b.name))
            b.changed_writes += _configmap_writes(server) - before

            await _fresh_binding(client, bindings_store, b.name)
            before = _configmap_writes(server)
            b.noop_ms.append(await _timed(reconciler, b.name))
            b.noop_writes += _configmap_writes(server) - before

    off, on = bindings
    off_ms, on_ms = statistics.median(off.changed_ms), statistics.median(on.changed_ms)
    return {
        "rounds": rounds,
        "targets": targets,
        "churn": churn,
        "noop_ms_off": round(statistics.median(off.noop_ms), 2),
        "noop_ms_on": round(statistics.median(on.noop_ms), 2),
        "reconcile_ms_off": round(off_ms, 2),
        "reconcile_ms_on": round(on_ms, 2),
        "overhead_pct": round((on_ms - off_ms) / off_ms * 100, 1),
        "configmap_writes_per_changed_reconcile": round(on.changed_writes / rounds, 2),
        "configmap_writes_per_noop_reconcile": round((on.noop_writes + off.noop_writes)
                                                     / (2 * rounds), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds (seconds)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per binding")
    parser.add_argument("--targets", type=int, default=150, help="targets per binding")
    parser.add_argument("--churn", type=float, default=0.1,
                        help="fraction of endpoints replaced per round")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (5 if args.quick else 40)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.targets < 1:
        parser.error("--targets must be at least 1")
    if not 0 < args.churn <= 1:
        parser.error("--churn must be within (0, 1]")
    configure_logging(level="warning")  # stdout ends with the JSON line alone
    result = asyncio.run(run(rounds=rounds, targets=args.targets, churn=args.churn))
    print(json.dumps(result))
    return 0 if result["configmap_writes_per_noop_reconcile"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
