"""The demo's rolling update with pod readiness gates: a namespace opted in to injection, an NLB
Service in front of a played Deployment (controller/demo/deployment.py) whose pods a played
kubelet runs (kubelet.py), and a rollout to a new revision narrated from what AWS reported
(the proxy's target-health model): each new pod turns Ready only once its target is healthy,
so the load balancer never has fewer healthy targets than the Deployment's replicas, and every
old pod keeps serving until its target has drained."""

from __future__ import annotations

import asyncio
import time

from controller.apis import (
    READINESS_GATE_INJECT_LABEL,
    READINESS_GATE_INJECT_VALUE,
    SERVICE_STACK_NAME_LABEL,
    TARGETGROUPBINDINGS,
)
from controller.demo.deployment import PlayedDeployment, RollingUpdate
from controller.demo.display import Display
from controller.demo.kubelet import PlayedKubelet
from controller.demo.standins import DRAINING_SECONDS, StandIns
from runtime.client import KubeClient
from runtime.resources import NAMESPACES, SERVICES

NAMESPACE = "rollout"
APP = "shop"
REPLICAS = 2
# Longer than the target group's deregistration delay: the pod serves until its target drained.
GRACE = int(DRAINING_SECONDS) + 2
WAIT = 90.0


async def _binding_arn(client: KubeClient) -> str:
    deadline = time.monotonic() + WAIT
    while True:
        listed = await client.list(TARGETGROUPBINDINGS, NAMESPACE,
                                   label_selector=f"{SERVICE_STACK_NAME_LABEL}={APP}")
        for binding in listed.get("items") or []:
            arn = (binding.get("spec") or {}).get("targetGroupARN")
            if arn:
                return str(arn)
        if time.monotonic() > deadline:
            raise RuntimeError(f"no TargetGroupBinding for service {NAMESPACE}/{APP} within "
                               f"{WAIT:.0f} s")
        await asyncio.sleep(0.1)


def _fewest(steps: list[tuple[float, int]], start: float, end: float) -> int:
    before = [count for at, count in steps if at <= start]
    return min([before[-1] if before else 0] + [c for at, c in steps if start < at <= end])


def _timeline(steps: list[tuple[float, int]], start: float, end: float) -> str:
    shown = [(max(at, start), count) for at, count in steps if at <= end]
    kept = [s for i, s in enumerate(shown) if i + 1 == len(shown) or shown[i + 1][0] > start]
    return ", ".join(f"{at - start:+.1f}s {count}" for at, count in kept)


async def rollout_with_gates(local: StandIns, client: KubeClient, display: Display) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE, "labels": {
        READINESS_GATE_INJECT_LABEL: READINESS_GATE_INJECT_VALUE}}})
    await client.create(SERVICES, {
        "metadata": {"name": APP, "annotations": {
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": "service.k8s.aws/nlb",
                 "selector": {"app": APP},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}, NAMESPACE)
    display.step(f"namespace {NAMESPACE} labelled {READINESS_GATE_INJECT_LABEL}="
                 f"{READINESS_GATE_INJECT_VALUE}; service/{APP} asks for an NLB")
    arn = await _binding_arn(client)
    health = local.proxy.target_health
    async def network(ip: str) -> None:
        # Imported here as in the workload: the stand-ins are checked to be installed first.
        from controller.standins import create_pod_enis

        await asyncio.to_thread(create_pod_enis, local.moto_url, local.seed, [ip])

    async with PlayedKubelet(client, NAMESPACE, subnet="10.0.3", network=network) as kubelet:
        shop = PlayedDeployment(client, NAMESPACE, APP, REPLICAS,
                                strategy=RollingUpdate(max_surge=1, max_unavailable=0),
                                termination_grace=GRACE)
        await shop.rollout("v1", timeout=WAIT)
        gates = sorted({g["conditionType"] for p in kubelet.pods()
                        for g in (p.get("spec") or {}).get("readinessGates") or []})
        display.step(f"deployment/{APP} v1: {REPLICAS} pods, given readiness gate(s) "
                     f"{', '.join(gates) or 'none'} by the webhook; Ready once healthy")
        start = time.monotonic()
        display.step(f"rolling deployment/{APP} to v2 (maxSurge 1, maxUnavailable 0; health "
                     f"checks pass after a while, draining lasts {DRAINING_SECONDS:g} s, pods "
                     f"keep serving {GRACE} s after deletion)")
        await shop.rollout("v2", timeout=WAIT)
        deadline = time.monotonic() + WAIT
        while not all(any(r.kind == "removed" and r.pod == e.pod for r in kubelet.events)
                      for e in kubelet.events if e.kind == "terminating"):
            if time.monotonic() > deadline:
                raise RuntimeError("the old pods were not removed in time")
            await asyncio.sleep(0.1)
        end = time.monotonic()
    steps = health.healthy_timeline(arn)
    drained = {target[0]: at for target, _, at in health.drained(arn)}
    removed = [e for e in kubelet.events if e.kind == "removed" and e.time >= start]
    early = [e.pod for e in removed if drained.get(e.ip, float("inf")) > e.time]
    display.step(f"healthy targets of service/{APP} during the rollout: "
                 f"{_timeline(steps, start, end)} (never fewer than "
                 f"{_fewest(steps, start, end)})")
    display.step(f"{len(removed)} old pods removed, "
                 + ("each after its target had drained" if not early else
                    f"{', '.join(early)} before its target had drained"))


__all__ = ["rollout_with_gates"]
