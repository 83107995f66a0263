"""`LaneSettings(lane=False)`: checkpoint skips without the paced LOW lane (upstream's
prototype, PR #3821): every event is queued NORMAL on one unpaced FIFO."""

from __future__ import annotations

import copy
from pathlib import Path

from prometheus_client import CollectorRegistry

from controller import service
from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.deploy import StackDeployer
from controller.reconcilers import LaneSettings
from controller.service.reconciler import ServiceReconciler
from controller.service.watches import SERVICE_STACK_INDEX, service_stack_index
from controller.settings import ClusterScope
from runtime.client import KubeClient
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.predicates import Event, EventKind
from runtime.reconcile import LOW, NORMAL, Request
from runtime.resources import SERVICES
from runtime.store import Store
from tests.support.aws import unreachable_aws
from tests.support.deployed import service_as_deployed
from tests.support.objects import web_service
from tests.support.queues import decided, finish_ready


def _settings(*, lane: bool = True, checkpoints: bool = True) -> service.Settings:
    return service.Settings(
        cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"),
        lanes=LaneSettings(verify_qps=2.0, verify_burst=2, lane=lane, checkpoints=checkpoints))


def test_low_lane_pace() -> None:
    assert _settings().lanes.low_lane_qps == 2.0
    assert _settings(lane=False).lanes.low_lane_qps is None
    assert _settings(checkpoints=False).lanes.low_lane_qps is None


async def test_without_lane_unchanged_services_are_normal_and_unpaced(
        envtest_kubeconfig: Path) -> None:
    model = _settings().model
    unchanged, bindings = service_as_deployed(
        web_service({"aws-load-balancer-nlb-target-type": "ip"}), settings=model)
    aws = unreachable_aws()
    seen: dict[bool, tuple[int, int]] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client, \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for lane in (True, False):
            manager = Manager(client, registry=CollectorRegistry())
            controller = service.setup(manager, pool=pool, settings=_settings(lane=lane))
            for binding in bindings:
                manager.informer(TARGETGROUPBINDINGS).store.upsert(binding)
            reconciler = ServiceReconciler(
                client=client, services=manager.informer(SERVICES).store,
                bindings=manager.informer(TARGETGROUPBINDINGS).store,
                deployer=StackDeployer(pool, _settings().deployer),
                recorder=manager.recorder, settings=model, lane=lane)
            priority = decided(reconciler.priority(Request.for_object(unchanged),
                                                  Event(EventKind.INITIAL_ADD, unchanged), LOW))
            for i in range(6):
                controller.queue.add(Request("shop", f"web{i}"), priority=priority)
            seen[lane] = (priority, finish_ready(controller.queue))
    assert seen[True] == (LOW, 2)  # the burst; the rest wait for the pace
    assert seen[False] == (NORMAL, 6)


async def test_a_service_whose_kubernetes_side_changed_while_down_is_a_real_change(
        envtest_kubeconfig: Path) -> None:
    """What a deploy left in Kubernetes (the managed bindings, the finalizer, the address, the
    ready condition for this generation) taken away while the controller was down: no deletion
    event is replayed for a binding that had no finalizer yet, so only the priority decision
    can see it."""
    model = _settings().model
    deployed, bindings = service_as_deployed(
        web_service({"aws-load-balancer-nlb-target-type": "ip"}), settings=model)

    def lose_binding(svc: Obj, found: list[Obj]) -> None:
        found.pop()

    def lose_finalizer(svc: Obj, found: list[Obj]) -> None:
        svc["metadata"]["finalizers"] = []

    def lose_address(svc: Obj, found: list[Obj]) -> None:
        svc["status"].pop("loadBalancer")

    def new_generation(svc: Obj, found: list[Obj]) -> None:
        svc["metadata"]["generation"] += 1  # a spec edit the model does not read

    aws = unreachable_aws()
    decided_as: dict[str, int] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client, \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for name, change in (("none", None), ("binding", lose_binding),
                             ("finalizer", lose_finalizer), ("address", lose_address),
                             ("generation", new_generation)):
            svc, found = copy.deepcopy(deployed), copy.deepcopy(bindings)
            if change is not None:
                change(svc, found)
            store = Store()
            store.add_indexer(SERVICE_STACK_INDEX, service_stack_index)
            for binding in found:
                store.upsert(binding)
            reconciler = ServiceReconciler(
                client=client, services=Store(), bindings=store,
                deployer=StackDeployer(pool, _settings().deployer),
                recorder=Manager(client, registry=CollectorRegistry()).recorder,
                settings=model)
            decided_as[name] = decided(reconciler.priority(
                Request.for_object(svc), Event(EventKind.INITIAL_ADD, svc), LOW))
    assert decided_as == {"none": LOW, "binding": NORMAL, "finalizer": NORMAL, "address": NORMAL,
                       "generation": NORMAL}
