"""The three patch formats, strategic-merge keys and directives, and patch preconditions."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from runtime.envtest import EnvTestServer
from runtime.envtest.patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from tests.integration.runtime.envtest.rawhttp import CM, SVC, Http
from tests.support.objects import service


async def test_merge_patch(http: Http) -> None:
    await http.post(CM, {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
                         "data": {"x": "1"}})
    status, body = await http.patch(f"{CM}/c", {"metadata": {"labels": {"a": None, "c": "3"}},
                                                 "data": {"y": "2"}}, MERGE_PATCH)
    assert status == 200
    assert body["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert body["data"] == {"x": "1", "y": "2"}


async def test_json_patch(http: Http) -> None:
    await http.post(CM, {"metadata": {"name": "c"}, "data": {"x": "1"}})
    ops = [{"op": "add", "path": "/data/y", "value": "2"},
           {"op": "replace", "path": "/data/x", "value": "9"},
           {"op": "test", "path": "/data/y", "value": "2"}]
    status, body = await http.patch(f"{CM}/c", ops, JSON_PATCH)
    assert status == 200
    assert body["data"] == {"x": "9", "y": "2"}
    status, _ = await http.patch(f"{CM}/c", [{"op": "test", "path": "/data/x",
                                                "value": "0"}], JSON_PATCH)
    assert status == 422
    status, _err = await http.patch(f"{CM}/c", [{"op": "remove", "path": "/data/zz"}],
                                   JSON_PATCH)
    assert status == 422


async def test_strategic_merge_lists(http: Http) -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p", "finalizers": ["a"],
                                        "ownerReferences": [{"uid": "u1", "name": "o1",
                                                             "kind": "X", "apiVersion": "v1"}]},
                           "spec": {"containers": [
                               {"name": "app", "image": "i:1",
                                "env": [{"name": "A", "value": "1"}],
                                "ports": [{"containerPort": 80}]},
                               {"name": "side", "image": "s:1"}]}}
    path = "/api/v1/namespaces/default/pods"
    await http.post(path, pod)
    patch = {"metadata": {"finalizers": ["b", "a"]},
             "spec": {"containers": [
                 {"name": "app", "image": "i:2", "env": [{"name": "B", "value": "2"}],
                  "ports": [{"containerPort": 81}]},
                 {"name": "side", "$patch": "delete"}]}}
    status, body = await http.patch(f"{path}/p", patch, STRATEGIC_MERGE_PATCH)
    assert status == 200, body
    assert body["metadata"]["finalizers"] == ["a", "b"]
    containers = body["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app"]
    assert containers[0]["image"] == "i:2"
    assert containers[0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert [p["containerPort"] for p in containers[0]["ports"]] == [80, 81]
    assert body["metadata"]["ownerReferences"][0]["uid"] == "u1"


async def test_strategic_merge_service_ports_and_conditions(http: Http) -> None:
    await http.post(SVC, service("s"))
    body = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    status, result = await http.patch(f"{SVC}/s", body, STRATEGIC_MERGE_PATCH)
    assert status == 200
    assert [(p["port"], p.get("name")) for p in result["spec"]["ports"]] == [
        (80, "http"), (443, "https")]
    status_patch = {"status": {"conditions": [{"type": "A", "status": "True"}]}}
    await http.patch(f"{SVC}/s/status", status_patch, STRATEGIC_MERGE_PATCH)
    status_patch = {"status": {"conditions": [{"type": "B", "status": "False"},
                                              {"type": "A", "status": "False"}]}}
    _, result = await http.patch(f"{SVC}/s/status", status_patch, STRATEGIC_MERGE_PATCH)
    assert [(c["type"], c["status"]) for c in result["status"]["conditions"]] == [
        ("A", "False"), ("B", "False")]


async def test_patch_resource_version_precondition(http: Http) -> None:
    _, body = await http.post(CM, {"metadata": {"name": "c"}})
    rv = body["metadata"]["resourceVersion"]
    status, _ = await http.patch(f"{CM}/c", {"metadata": {"resourceVersion": rv},
                                             "data": {"a": "1"}}, MERGE_PATCH)
    assert status == 200
    status, err = await http.patch(f"{CM}/c", {"metadata": {"resourceVersion": rv},
                                               "data": {"a": "2"}}, MERGE_PATCH)
    assert status == 409
    assert err["reason"] == "Conflict"


async def test_patch_missing_object(http: Http) -> None:
    status, err = await http.patch(f"{CM}/none", {"data": {}}, MERGE_PATCH)
    assert status == 404
    assert err["message"] == 'configmaps "none" not found'


async def test_typed_patch(envtest_client: client.ApiClient, envtest: EnvTestServer) -> None:
    v1 = client.CoreV1Api(envtest_client)
    await v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="c"), data={"a": "1"}))
    patched = await v1.patch_namespaced_config_map("c", "default", {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
