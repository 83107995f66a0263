"""`LaneSettings(lane=False)`: checkpoint skips without the paced LOW lane (upstream's
prototype, PR #3821): every event is queued NORMAL on one unpaced FIFO."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from controller import service
from controller.apis import CHECKPOINT_ANNOTATION, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, AWSSettings
from controller.deploy import StackDeployer
from controller.reconcilers import LaneSettings
from controller.service.model import checkpoint_of
from controller.service.reconciler import ServiceReconciler
from runtime.client import KubeClient
from runtime.manager import Manager
from runtime.predicates import EventKind
from runtime.reconcile import LOW, NORMAL, Request
from runtime.resources import SERVICES
from tests.support.objects import web_service
from tests.support.queues import finish_ready


def _settings(*, lane: bool = True, checkpoints: bool = True) -> service.Settings:
    return service.Settings(
        cluster_name="prod", region="us-west-2", vpc_id="vpc-1",
        lanes=LaneSettings(verify_qps=2.0, verify_burst=2, lane=lane, checkpoints=checkpoints))


def test_low_lane_pace() -> None:
    assert _settings().lanes.low_lane_qps == 2.0
    assert _settings(lane=False).lanes.low_lane_qps is None
    assert _settings(checkpoints=False).lanes.low_lane_qps is None


async def test_without_lane_unchanged_services_are_normal_and_unpaced(
        envtest_kubeconfig: Path) -> None:
    unchanged = web_service({"aws-load-balancer-nlb-target-type": "ip"})
    model = _settings().model
    unchanged["metadata"]["annotations"][CHECKPOINT_ANNOTATION] = checkpoint_of(
        unchanged, settings=model)
    aws = AWSSettings(region="us-west-2", endpoint_url="http://127.0.0.1:9",
                      access_key="unused", secret_key="unused")
    seen: dict[bool, tuple[int, int]] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client, \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for lane in (True, False):
            manager = Manager(client, registry=CollectorRegistry())
            controller = service.setup(manager, pool=pool, settings=_settings(lane=lane))
            reconciler = ServiceReconciler(
                client=client, services=manager.informer(SERVICES).store,
                bindings=manager.informer(TARGETGROUPBINDINGS).store,
                deployer=StackDeployer(pool, _settings().deployer),
                recorder=manager.recorder, settings=model, lane=lane)
            priority = reconciler.priority(unchanged, EventKind.INITIAL_ADD, LOW)
            for i in range(6):
                controller.queue.add(Request("shop", f"web{i}"), priority=priority)
            seen[lane] = (priority, finish_ready(controller.queue))
    assert seen[True] == (LOW, 2)  # the burst; the rest wait for the pace
    assert seen[False] == (NORMAL, 6)
