"""`LaneSettings(lane=False)`: checkpoint skips without the paced LOW lane (upstream's
prototype, PR #3821): every group event is queued NORMAL on one unpaced FIFO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.apis import CHECKPOINT_ANNOTATION
from controller.aws import AWSClientPool
from controller.ingress import qualify as qualify_module
from controller.ingress import wiring as ingress
from controller.ingress.model import build_group
from controller.ingress.priority import GroupPriority
from controller.reconcilers import LaneSettings
from controller.settings import ClusterScope, StackDefaults
from controller.targetgroupaccess import TargetGroupLookup
from runtime.client import KubeClient
from runtime.manager import Manager
from runtime.objects import key_of
from runtime.predicates import Event, EventKind
from runtime.prioritydecisions import Deferred
from runtime.reconcile import LOW, NORMAL, Request
from runtime.store import Store
from tests.support.aws import unreachable_aws
from tests.support.objects import backend_service, ingress_class, ingress_path
from tests.support.objects import ingress as ingress_obj
from tests.support.queues import decided, finish_ready
from tests.unit.controller.ingress.caches import (
    bindings_store,
    caches,
    deploy_in_cache,
    group_priority,
    loader,
)

GROUP = {"alb.ingress.kubernetes.io/group.name": "shop"}


def _settings(*, lane: bool = True, checkpoints: bool = True) -> ingress.Settings:
    return ingress.Settings(
        cluster=ClusterScope(name="test-cluster", region="us-west-2", vpc_id="vpc-1"),
        defaults=StackDefaults(target_type="ip"), lanes=LaneSettings(
            verify_qps=2.0, verify_burst=2, lane=lane, checkpoints=checkpoints))


def ask(priority: GroupPriority, group: Request, kind: EventKind, default: int
        ) -> int | Deferred:
    """What a handler asks for `group` on an event of `kind` (of any object mapping to it)."""
    return priority(group, Event(kind, {"metadata": {"name": "any"}}), default)


def test_low_lane_pace() -> None:
    assert _settings().lanes.low_lane_qps == 2.0
    assert _settings(lane=False).lanes.low_lane_qps is None
    assert _settings(checkpoints=False).lanes.low_lane_qps is None


async def test_without_lane_unchanged_groups_are_normal_and_unpaced(
        envtest_kubeconfig: Path) -> None:
    c = caches(ingress_class("alb"), backend_service("web"),
               ingress_obj("a", paths=[ingress_path("/a", "web")], annotations=dict(GROUP)),
               ingress_obj("b", paths=[ingress_path("/b", "web")], annotations=dict(GROUP)),
               ingress_obj("single", paths=[ingress_path("/", "web")]))
    aws = unreachable_aws()
    unchanged, changed = Request("", "shop"), Request("default", "single")
    seen: dict[bool, tuple[int, int, int]] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client, \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for lane in (True, False):
            settings = _settings(lane=lane)
            manager = Manager(client, registry=CollectorRegistry())
            controller = ingress.setup(manager, pool=pool, settings=settings)
            bindings = bindings_store()
            priority = group_priority(c, bindings, lookup=TargetGroupLookup(pool),
                                      enabled=settings.lanes.prioritised)
            value = deploy_in_cache(c, unchanged, bindings)
            assert value == group_priority(c, bindings, lookup=TargetGroupLookup(pool)
                                           ).deployed_checkpoint(loader(c).load(unchanged))
            matched = decided(ask(priority, unchanged, EventKind.INITIAL_ADD, LOW))
            assert decided(ask(priority, changed, EventKind.INITIAL_ADD, LOW)) == NORMAL
            assert ask(priority, unchanged, EventKind.UPDATE, NORMAL) == NORMAL
            for i in range(6):
                controller.queue.add(Request("", f"group{i}"), priority=matched)
            seen[lane] = (matched, decided(ask(priority, unchanged, EventKind.RESYNC, LOW)),
                          finish_ready(controller.queue))
    assert seen[True] == (LOW, LOW, 2)  # the burst; the rest wait for the pace
    assert seen[False] == (NORMAL, NORMAL, 6)


async def test_replay_decisions_are_made_once_per_group_and_dropped_on_change(
        envtest_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = caches(ingress_class("alb"), backend_service("web"),
               ingress_obj("a", paths=[ingress_path("/a", "web")], annotations=dict(GROUP)),
               ingress_obj("b", paths=[ingress_path("/b", "web")], annotations=dict(GROUP)))
    group = Request("", "shop")
    aws = unreachable_aws()
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig), \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        bindings = bindings_store()
        priority = group_priority(c, bindings, lookup=TargetGroupLookup(pool))
        value = deploy_in_cache(c, group, bindings)
        for rv, name in enumerate(("a", "b"), start=1):
            member = c.ingresses.get(f"default/{name}")
            assert member is not None
            member["metadata"]["resourceVersion"] = str(rv)
        builds: list[Request] = []

        def counting_build(g: Any, *args: Any, **kwargs: Any) -> Any:
            builds.append(g.request)
            return build_group(g, *args, **kwargs)

        monkeypatch.setattr(qualify_module, "build_group", counting_build)
        # A restart replays both members and their Service: one decision for the group.
        for kind in (EventKind.INITIAL_ADD, EventKind.INITIAL_ADD, EventKind.INITIAL_ADD,
                     EventKind.RESYNC):
            assert decided(ask(priority, group, kind, LOW)) == LOW
        assert len(builds) == 1
        # A member rewritten (its checkpoint reset before a deploy): NORMAL at once, since
        # the members no longer carry one checkpoint between them; no model is built for that.
        member = c.ingresses.get("default/a")
        assert member is not None
        member["metadata"]["annotations"][CHECKPOINT_ANNOTATION] = ""
        member["metadata"]["resourceVersion"] = "3"
        assert ask(priority, group, EventKind.RESYNC, LOW) == NORMAL
        assert len(builds) == 1
        member["metadata"]["annotations"][CHECKPOINT_ANNOTATION] = value
        member["metadata"]["resourceVersion"] = "4"
        # One checkpoint again: only the model can tell, and that is left for later.
        later = ask(priority, group, EventKind.RESYNC, LOW)
        assert isinstance(later, Deferred)
        assert len(builds) == 1
        assert later() == LOW
        assert len(builds) == 2
        # The backend Service changes (members untouched): its update event drops the
        # decisions, so the next replay sees that the checkpoint no longer matches.
        c.services.upsert(backend_service("web", target_port=9090))
        assert ask(priority, group, EventKind.UPDATE, NORMAL) == NORMAL
        assert decided(ask(priority, group, EventKind.RESYNC, LOW)) == NORMAL


async def test_a_group_whose_kubernetes_side_changed_while_down_is_a_real_change(
        envtest_kubeconfig: Path) -> None:
    """What a deploy left in Kubernetes (the managed bindings, each member's finalizer and
    address) taken away while the controller was down: no deletion event is replayed for a
    binding that had no finalizer yet, so only the priority decision can see it."""
    group = Request("", "shop")

    def deployed() -> tuple[Any, Store]:
        c = caches(ingress_class("alb"), backend_service("web"),
                   ingress_obj("a", paths=[ingress_path("/a", "web")], annotations=dict(GROUP)),
                   ingress_obj("b", paths=[ingress_path("/b", "web")], annotations=dict(GROUP)))
        bindings = bindings_store()
        deploy_in_cache(c, group, bindings)
        return c, bindings

    def lose_binding(c: Any, bindings: Store) -> None:
        bindings.delete(key_of(bindings.list()[0]))

    def lose_finalizer(c: Any, bindings: Store) -> None:
        c.ingresses.get("default/b")["metadata"]["finalizers"] = []

    def lose_address(c: Any, bindings: Store) -> None:
        c.ingresses.get("default/a")["status"] = {}

    aws = unreachable_aws()
    decided_as: dict[str, int] = {}
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig), \
            AWSClientPool(aws, registry=CollectorRegistry()) as pool:
        for name, change in (("none", None), ("binding", lose_binding),
                             ("finalizer", lose_finalizer), ("address", lose_address)):
            c, bindings = deployed()
            if change is not None:
                change(c, bindings)
            priority = group_priority(c, bindings, lookup=TargetGroupLookup(pool))
            decided_as[name] = decided(ask(priority, group, EventKind.INITIAL_ADD, LOW))
    assert decided_as == {"none": LOW, "binding": NORMAL, "finalizer": NORMAL, "address": NORMAL}
