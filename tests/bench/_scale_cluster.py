"""The cluster process of tests/bench/scale.py: the local API server (runtime/envtest) with the
benchmark's cluster written straight into its store, and the load generator that changes it.

Seeding goes through the server's verb layer (`server.api`), not HTTP, so that tens of
thousands of objects take seconds; every change made afterwards is committed the same way and
reaches watchers exactly as an HTTP write would (the store publishes each commit). Running the
generator here keeps its cost out of both the controller's process and the benchmark's.

Usage: python tests/bench/_scale_cluster.py --kubeconfig FILE --crds DIR [sizes]
The first stdout line is the server URL; then each stdin line is a command and each answer one
JSON line:
- `seed`: create the cluster; answers the object counts and the seconds it took;
- `quiet N RATE`: N quiet endpoint events at RATE per second (below), answers what was sent;
- `woken N RATE`: N woken endpoint events (below) at RATE per second;
- `unused N RATE`: N readiness flips in slices of Services no load balancer uses (a few
  endpoints each) at RATE per second;
- `touch RATE`: one quiet endpoint event for every slice of the load-balanced Services;
- `churn SECONDS RATE`: mixed churn for SECONDS at RATE changes per second, answers the
  changes made by kind;
- `ready`: the ready endpoints of each load-balanced Service now, by Service name (what its
  binding must have registered once the controller caught up);
- `stats`: this process's cpu_s and rss_mib.

A *quiet endpoint event* is one EndpointSlice update of a load-balanced Service that leaves its
target set unchanged: a pod that never became ready appears in, or leaves, the slice (as during
a rollout or a crash loop). It changes no endpoint that serves, so it wakes no binding (the
slice predicate, controller/targetgroupbinding/watches.py): the controller's CPU per event is
watch decoding, the cache and the handlers. A *woken endpoint event* (`woken N RATE`) changes
the order of a slice's ready endpoints, which the predicate does not look behind: it wakes the
binding, whose reconcile computes the same targets, finds its checkpoint unchanged and makes
no AWS call, so its CPU is the whole event path, queue, target computation and checkpoint
included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.envtest import EnvTestServer
from runtime.envtest.registry import ResourceType

LB_NAMESPACE = "lb"
APP_NAMESPACES = tuple(f"apps-{i}" for i in range(10))
NLB_CLASS = "service.k8s.aws/nlb"
TARGET_TYPE = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
# The NLBs carry no security group, so their bindings open no rules on the pods' groups: the
# cluster as the performance figures were first measured, and no 50,000 pod interfaces for the
# stand-in VPC to hold (moto scans them all for every lookup, which would make convergence a
# measure of moto). The networking step's cost is measured by tests/bench/restart.py.
DISABLE_NLB_SG = "service.beta.kubernetes.io/aws-load-balancer-disable-nlb-sg"
LB_ANNOTATIONS = {TARGET_TYPE: "ip", DISABLE_NLB_SG: "true"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SLICE_SIZE = 100  # endpoints per EndpointSlice, as the EndpointSlice controller cuts them
ZONES = ("us-west-2a", "us-west-2b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    lb_services: int
    endpoints: int  # ready endpoints per load-balanced Service
    pods: int
    configmaps: int
    secrets: int
    nodes: int
    other_services: int


def lb_service_name(i: int) -> str:
    return f"nlb-{i:03d}"


def _ip(n: int) -> str:
    """The n-th pod IP, inside the seeded VPC (10.0.0.0/16), above its first subnets."""
    n += 4 * 256
    return f"10.0.{n // 256}.{n % 256}"


def _stamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


def _last_applied(obj: dict[str, Any]) -> str:
    """What `kubectl apply` leaves on an object: the object it applied, as JSON."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


# ---- objects ---------------------------------------------------------------------------------


def node(i: int) -> dict[str, Any]:
    name = f"ip-10-0-{i // 250}-{i % 250}.us-west-2.compute.internal"
    zone = ZONES[i % 2]
    return {
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.large",
            "topology.kubernetes.io/region": "us-west-2", "topology.kubernetes.io/zone": zone,
            "eks.amazonaws.com/nodegroup": "default", "eks.amazonaws.com/capacityType":
                "ON_DEMAND"}},
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}", "podCIDR": f"10.1.{i % 256}.0/24"},
        "status": {
            "capacity": {"cpu": "2", "memory": "7934464Ki", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7244288Ki", "pods": "29"},
            "conditions": [{"type": t, "status": "True" if t == "Ready" else "False",
                            "lastHeartbeatTime": _stamp(0), "lastTransitionTime": _stamp(0),
                            "reason": f"Kubelet{t}", "message": f"kubelet {t}"}
                           for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
            "addresses": [{"type": "InternalIP", "address": f"10.0.200.{i % 250}"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"kubeletVersion": "v1.31.2", "containerRuntimeVersion":
                         "containerd://1.7.22", "osImage": "Amazon Linux 2023",
                         "kernelVersion": "6.1.112", "architecture": "amd64",
                         "operatingSystem": "linux", "machineID": f"{i:032x}",
                         "systemUUID": f"ec2{i:029x}", "bootID": f"{i:032x}"},
            "images": [{"names": [f"602401143452.dkr.ecr.us-west-2.amazonaws.com/image-{k}"
                                  f"@sha256:{k:064x}",
                                  f"602401143452.dkr.ecr.us-west-2.amazonaws.com/image-{k}:v1"],
                        "sizeBytes": 10_000_000 + k} for k in range(20)]}}


def pod(name: str, namespace: str, ip: str, node_name: str, app: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": app, "pod-template-hash": "5d8f9c7b6"},
                     "annotations": {"kubernetes.io/psp": "eks.privileged"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": f"{app}-5d8f9c7b6", "uid": f"rs-{app}",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {
            "containers": [{
                "name": "app", "image": f"registry.example.com/{app}:1.2.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"SETTING_{k}", "value": f"value-{k}"} for k in range(6)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080},
                                   "periodSeconds": 5},
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "nodeName": node_name, "serviceAccountName": "default",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "10.0.200.1",
            "startTime": _stamp(0),
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": _stamp(0)}
                           for t in ("Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0,
                                   "image": f"registry.example.com/{app}:1.2.3",
                                   "imageID": f"registry.example.com/{app}@sha256:{0:064x}",
                                   "containerID": f"containerd://{0:064x}",
                                   "state": {"running": {"startedAt": _stamp(0)}}}]}}


def endpoint(ip: str, pod_name: str, namespace: str, node_name: str, *, ready: bool = True
             ) -> dict[str, Any]:
    return {"addresses": [ip],
            "conditions": {"ready": ready, "serving": ready, "terminating": False},
            "nodeName": node_name, "zone": ZONES[int(ip.rsplit(".", 1)[1]) % 2],
            "targetRef": {"kind": "Pod", "namespace": namespace, "name": pod_name,
                          "uid": f"uid-{namespace}-{pod_name}"}}


def endpoint_slice(service: str, uid: str, namespace: str, index: int,
                   endpoints: list[dict[str, Any]], port_name: str = "http") -> dict[str, Any]:
    return {"metadata": {"name": f"{service}-{index:02d}", "namespace": namespace,
                         "labels": {"kubernetes.io/service-name": service,
                                    "endpointslice.kubernetes.io/managed-by":
                                        "endpointslice-controller.k8s.io"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                              "name": service, "uid": uid,
                                              "controller": True}]},
            "addressType": "IPv4",
            "ports": [{"name": port_name, "port": 8080, "protocol": "TCP"}],
            "endpoints": endpoints}


def lb_service(i: int) -> dict[str, Any]:
    name = lb_service_name(i)
    applied: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": LB_NAMESPACE,
                     "annotations": dict(LB_ANNOTATIONS)},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": NLB_CLASS,
                 "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    meta = {**applied["metadata"], "annotations": {**LB_ANNOTATIONS,
                                                   LAST_APPLIED: _last_applied(applied)}}
    return {**applied, "metadata": meta}


def other_service(i: int) -> dict[str, Any]:
    namespace = APP_NAMESPACES[i % len(APP_NAMESPACES)]
    name = f"svc-{i:05d}"
    applied: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    meta = {**applied["metadata"], "annotations": {LAST_APPLIED: _last_applied(applied)}}
    return {**applied, "metadata": meta}


def configmap(i: int) -> dict[str, Any]:
    namespace = APP_NAMESPACES[i % len(APP_NAMESPACES)]
    applied: dict[str, Any] = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": f"config-{i:05d}", "namespace": namespace},
        "data": {"app.properties": "\n".join(f"key.{k}=value-{i}-{k}" for k in range(30))}}
    meta = {**applied["metadata"], "annotations": {LAST_APPLIED: _last_applied(applied)}}
    return {**applied, "metadata": meta}


def secret(i: int, generation: int = 0) -> dict[str, Any]:
    namespace = APP_NAMESPACES[i % len(APP_NAMESPACES)]
    blob = os.urandom(900).hex()[:1200]
    return {"metadata": {"name": f"secret-{i:05d}", "namespace": namespace,
                         "labels": {"app": f"app-{i % 100}"},
                         "annotations": {"bench/generation": str(generation)}},
            "type": "Opaque", "stringData": {"password": blob, "user": f"user-{i}"}}


# ---- the cluster ----------------------------------------------------------------------------


class Cluster:
    def __init__(self, server: EnvTestServer, shape: Shape, rng: random.Random) -> None:
        self.server = server
        self.api = server.api
        self.shape = shape
        self.rng = rng
        self.nodes: list[str] = []
        # Slices of load-balanced Services, and of the others: (namespace, name).
        self.lb_slices: list[tuple[str, str]] = []
        self.other_slices: list[tuple[str, str]] = []
        self.pods: list[tuple[str, str]] = []
        self._serial = 0

    def rt(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.api.registry.lookup(group, version, plural)
        if rt is None:
            raise RuntimeError(f"the API server does not serve {plural}")
        return rt

    def create(self, group: str, version: str, plural: str, obj: dict[str, Any]) -> str:
        """Create `obj` (and then its status, which a create ignores); returns its uid."""
        rt = self.rt(group, version, plural)
        namespace = obj["metadata"].get("namespace", "")
        status = obj.pop("status", None) if rt.has_status else None
        meta = self.api.create(rt, namespace, obj).obj["metadata"]
        if status is not None:
            self.api.update(rt, namespace, meta["name"], {
                "metadata": {"name": meta["name"], "resourceVersion": meta["resourceVersion"]},
                "status": status}, subresource="status")
        return str(meta["uid"])

    def seed(self) -> dict[str, Any]:
        started = time.process_time()
        wall = time.perf_counter()
        shape = self.shape
        for name in (LB_NAMESPACE, *APP_NAMESPACES):
            self.create("", "v1", "namespaces", {"metadata": {"name": name}})
        for i in range(shape.nodes):
            obj = node(i)
            self.nodes.append(obj["metadata"]["name"])
            self.create("", "v1", "nodes", obj)
        pods_left = shape.pods
        for i in range(shape.lb_services):
            name = lb_service_name(i)
            uid = self.create("", "v1", "services", lb_service(i))
            eps = []
            for k in range(shape.endpoints):
                pod_name = f"{name}-{k:05d}"
                ip = _ip(i * shape.endpoints + k)
                node_name = self.nodes[(i + k) % len(self.nodes)]
                eps.append(endpoint(ip, pod_name, LB_NAMESPACE, node_name))
                if pods_left > 0:  # the first Services' pods exist as Pods too
                    self.create("", "v1", "pods", pod(pod_name, LB_NAMESPACE, ip, node_name,
                                                      name))
                    self.pods.append((LB_NAMESPACE, pod_name))
                    pods_left -= 1
            for s in range(0, len(eps), SLICE_SIZE):
                obj = endpoint_slice(name, uid, LB_NAMESPACE, s // SLICE_SIZE,
                                     eps[s:s + SLICE_SIZE])
                self.create("discovery.k8s.io", "v1", "endpointslices", obj)
                self.lb_slices.append((LB_NAMESPACE, obj["metadata"]["name"]))
        for i in range(pods_left):  # the rest of the cluster's pods back no load balancer
            namespace = APP_NAMESPACES[i % len(APP_NAMESPACES)]
            pod_name = f"worker-{i:05d}"
            self.create("", "v1", "pods", pod(pod_name, namespace, _ip(60_000 + i % 5_000),
                                              self.nodes[i % len(self.nodes)], "worker"))
            self.pods.append((namespace, pod_name))
        for i in range(shape.other_services):
            obj = other_service(i)
            uid = self.create("", "v1", "services", obj)
            meta = obj["metadata"]
            eps = [endpoint(_ip(55_000 + (3 * i + k) % 5_000), f"{meta['name']}-{k}",
                            meta["namespace"], self.nodes[(i + k) % len(self.nodes)])
                   for k in range(3)]
            slice_ = endpoint_slice(meta["name"], uid, meta["namespace"], 0, eps)
            self.create("discovery.k8s.io", "v1", "endpointslices", slice_)
            self.other_slices.append((meta["namespace"], slice_["metadata"]["name"]))
        for i in range(shape.configmaps):
            self.create("", "v1", "configmaps", configmap(i))
        for i in range(shape.secrets):
            self.create("", "v1", "secrets", secret(i))
        return {"objects": {"nodes": shape.nodes, "pods": len(self.pods),
                            "lb_services": shape.lb_services,
                            "lb_slices": len(self.lb_slices),
                            "other_services": shape.other_services,
                            "configmaps": shape.configmaps, "secrets": shape.secrets},
                "seed_s": round(time.perf_counter() - wall, 2),
                "seed_cpu_s": round(time.process_time() - started, 2)}

    # ---- changes ----------------------------------------------------------------------------

    def _current(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """A private copy of the stored object (its stored JSON, decoded)."""
        obj: dict[str, Any] = json.loads(self.api.get(rt, namespace, name).raw)
        return obj

    def _replace(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Store `obj` (a private copy from `_current`) as the next version. The request-body
        decoding of `api.update` is skipped: it deep-copies the body, which would make the
        generator, not the server's real work, the cost of a change."""
        meta = obj["metadata"]
        current = self.api.get(rt, meta.get("namespace", ""), meta["name"])
        self.api.commit_replace(rt, current, self.api.prepare_replace(rt, current, obj,
                                                                      subresource=None),
                                subresource=None)

    def _annotate(self, rt: ResourceType, namespace: str, name: str) -> None:
        self._serial += 1
        self.api.patch(rt, namespace, name, "application/merge-patch+json",
                       {"metadata": {"annotations": {"bench/churn": str(self._serial)}}})

    def quiet_event(self, which: tuple[str, str] | None = None) -> str:
        """A not-ready pod appears in, or leaves, one slice of a load-balanced Service."""
        rt = self.rt("discovery.k8s.io", "v1", "endpointslices")
        namespace, name = which or self.rng.choice(self.lb_slices)
        obj = self._current(rt, namespace, name)
        eps = obj["endpoints"]
        if eps and eps[-1]["conditions"]["ready"] is False:
            eps.pop()
        else:
            self._serial += 1
            eps.append(endpoint(_ip(62_000 + self._serial % 3_000), f"starting-{self._serial}",
                                namespace, self.rng.choice(self.nodes), ready=False))
        self._replace(rt, obj)
        return "quiet"

    def woken_event(self) -> str:
        """One slice of a load-balanced Service lists its endpoints in another order."""
        rt = self.rt("discovery.k8s.io", "v1", "endpointslices")
        namespace, name = self.rng.choice(self.lb_slices)
        obj = self._current(rt, namespace, name)
        eps = obj["endpoints"]
        if len(eps) > 1:
            eps.append(eps.pop(0))
        self._replace(rt, obj)
        return "woken"

    def unused_event(self) -> str:
        """A readiness flip in a slice of a Service no load balancer uses."""
        self.ready_flip(self.other_slices)
        return "unused"

    def touch_step(self) -> Callable[[], str]:
        """A step making a quiet event in each load-balanced slice in turn."""
        every = iter(list(self.lb_slices))
        return lambda: self.quiet_event(next(every))

    def ready_flip(self, slices: list[tuple[str, str]]) -> None:
        """One endpoint's readiness flips (a readiness probe failing, or recovering)."""
        rt = self.rt("discovery.k8s.io", "v1", "endpointslices")
        namespace, name = self.rng.choice(slices)
        obj = self._current(rt, namespace, name)
        eps = [e for e in obj["endpoints"] if not e["targetRef"]["name"].startswith("starting-")]
        if not eps:
            return
        conditions = self.rng.choice(eps)["conditions"]
        conditions["ready"] = conditions["serving"] = not conditions["ready"]
        self._replace(rt, obj)

    def annotate_random(self) -> str:
        """An annotation changes on a Pod, ConfigMap, Service or Secret (a deploy tool's
        stamp): nothing any controller reads."""
        kind = self.rng.choice(("pods", "configmaps", "services", "secrets"))
        if kind == "pods":
            namespace, name = self.rng.choice(self.pods)
        elif kind == "configmaps":
            i = self.rng.randrange(self.shape.configmaps)
            namespace, name = APP_NAMESPACES[i % len(APP_NAMESPACES)], f"config-{i:05d}"
        elif kind == "services":
            if self.rng.random() < 0.5:
                namespace, name = LB_NAMESPACE, lb_service_name(
                    self.rng.randrange(self.shape.lb_services))
            else:
                i = self.rng.randrange(self.shape.other_services)
                namespace, name = APP_NAMESPACES[i % len(APP_NAMESPACES)], f"svc-{i:05d}"
        else:
            i = self.rng.randrange(self.shape.secrets)
            namespace, name = APP_NAMESPACES[i % len(APP_NAMESPACES)], f"secret-{i:05d}"
        self._annotate(self.rt("", "v1", kind), namespace, name)
        return f"annotate-{kind}"

    def service_edit(self) -> None:
        """A Service no load balancer uses gains or loses a port."""
        rt = self.rt("", "v1", "services")
        i = self.rng.randrange(self.shape.other_services)
        obj = self._current(rt, APP_NAMESPACES[i % len(APP_NAMESPACES)], f"svc-{i:05d}")
        ports = obj["spec"]["ports"]
        if len(ports) > 1:
            ports.pop()
        else:
            ports.append({"name": "metrics", "port": 9090, "targetPort": 9090,
                          "protocol": "TCP"})
        self._replace(rt, obj)

    def secret_rotation(self) -> None:
        """A Secret's data changes, or a Secret is replaced (deleted and created again)."""
        rt = self.rt("", "v1", "secrets")
        i = self.rng.randrange(self.shape.secrets)
        namespace, name = APP_NAMESPACES[i % len(APP_NAMESPACES)], f"secret-{i:05d}"
        self._serial += 1
        if self.rng.random() < 0.5:
            self.api.patch(rt, namespace, name, "application/merge-patch+json",
                           secret(i, self._serial) | {"metadata": {"annotations": {
                               "bench/generation": str(self._serial)}}})
        else:
            self.api.delete(rt, namespace, name)
            self.api.create(rt, namespace, secret(i, self._serial))

    def heartbeat(self) -> None:
        """A node's kubelet renews its conditions' heartbeat times."""
        rt = self.rt("", "v1", "nodes")
        obj = self._current(rt, "", self.rng.choice(self.nodes))
        for condition in obj["status"]["conditions"]:
            condition["lastHeartbeatTime"] = _stamp(time.time())
        self.api.update(rt, "", obj["metadata"]["name"], obj, subresource="status")

    def ready_endpoints(self) -> dict[str, int]:
        rt = self.rt("discovery.k8s.io", "v1", "endpointslices")
        counts = {lb_service_name(i): 0 for i in range(self.shape.lb_services)}
        for namespace, name in self.lb_slices:
            obj = self.api.get(rt, namespace, name).obj
            service = obj["metadata"]["labels"]["kubernetes.io/service-name"]
            counts[service] += sum(1 for e in obj["endpoints"] if e["conditions"]["ready"])
        return counts

    def churn_step(self) -> str:
        roll = self.rng.random()
        if roll < 0.40:
            return self.annotate_random()
        if roll < 0.55:
            self.ready_flip(self.lb_slices)
            return "lb-endpoint-flip"
        if roll < 0.65:
            self.ready_flip(self.other_slices)
            return "other-endpoint-flip"
        if roll < 0.75:
            self.service_edit()
            return "service-edit"
        if roll < 0.85:
            self.secret_rotation()
            return "secret-rotation"
        self.heartbeat()
        return "node-heartbeat"


async def paced(rate: float, *, count: int | None = None, seconds: float | None = None,
                step: Callable[[], str]) -> dict[str, Any]:
    """Run `step` at `rate` per second (in small bursts, one event-loop turn each, so that
    the server keeps answering) for `count` steps or `seconds`."""
    kinds: Counter[str] = Counter()
    burst = max(1, int(rate / 100))  # at most 10 ms worth of changes per loop turn
    start = time.perf_counter()
    done = 0
    while True:
        elapsed = time.perf_counter() - start
        if (count is not None and done >= count) or (seconds is not None
                                                     and elapsed >= seconds):
            break
        due = min(int(elapsed * rate) + 1, done + burst)
        if count is not None:
            due = min(due, count)
        while done < due:
            kinds[step()] += 1
            done += 1
        await asyncio.sleep(max(0.0, (done / rate) - (time.perf_counter() - start)))
    elapsed = time.perf_counter() - start
    # Below the rate asked for when this process could not keep up (a loaded machine).
    return {"sent": done, "seconds": round(elapsed, 2), "rate": round(done / elapsed, 1),
            "kinds": dict(sorted(kinds.items()))}


def _stats() -> dict[str, Any]:
    times = os.times()
    rss = 0.0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
    return {"cpu_s": round(times.user + times.system, 3), "rss_mib": round(rss, 1)}


async def serve(args: argparse.Namespace) -> None:
    shape = Shape(lb_services=args.lb_services, endpoints=args.endpoints, pods=args.pods,
                  configmaps=args.configmaps, secrets=args.secrets, nodes=args.nodes,
                  other_services=args.other_services)
    server = EnvTestServer(port=0, crds=[args.crds], bookmark_interval=5.0,
                           history_size=args.history_size)
    async with server:
        server.write_kubeconfig(args.kubeconfig)
        cluster = Cluster(server, shape, random.Random(args.seed))
        print(server.url, flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            word, *rest = line.decode().split()
            if word == "seed":
                answer = cluster.seed()
            elif word == "quiet":
                answer = await paced(float(rest[1]), count=int(rest[0]),
                                     step=cluster.quiet_event)
            elif word == "woken":
                answer = await paced(float(rest[1]), count=int(rest[0]),
                                     step=cluster.woken_event)
            elif word == "unused":
                answer = await paced(float(rest[1]), count=int(rest[0]),
                                     step=cluster.unused_event)
            elif word == "touch":
                answer = await paced(float(rest[0]), count=len(cluster.lb_slices),
                                     step=cluster.touch_step())
            elif word == "churn":
                answer = await paced(float(rest[1]), seconds=float(rest[0]),
                                     step=cluster.churn_step)
            elif word == "ready":
                answer = cluster.ready_endpoints()
            elif word == "stats":
                answer = _stats()
            else:
                answer = {"error": f"unknown command {word!r}"}
            print(json.dumps(answer), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--crds", type=Path, required=True)
    parser.add_argument("--history-size", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    for name in ("lb-services", "endpoints", "pods", "configmaps", "secrets", "nodes",
                 "other-services"):
        parser.add_argument(f"--{name}", type=int, required=True)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
