"""A CRD with two served versions and conversion strategy `None` (upstream's TargetGroupBinding
CRD's): objects are stored at the storage version; at the other version they are the same
object with `apiVersion` rewritten and pruned to that version's schema, as the real server's
schema-coercing converter does; a write at the older version loses the newer fields."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import aiohttp

from runtime.envtest import EnvTestServer
from runtime.envtest.patch import MERGE_PATCH
from tests.integration.runtime.envtest.rawhttp import CRDS, WIDGET_CRD, Http

OLD = "/apis/example.com/v1alpha1/namespaces/default/widgets"
NEW = "/apis/example.com/v1/namespaces/default/widgets"


def _version(name: str, *, storage: bool, spec: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "served": True, "storage": storage, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": spec},
                "status": {"type": "object", "properties": {
                    "observedGeneration": {"type": "integer"}}}}}}}


def _two_versions() -> dict[str, Any]:
    crd = copy.deepcopy(WIDGET_CRD)
    old = {"size": {"type": "integer"}}
    crd["spec"]["versions"] = [
        _version("v1alpha1", storage=False, spec=old),
        _version("v1", storage=True, spec={**old, "color": {"type": "string"}}),
    ]
    return crd


async def test_an_old_version_object_is_stored_at_the_new_and_read_at_both(http: Http) -> None:
    await http.post(CRDS, _two_versions())
    status, made = await http.post(OLD, {"apiVersion": "example.com/v1alpha1", "kind": "Widget",
                                         "metadata": {"name": "w"},
                                         "spec": {"size": 1, "color": "red"}})
    assert status == 201
    assert made["apiVersion"] == "example.com/v1alpha1"
    assert made["spec"] == {"size": 1}  # pruned to v1alpha1's schema before it was stored
    _, new = await http.get(f"{NEW}/w")
    assert new["apiVersion"] == "example.com/v1"
    assert new["spec"] == {"size": 1}
    assert new["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    _, listed = await http.get(OLD)
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v1alpha1"]


async def test_newer_fields_are_not_served_at_the_old_version_and_lost_by_its_writes(
        http: Http) -> None:
    await http.post(CRDS, _two_versions())
    await http.post(NEW, {"metadata": {"name": "w"}, "spec": {"size": 1, "color": "red"}})
    _, old = await http.get(f"{OLD}/w")
    assert old["apiVersion"] == "example.com/v1alpha1"
    assert old["spec"] == {"size": 1}
    _, new = await http.get(f"{NEW}/w")
    assert new["spec"] == {"size": 1, "color": "red"}  # reading never changes storage
    # A write at v1alpha1 starts from the v1alpha1 object: the color is gone from storage.
    status, patched = await http.patch(f"{OLD}/w", {"spec": {"size": 2}}, MERGE_PATCH)
    assert status == 200
    assert patched["apiVersion"] == "example.com/v1alpha1"
    _, new = await http.get(f"{NEW}/w")
    assert new["spec"] == {"size": 2}
    assert new["metadata"]["generation"] == 2


async def test_a_watch_at_the_old_version_sees_converted_objects(
        http: Http, envtest: EnvTestServer) -> None:
    await http.post(CRDS, _two_versions())
    async with (aiohttp.ClientSession(base_url=envtest.url) as session,
                session.get(OLD, params={"watch": "true"}) as watch):
        await http.post(NEW, {"metadata": {"name": "w"}, "spec": {"size": 1, "color": "red"}})
        line = await asyncio.wait_for(watch.content.readline(), 10)
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "example.com/v1alpha1"
    assert event["object"]["spec"] == {"size": 1}
