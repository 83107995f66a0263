"""`propagationPolicy=Foreground`: the owner is kept with a deletionTimestamp and the
`foregroundDeletion` finalizer until the garbage collector has removed the dependents that
block it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from runtime.envtest import EnvTestServer
from tests.integration.runtime.envtest.rawhttp import CM, Http
from tests.support.kubectl import Kubectl

FOREGROUND = {"propagationPolicy": "Foreground"}


async def make(http: Http, name: str, *, owner: dict[str, Any] | None = None,
               block: bool = True, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"],
                                    "blockOwnerDeletion": block}]
    if finalizers:
        meta["finalizers"] = finalizers
    status, body = await http.post(CM, {"metadata": meta})
    assert status == 201, body
    return dict(body)


async def names(http: Http) -> list[str]:
    _, body = await http.get(CM)
    return [i["metadata"]["name"] for i in body["items"]]


async def release(http: Http, name: str) -> None:
    status, body = await http.patch(f"{CM}/{name}", {"metadata": {"finalizers": None}},
                                    "application/merge-patch+json")
    assert status == 200, body


async def test_owner_answers_marked_then_goes_with_dependents(envtest: EnvTestServer,
                                                              http: Http) -> None:
    owner = await make(http, "owner")
    await make(http, "child", owner=owner)
    await make(http, "loose", owner=owner, block=False)
    grandchild_owner = await make(http, "middle", owner=owner)
    await make(http, "grandchild", owner=grandchild_owner)
    since = envtest.revision
    status, body = await http.delete(f"{CM}/owner", FOREGROUND)
    assert status == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert body["metadata"]["deletionTimestamp"]
    assert await names(http) == []
    # The watch history tells the order: mark, dependents go, finalizer off, owner goes.
    events: list[dict[str, Any]] = []
    async with http.session.get(CM, params={"watch": "1", "resourceVersion": str(since),
                                            "timeoutSeconds": "5"}) as resp:
        while not events or (events[-1]["type"], events[-1]["object"]["metadata"]["name"]) \
                != ("DELETED", "owner"):
            events.append(json.loads(await asyncio.wait_for(resp.content.readline(), 5)))
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen[0] == ("MODIFIED", "owner")
    assert seen[-2:] == [("MODIFIED", "owner"), ("DELETED", "owner")]
    assert {("DELETED", n) for n in ("child", "loose", "middle", "grandchild")} <= set(seen)
    assert seen.index(("DELETED", "grandchild")) < seen.index(("DELETED", "middle"))
    assert "finalizers" not in events[-2]["object"]["metadata"]


async def test_blocking_dependent_holds_the_owner(http: Http) -> None:
    owner = await make(http, "owner")
    await make(http, "held", owner=owner, finalizers=["example.com/hold"])
    status, _body = await http.delete(f"{CM}/owner", FOREGROUND)
    assert status == 200
    _, current = await http.get(f"{CM}/owner")
    assert current["metadata"]["finalizers"] == ["foregroundDeletion"]
    _, held = await http.get(f"{CM}/held")
    assert held["metadata"]["deletionTimestamp"]
    await release(http, "held")
    assert await names(http) == []


async def test_dropping_the_reference_releases_the_owner(http: Http) -> None:
    owner = await make(http, "owner")
    await make(http, "held", owner=owner, finalizers=["example.com/hold"])
    await http.delete(f"{CM}/owner", FOREGROUND)
    assert await names(http) == ["held", "owner"]
    status, body = await http.patch(f"{CM}/held", [{"op": "remove",
                                                    "path": "/metadata/ownerReferences"}],
                                    "application/json-patch+json")
    assert status == 200, body
    assert await names(http) == ["held"]


async def test_non_blocking_dependent_does_not_hold_the_owner(http: Http) -> None:
    owner = await make(http, "owner")
    await make(http, "held", owner=owner, block=False, finalizers=["example.com/hold"])
    await http.delete(f"{CM}/owner", FOREGROUND)
    assert await names(http) == ["held"]


async def test_owner_without_dependents_goes_at_once(http: Http) -> None:
    await make(http, "alone")
    status, body = await http.delete(f"{CM}/alone", FOREGROUND)
    assert status == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert await names(http) == []


async def test_owner_keeps_its_own_finalizers(http: Http) -> None:
    owner = await make(http, "owner", finalizers=["example.com/keep"])
    await make(http, "child", owner=owner)
    _status, body = await http.delete(f"{CM}/owner", FOREGROUND)
    assert body["metadata"]["finalizers"] == ["example.com/keep", "foregroundDeletion"]
    _, current = await http.get(f"{CM}/owner")
    assert current["metadata"]["finalizers"] == ["example.com/keep"]
    assert await names(http) == ["owner"]
    await release(http, "owner")
    assert await names(http) == []


async def test_dependent_with_another_owner_survives(http: Http) -> None:
    first = await make(http, "first")
    second = await make(http, "second")
    meta = {"name": "shared", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
         "uid": o["metadata"]["uid"], "blockOwnerDeletion": True} for o in (first, second)]}
    assert (await http.post(CM, {"metadata": meta}))[0] == 201
    await http.delete(f"{CM}/first", FOREGROUND)
    assert await names(http) == ["second", "shared"]
    _, shared = await http.get(f"{CM}/shared")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["second"]


async def test_background_still_removes_at_once(http: Http) -> None:
    owner = await make(http, "owner")
    await make(http, "child", owner=owner)
    status, body = await http.request("DELETE", f"{CM}/owner",
                                      params={"propagationPolicy": "Background"})
    assert status == 200
    assert body["kind"] == "Status"
    assert await names(http) == []


async def test_kubectl_cascade_foreground(kubectl: Kubectl, envtest: EnvTestServer) -> None:
    async with aiohttp.ClientSession(base_url=envtest.url) as session:
        http = Http(session)
        owner = await make(http, "owner")
        await make(http, "held", owner=owner, finalizers=["example.com/hold"])
        waiting = asyncio.create_task(kubectl("delete", "cm", "owner", "--cascade=foreground",
                                              "--timeout=10s"))
        for _ in range(200):  # until kubectl's DELETE has marked the owner
            _, current = await http.get(f"{CM}/owner")
            if current["metadata"].get("deletionTimestamp"):
                break
            await asyncio.sleep(0.05)
        assert current["metadata"]["finalizers"] == ["foregroundDeletion"]
        await asyncio.sleep(0.2)
        assert not waiting.done()  # kubectl waits for the owner, which waits for "held"
        await release(http, "held")
        result = await waiting
        assert 'configmap "owner" deleted' in result.stdout
        assert await names(http) == []
