"""The whole controller (`aiolbc run`'s flags) serving a set of namespaces: `--watch-namespace`
with several, `--namespace-selector` followed as namespaces are labelled, and a namespace let go
keeping everything made for its objects."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.apis import CHECKPOINT_ANNOTATION
from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from runtime.resources import NAMESPACES, SERVICES
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.objects import annotation, hostname
from tests.support.waiting import eventually


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path) as c:
        yield c


async def in_namespace(cluster: Cluster, name: str, **labels: str) -> Cluster:
    """The harness working in namespace `name` (made with `labels`), with one NLB Service
    `web-<name>`."""
    other = dataclasses.replace(cluster, namespace=name)
    await other.label_namespace(labels)
    await other.nlb_service(f"web-{name}")
    return other


async def deployed(cluster: Cluster) -> str:
    async def address() -> str | None:
        return hostname(await cluster.find(SERVICES, f"web-{cluster.namespace}"))
    return str(await eventually(address, timeout=60))


async def untouched(cluster: Cluster) -> bool:
    svc = await cluster.get(SERVICES, f"web-{cluster.namespace}")
    return hostname(svc) is None and not svc["metadata"].get("finalizers")


async def test_several_watched_namespaces_are_served_and_no_other(cluster: Cluster) -> None:
    shop = await in_namespace(cluster, "shop")
    blog = await in_namespace(cluster, "blog")
    other = await in_namespace(cluster, "other")
    await cluster.start_app("--watch-namespace=shop,blog")
    await deployed(shop)
    await deployed(blog)
    await cluster.settled()
    assert await untouched(other)
    assert len(await cluster.aws.load_balancers()) == 2
    await cluster.stop()


async def test_namespaces_picked_up_and_let_go_by_their_labels(cluster: Cluster) -> None:
    shop = await in_namespace(cluster, "shop", team="web")
    blog = await in_namespace(cluster, "blog")
    await cluster.start_app("--namespace-selector=team=web")
    shop_lb = await deployed(shop)
    await cluster.settled()
    assert await untouched(blog)

    # Labelled: picked up without a restart.
    await cluster.patch(NAMESPACES, "blog", {"metadata": {"labels": {"team": "web"}}})
    await deployed(blog)

    # Let go: what was made for its objects stays, and changes to them are not acted on.
    await cluster.patch(NAMESPACES, "shop", {"metadata": {"labels": {"team": None}}})
    await cluster.settled()
    checkpoint = annotation(await shop.get(SERVICES, "web-shop"), CHECKPOINT_ANNOTATION)
    await shop.annotate(SERVICES, "web-shop", {
        "service.beta.kubernetes.io/aws-load-balancer-attributes":
            "load_balancing.cross_zone.enabled=true"})
    await shop.delete(SERVICES, "web-shop")
    await cluster.settled()
    svc = await shop.get(SERVICES, "web-shop")  # held by its finalizer, nothing deleted
    assert svc["metadata"].get("deletionTimestamp")
    assert annotation(svc, CHECKPOINT_ANNOTATION) == checkpoint
    assert shop_lb in {lb["DNSName"] for lb in await cluster.aws.load_balancers()}
    assert len(await cluster.aws.load_balancers()) == 2

    # Matching again: the deletion is finished, as any change made meanwhile.
    await cluster.patch(NAMESPACES, "shop", {"metadata": {"labels": {"team": "web"}}})
    await eventually(lambda: shop.gone(SERVICES, "web-shop"), timeout=60)
    await eventually(lambda: _count(cluster, 1), timeout=60)
    await cluster.stop()


async def _count(cluster: Cluster, n: int) -> bool:
    return len(await cluster.aws.load_balancers()) == n
