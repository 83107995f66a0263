"""`IngressSettings.lane=False`: checkpoint skips without the paced LOW lane (upstream's
prototype, PR #3821): every group event is queued NORMAL on one unpaced FIFO."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from controller import checkpoint
from controller.aws import AWSClientPool, AWSSettings
from controller.deploy import DeployerSettings, StackDeployer
from controller.ingress import controller as ingress
from controller.ingress.reconciler import IngressReconciler
from runtime.client import KubeClient
from runtime.handlers import EventKind, Request
from runtime.manager import Manager
from runtime.store import Store
from runtime.workqueue import LOW, NORMAL
from tests.queues import finish_ready
from tests.unit.ingress.objects import SETTINGS, caches, ingress_class, loader, path, service
from tests.unit.ingress.objects import ingress as ingress_obj

GROUP = {"alb.ingress.kubernetes.io/group.name": "shop"}


def _settings(*, lane: bool = True, checkpoints: bool = True) -> ingress.IngressSettings:
    return ingress.IngressSettings(cluster_name="test-cluster", vpc_id="vpc-1",
                                   default_target_type="ip", verify_qps=2.0, verify_burst=2,
                                   lane=lane, checkpoints=checkpoints)


def test_low_lane_pace() -> None:
    assert _settings().low_lane_qps == 2.0
    assert _settings(lane=False).low_lane_qps is None
    assert _settings(checkpoints=False).low_lane_qps is None


async def test_without_lane_unchanged_groups_are_normal_and_unpaced(
        envtest_kubeconfig: Path) -> None:
    c = caches(ingress_class("alb"), service("web"),
               ingress_obj("a", paths=[path("/a", "web")], annotations=dict(GROUP)),
               ingress_obj("b", paths=[path("/b", "web")], annotations=dict(GROUP)),
               ingress_obj("single", paths=[path("/", "web")]))
    aws = AWSSettings(region="us-west-2", endpoint_url="http://127.0.0.1:9",
                      access_key="unused", secret_key="unused")
    unchanged, changed = Request("", "shop"), Request("default", "single")
    seen: dict[bool, tuple[int, int, int]] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client, \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for lane in (True, False):
            settings = _settings(lane=lane)
            manager = Manager(client, registry=CollectorRegistry())
            controller = ingress.setup(manager, pool=pool, settings=settings)
            reconciler = IngressReconciler(
                client=client, caches=c, bindings=Store(), loader=loader(c),
                deployer=StackDeployer(pool, DeployerSettings(cluster_name="test-cluster",
                                                              vpc_id="vpc-1")),
                pool=pool, settings=SETTINGS, vpc_id="vpc-1", recorder=manager.recorder)
            value = reconciler.computed_checkpoint(unchanged)
            assert value is not None
            for name in ("a", "b"):  # the group was deployed: every member carries it
                member = c.ingresses.get(f"default/{name}")
                assert member is not None
                member["metadata"]["annotations"][checkpoint.CHECKPOINT_ANNOTATION] = value
            priority = ingress.group_priority(settings, reconciler.priority)
            matched = priority(unchanged, EventKind.INITIAL_ADD, LOW)
            assert priority(changed, EventKind.INITIAL_ADD, LOW) == NORMAL
            assert priority(unchanged, EventKind.UPDATE, NORMAL) == NORMAL
            for i in range(6):
                controller.queue.add(Request("", f"group{i}"), priority=matched)
            seen[lane] = (matched, priority(unchanged, EventKind.RESYNC, LOW),
                          finish_ready(controller.queue))
    assert seen[True] == (LOW, LOW, 2)  # the burst; the rest wait for the pace
    assert seen[False] == (NORMAL, NORMAL, 6)
