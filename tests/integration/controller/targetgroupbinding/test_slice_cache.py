"""The EndpointSlice cache keeps endpoints only for Services a binding uses; a binding for a
Service nobody used until then converges at once, and the cache takes that Service's slices
again, whole."""

from __future__ import annotations

import asyncio

from controller.apis import TARGETGROUPBINDINGS
from controller.targetgroupbinding.slicecache import is_index_entry
from runtime.resources import ENDPOINTSLICES
from runtime.store import Store
from tests.support.cluster import Cluster
from tests.support.waiting import eventually


def _slice_cache(cluster: Cluster) -> Store:
    assert cluster.manager is not None
    return cluster.manager.informer(ENDPOINTSLICES).store


def _slice_lists(cluster: Cluster, service: str) -> int:
    """Lists of one Service's slices (the reconcile's fetch), not the informer's own lists."""
    return sum(1 for r in cluster.server.request_log if r.verb == "list"
               and "endpointslices" in r.path
               and f"kubernetes.io/service-name={service}" in str(r.query.get("labelSelector")))


async def test_a_binding_for_a_service_nobody_used_converges_from_one_list(
        cluster: Cluster) -> None:
    used_arn = await cluster.target_group("used-tg")
    new_arn = await cluster.target_group("new-tg")
    for name, ips in (("used", ["10.0.1.1"]), ("idle", ["10.0.2.1", "10.0.2.2"])):
        await cluster.service(name)
        await cluster.endpoints(name, ips)
    await cluster.binding("used", service="used", arn=used_arn)
    await cluster.start()
    await eventually(lambda: _registered(cluster, used_arn, {("10.0.1.1", 8080)}))

    cache = _slice_cache(cluster)
    assert not is_index_entry(cache.get("default/used-1") or {})
    idle = cache.get("default/idle-1")
    assert idle is not None
    assert is_index_entry(idle)
    assert idle["metadata"]["resourceVersion"]

    cluster.server.clear_request_log()
    await cluster.binding("idle", service="idle", arn=new_arn)
    await eventually(lambda: _registered(cluster, new_arn, {("10.0.2.1", 8080),
                                                           ("10.0.2.2", 8080)}))
    # The cache takes the slices again, whole, with no event of theirs (a standby does too).
    await eventually(lambda: asyncio.sleep(0, not is_index_entry(
        cache.get("default/idle-1") or {})))
    whole = cache.get("default/idle-1")
    assert whole is not None
    assert whole["metadata"]["resourceVersion"] == idle["metadata"]["resourceVersion"]
    assert [e.address for e in whole["endpoints"]] == ["10.0.2.1", "10.0.2.2"]
    await cluster.settled()
    lists = _slice_lists(cluster, "idle")
    assert 1 <= lists <= 2  # the cache's, and the reconcile's own if it came first
    # From then on reconciles read the cache, not the server.
    await cluster.annotate(TARGETGROUPBINDINGS, "idle", {"x": "y"})
    await cluster.patch(TARGETGROUPBINDINGS, "idle", {"spec": {"ipAddressType": "ipv4"}})
    await cluster.endpoints("idle", ["10.0.2.1", "10.0.2.2", "10.0.2.3"], not_ready=("10.0.2.1",))
    await eventually(lambda: _registered(cluster, new_arn, {("10.0.2.2", 8080),
                                                           ("10.0.2.3", 8080)}))
    await cluster.settled()
    assert _slice_lists(cluster, "idle") == lists
    assert await cluster.stop() == 0


async def _registered(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
