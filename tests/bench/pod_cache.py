"""The memory the TargetGroupBinding controller's pod cache costs: N pods as the API server sends
them (a Deployment's pods, managedFields already dropped), kept whole or cut down by
`controller.targetgroupbinding.pods.slim_pod` (the informer's transform), a share of them with a
target-health readiness gate.

Usage: python tests/bench/pod_cache.py [--quick] [--n N] [--gated FRACTION]

Each pod is decoded from its own JSON text (so no strings are shared between pods, as from the
wire) and stored in a `runtime.store.Store`, indexes included; memory is tracemalloc's count of
what the store holds afterwards. The last stdout line is one JSON object: full_bytes_per_pod,
slim_bytes_per_pod (the mix), slim_gated_bytes_per_pod, slim_plain_bytes_per_pod, ratio, n,
gated, full_mb_100k, slim_mb_100k (the same per-pod figures for 100,000 pods).
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

from controller.apis import target_health_condition
from controller.targetgroupbinding.pods import GATE_INDEX, gate_index, slim_pod
from runtime.objects import strip_managed_fields
from runtime.store import Store

Obj = dict[str, Any]


def pod_json(i: int, *, gated: bool) -> str:
    """One pod of a typical web Deployment, scheduled and running."""
    name = f"web-7c9d8f6b5-{i:05x}"
    ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    gates = [{"conditionType": target_health_condition("k8s-default-web-0123456789")}] \
        if gated else []
    conditions = [{"type": t, "status": "True", "lastProbeTime": None,
                   "lastTransitionTime": "2024-05-01T10:00:00Z"}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                            "ContainersReady", "PodScheduled")]
    conditions += [{"type": g["conditionType"], "status": "True", "reason": "",
                    "message": "", "lastTransitionTime": "2024-05-01T10:00:20Z"}
                   for g in gates]
    pod: Obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": "web-7c9d8f6b5-", "namespace": f"team-{i % 40}",
            "uid": f"6c1f{i:08x}-4d2a-4b7e-9f3c-1a2b3c4d5e6f",
            "resourceVersion": str(1000000 + i), "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7c9d8f6b5", "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T09:59:00Z",
                            "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7c9d8f6b5", "uid": "3e2d1c0b-aaaa-bbbb-cccc",
                                 "controller": True, "blockOwnerDeletion": True}]},
        "spec": {
            "containers": [{
                "name": "web", "image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/web:1.42",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"SETTING_{k}", "value": f"value-{k}"} for k in range(6)],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                              "limits": {"memory": "512Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                   "periodSeconds": 5},
                "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "readinessGates": gates,
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "web", "serviceAccount": "web",
            "nodeName": f"ip-10-0-{i % 250}-7.us-west-2.compute.internal",
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": f"node.kubernetes.io/{t}", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}
                            for t in ("not-ready", "unreachable")],
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"},
        "status": {
            "phase": "Running", "conditions": conditions, "hostIP": "10.0.12.7",
            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": "2024-05-01T10:00:00Z",
            "qosClass": "Burstable",
            "containerStatuses": [{
                "name": "web", "ready": True, "restartCount": 0, "started": True,
                "state": {"running": {"startedAt": "2024-05-01T10:00:05Z"}},
                "image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/web:1.42",
                "imageID": "123456789012.dkr.ecr.us-west-2.amazonaws.com/web@sha256:"
                           + "ab" * 32,
                "containerID": "containerd://" + f"{i:064x}"}]}}
    return json.dumps(pod)


def stored_bytes(texts: list[str], transform: Callable[[Obj], Obj]) -> int:
    """What a store holding the pods (after `transform`) keeps allocated."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = Store()
    store.add_indexer(GATE_INDEX, gate_index)
    for text in texts:
        store.upsert(transform(json.loads(text)))
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(store.keys()) == len(texts)
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--gated", type=float, default=0.2,
                        help="share of pods with a target-health readiness gate")
    args = parser.parse_args()
    n = args.n or (2_000 if args.quick else 20_000)
    gated_n = int(n * args.gated)
    mixed = [pod_json(i, gated=i < gated_n) for i in range(n)]
    gated = [pod_json(i, gated=True) for i in range(n)]
    plain = [pod_json(i, gated=False) for i in range(n)]
    full = stored_bytes(mixed, strip_managed_fields) / n
    slim = stored_bytes(mixed, slim_pod) / n
    slim_gated = stored_bytes(gated, slim_pod) / n
    slim_plain = stored_bytes(plain, slim_pod) / n
    print(f"{n} pods ({gated_n} with a gate), bytes per pod: whole {full:.0f}, cut down "
          f"{slim:.0f} (with a gate {slim_gated:.0f}, without {slim_plain:.0f}); "
          f"{full / slim:.1f}x less")
    print(json.dumps({"full_bytes_per_pod": round(full), "slim_bytes_per_pod": round(slim),
                      "slim_gated_bytes_per_pod": round(slim_gated),
                      "slim_plain_bytes_per_pod": round(slim_plain),
                      "ratio": round(full / slim, 1), "n": n, "gated": gated_n,
                      "full_mb_100k": round(full * 100_000 / 2**20, 1),
                      "slim_mb_100k": round(slim * 100_000 / 2**20, 1)}))


if __name__ == "__main__":
    main()
