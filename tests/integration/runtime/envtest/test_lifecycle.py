"""Status subresource, finalizers and namespace termination."""

from __future__ import annotations

from typing import Any

from runtime.envtest.patch import JSON_PATCH, MERGE_PATCH
from tests.integration.runtime.envtest.rawhttp import CM, SVC, Http
from tests.support.objects import service


async def test_status_subresource_separates_writes(http: Http) -> None:
    _, body = await http.post(SVC, {**service("s"), "status": {"loadBalancer": {
        "ingress": [{"hostname": "ignored"}]}}})
    assert body["status"] == {"loadBalancer": {}}
    body["status"] = {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}
    body["spec"]["ports"][0]["port"] = 99
    status, result = await http.put(f"{SVC}/s/status", body)
    assert status == 200
    assert result["status"]["loadBalancer"]["ingress"][0]["hostname"] == "lb.example"
    assert result["spec"]["ports"][0]["port"] == 80  # spec untouched through /status
    assert result["metadata"]["generation"] == 1
    result["status"] = {"loadBalancer": {}}
    result["spec"]["ports"][0]["port"] = 81
    _, main = await http.put(f"{SVC}/s", result)
    assert main["spec"]["ports"][0]["port"] == 81
    assert main["status"]["loadBalancer"]["ingress"][0]["hostname"] == "lb.example"
    status, _ = await http.put(f"{CM}/x/status", {"metadata": {"name": "x"}})
    assert status == 404  # configmaps have no status subresource


async def test_finalizers_hold_deletion(http: Http, envtest: object) -> None:
    await http.post(SVC, service("f", finalizers=["example.com/keep"]))
    status, body = await http.delete(f"{SVC}/f")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    status, body = await http.get(f"{SVC}/f")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"]
    status, err = await http.patch(f"{SVC}/f", {"metadata": {"finalizers": [
        "example.com/keep", "example.com/new"]}}, MERGE_PATCH)
    assert status == 422
    assert "no new finalizers can be added if the object is being deleted" in err["message"]
    status, body = await http.patch(f"{SVC}/f", [{"op": "remove",
                                                  "path": "/metadata/finalizers"}], JSON_PATCH)
    assert status == 200
    status, _ = await http.get(f"{SVC}/f")
    assert status == 404


async def test_namespace_termination(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    path = "/api/v1/namespaces/team/configmaps"
    await http.post(path, {"metadata": {"name": "plain"}})
    await http.post(path, {"metadata": {"name": "held", "finalizers": ["x/y"]}})
    status, ns = await http.delete("/api/v1/namespaces/team")
    assert status == 200
    assert ns["status"]["phase"] == "Terminating"
    status, _ = await http.get(f"{path}/plain")
    assert status == 404
    status, err = await http.post(path, {"metadata": {"name": "new"}})
    assert status == 403
    assert "because it is being terminated" in err["message"]
    status, ns = await http.get("/api/v1/namespaces/team")
    assert status == 200
    assert ns["metadata"]["deletionTimestamp"]
    await http.patch(f"{path}/held", {"metadata": {"finalizers": None}}, MERGE_PATCH)
    status, _ = await http.get("/api/v1/namespaces/team")
    assert status == 404


async def test_empty_namespace_deletes_at_once(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "empty"}})
    status, _body = await http.delete("/api/v1/namespaces/empty")
    assert status == 200
    status, _ = await http.get("/api/v1/namespaces/empty")
    assert status == 404


async def test_garbage_collection_of_dependents(http: Http) -> None:
    _, owner = await http.post(CM, {"metadata": {"name": "owner"}})
    _, other = await http.post(CM, {"metadata": {"name": "other-owner"}})

    def ref(obj: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": obj["metadata"]["name"],
                "uid": obj["metadata"]["uid"]}

    await http.post(CM, {"metadata": {"name": "child", "ownerReferences": [ref(owner)]}})
    await http.post(CM, {"metadata": {"name": "shared",
                                      "ownerReferences": [ref(owner), ref(other)]}})
    await http.post(CM, {"metadata": {"name": "held", "finalizers": ["x/y"],
                                      "ownerReferences": [ref(owner)]}})
    await http.delete(f"{CM}/owner")
    status, _ = await http.get(f"{CM}/child")
    assert status == 404
    status, _ = await http.get(f"{CM}/shared")
    assert status == 200  # another owner still exists
    status, held = await http.get(f"{CM}/held")
    assert held["metadata"]["deletionTimestamp"]
    await http.delete(f"{CM}/other-owner")
    status, _ = await http.get(f"{CM}/shared")
    assert status == 404  # its last owner is gone
    _, parent = await http.post(CM, {"metadata": {"name": "parent"}})
    await http.post(CM, {"metadata": {"name": "kept", "ownerReferences": [ref(parent)]}})
    await http.delete(f"{CM}/parent", {"propagationPolicy": "Orphan"})
    status, kept = await http.get(f"{CM}/kept")
    assert status == 200
    assert "ownerReferences" not in kept["metadata"]
