"""A rolling update of a Deployment behind an Ingress (ALB) and an NLB Service, with target health
as AWS reports it (`initial` for the health-check delay, `draining` for the deregistration
delay). runtime/envtest runs no Deployment controller and no kubelet, so the test plays both,
as the demo does (controller/demo/deployment.py, kubelet.py): maxSurge 1, maxUnavailable 0, a
pod Ready only when all its readiness gates are True, terminating pods kept for their grace
period.

The same Deployment rolls twice: without readiness gates, where a new pod is Ready for
Kubernetes at once and the old ones go while the new targets are still `initial` (fewer healthy
targets than maxUnavailable 0 promises, usually none: users would see 502/504s); then with the
namespace opted in, where each new pod waits for its target to be healthy in both target groups
before an old one goes, so there are never fewer healthy targets than replicas. In both, no pod
is removed before its target finished draining. The timelines are printed (`pytest -s`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from controller.apis import (
    INGRESS_STACK_NAME_LABEL,
    SERVICE_STACK_NAME_LABEL,
    TARGETGROUPBINDINGS,
)
from controller.demo.deployment import PlayedDeployment, RollingUpdate
from controller.demo.kubelet import PlayedKubelet, PodEvent
from controller.standins import AWSFaultProxy, TargetHealth, TargetHealthSettings
from runtime.objects import labels_of
from runtime.resources import SERVICES
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually
from tests.support.webhooks import WebhookHarness

HEALTH_CHECKS = 0.8  # s a new target stays `initial`
DRAINING = 0.3  # s a deregistered target drains
# s a deleted pod keeps serving (terminationGracePeriodSeconds): the deregistration delay plus
# time for the controller to see the pod terminating, generous for a loaded machine.
GRACE = 3
REPLICAS = 3
A = "alb.ingress.kubernetes.io/"


def healthy_between(steps: Sequence[tuple[float, int]], start: float, end: float) -> int:
    """The fewest healthy targets at any moment of [start, end]."""
    before = [count for at, count in steps if at <= start]
    counts = [before[-1] if before else 0] + [c for at, c in steps if start < at <= end]
    return min(counts)


def timeline(steps: Sequence[tuple[float, int]], start: float, end: float) -> str:
    shown = [(max(at, start), count) for at, count in steps if at <= end]
    kept = [s for i, s in enumerate(shown) if i + 1 == len(shown) or shown[i + 1][0] > start]
    return " ".join(f"{at - start:+.2f}s:{count}" for at, count in kept)


def removed_before_drained(health: TargetHealth, arn: str, events: Sequence[PodEvent],
                           since: float) -> list[str]:
    """Pods removed before their target in `arn` finished draining (or was deregistered)."""
    drained = {target[0]: at for target, _, at in health.drained(arn)}
    early = []
    for event in events:
        if event.kind == "removed" and event.time >= since:
            finished = drained.get(event.ip)
            if finished is None or finished > event.time:
                early.append(f"{event.pod} ({event.ip})")
    return early


async def test_a_rolling_update_keeps_a_healthy_target_only_with_readiness_gates(
        cluster: Cluster, hooks: WebhookHarness, aws_proxy: AWSFaultProxy) -> None:
    health = aws_proxy.enable_target_health(TargetHealthSettings(
        health_check_delay=HEALTH_CHECKS, deregistration_delay=DRAINING))
    await cluster.ingress_class()
    await cluster.create(SERVICES, objects.service(
        "web", selector={"app": "web"}, ports=[objects.service_port()]))
    nlb = objects.nlb_service("web-nlb")
    nlb["spec"]["selector"] = {"app": "web"}
    await cluster.create(SERVICES, nlb)
    await cluster.ingress("web", {A + "target-type": "ip"}, backend="web")
    await cluster.start(on_setup=hooks.setup,
                        targetgroupbinding=tgb_settings(cluster.seed, requeue_duration=0.05))
    await hooks.install()

    async def managed() -> dict[str, str] | None:
        listed = (await cluster.client.list(TARGETGROUPBINDINGS, "default"))["items"]
        found = {"ingress" if INGRESS_STACK_NAME_LABEL in labels_of(b) else
                 "nlb" if SERVICE_STACK_NAME_LABEL in labels_of(b) else "other":
                 b["spec"]["targetGroupARN"] for b in listed}
        return found if {"ingress", "nlb"} <= set(found) else None

    arns: dict[str, str] = await eventually(managed, timeout=60)
    kubelet = PlayedKubelet(cluster.client, "default",
                            network=lambda ip: cluster.pod_enis([ip]))

    async def settled(since: float) -> bool:
        """Every target group holds exactly the new pods, healthy, with nothing pending, and
        every pod deleted since `since` is gone."""
        now = time.monotonic()
        for arn in arns.values():
            steps = health.healthy_timeline(arn)
            if not steps or steps[-1][1] != REPLICAS or steps[-1][0] > now:
                return False
        removed = {e.pod for e in kubelet.events if e.kind == "removed"}
        return all(e.pod in removed for e in kubelet.events
                   if e.kind == "terminating" and e.time >= since)

    report: list[str] = []
    async with kubelet:
        web = PlayedDeployment(cluster.client, "default", "web", REPLICAS,
                               strategy=RollingUpdate(max_surge=1, max_unavailable=0),
                               termination_grace=GRACE)
        await web.rollout("v1")
        await eventually(lambda: settled(0.0), timeout=30)

        # Without gates: pods are Ready for Kubernetes before their targets are healthy.
        start = time.monotonic()
        await web.rollout("v2")
        await eventually(lambda: settled(start), timeout=30)
        end = time.monotonic()
        for role, arn in sorted(arns.items()):
            steps = health.healthy_timeline(arn)
            report.append(f"without gates, {role}: {timeline(steps, start, end)}")
            # Fewer healthy targets than maxUnavailable 0 promises; usually none at all.
            assert healthy_between(steps, start, end) < REPLICAS, report[-1]
            assert removed_before_drained(health, arn, kubelet.events, start) == []

        # With gates (the namespace opted in): a new pod is Ready once healthy in both.
        await cluster.label_namespace({"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"})
        start = time.monotonic()
        await web.rollout("v3")
        await eventually(lambda: settled(start), timeout=60)
        end = time.monotonic()
        for role, arn in sorted(arns.items()):
            steps = health.healthy_timeline(arn)
            report.append(f"with gates, {role}: {timeline(steps, start, end)}")
            # Never fewer healthy targets than pods the Deployment promised to keep.
            assert healthy_between(steps, start, end) >= REPLICAS, report[-1]
            assert removed_before_drained(health, arn, kubelet.events, start) == []
    print("\nhealthy targets over time (seconds from the rollout's start: count)")
    print("\n".join(report))

