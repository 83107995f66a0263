"""The multi-cluster tracking ConfigMap against the local API server: resourceVersion-guarded
writes that re-read and merge on conflict, recreation after a deletion, and no write when the
set is unchanged."""

from __future__ import annotations

from typing import Any

from controller.targetgroupbinding.multicluster import TargetTracker, configmap_name
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.resources import CONFIGMAPS

NS = "default"
CM = configmap_name("web")


async def _stored(client: KubeClient) -> set[str]:
    cm = await client.get(CONFIGMAPS, CM, NS)
    return set(str(cm["data"]["targets"]).split(","))


async def _edit(client: KubeClient, targets: str) -> None:
    """Someone else rewrites the ConfigMap (another replica, a person with kubectl)."""
    cm = await client.get(CONFIGMAPS, CM, NS)
    cm["data"] = {"targets": targets}
    await client.update(CONFIGMAPS, cm)


def _writes(server: EnvTestServer) -> list[Any]:
    return [r for r in server.request_log
            if r.verb in ("create", "update", "patch") and "configmaps" in r.path]


async def test_conflicting_writes_are_merged_never_overwritten(
        envtest: EnvTestServer, envtest_kubeconfig: Any) -> None:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client:
        tracker = TargetTracker(client)
        assert await tracker.tracked(NS, "web") is None  # initial population
        assert await tracker.write(NS, "web", ["10.0.0.1:80", "10.0.0.2:80"])
        assert await _stored(client) == {"10.0.0.1:80", "10.0.0.2:80"}

        # Behind the tracker's back a target is added; our next write is based on a stale
        # resourceVersion, gets 409, re-reads and keeps the foreign entry.
        await _edit(client, "10.0.0.1:80,10.0.0.2:80,10.0.0.7:80")
        assert await tracker.write(NS, "web", ["10.0.0.1:80"])
        assert await _stored(client) == {"10.0.0.1:80", "10.0.0.7:80"}
        assert await tracker.tracked(NS, "web") == frozenset({"10.0.0.1:80", "10.0.0.7:80"})

        # Unchanged: no request at all.
        envtest.clear_request_log()
        assert not await tracker.write(NS, "web", ["10.0.0.1:80", "10.0.0.7:80"])
        assert _writes(envtest) == []

        # Deleted behind its back: recreated with the set we want.
        await client.delete(CONFIGMAPS, CM, NS)
        assert await tracker.write(NS, "web", ["10.0.0.3:80"])
        assert await _stored(client) == {"10.0.0.3:80"}

        # A second tracker (a fresh process) racing on creation: AlreadyExists → merge.
        await client.delete(CONFIGMAPS, CM, NS)
        late = TargetTracker(client)
        assert await late.tracked(NS, "web") is None
        await tracker.write(NS, "web", ["10.0.0.4:80"])
        assert await late.write(NS, "web", ["10.0.0.5:80"])
        assert await _stored(client) == {"10.0.0.4:80", "10.0.0.5:80"}
        assert tracker.writes == 4
        assert late.writes == 1

        await tracker.cleanup(NS, "web")
        assert await tracker.tracked(NS, "web") is None
