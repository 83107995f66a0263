"""Discovery (legacy and aggregated) and the OpenAPI v3 documents kubectl reads."""

from __future__ import annotations

from kubernetes_asyncio import client

from runtime.envtest.discovery import AGGREGATED_V2
from tests.integration.runtime.envtest.rawhttp import Http


async def test_version(envtest_client: client.ApiClient) -> None:
    info = await client.VersionApi(envtest_client).get_code()
    assert (info.major, info.minor) == ("1", "37")


async def test_legacy_discovery(http: Http) -> None:
    _, api = await http.get("/api")
    assert api["kind"] == "APIVersions"
    assert api["versions"] == ["v1"]
    _, core = await http.get("/api/v1")
    resources = {r["name"]: r for r in core["resources"]}
    assert resources["services"]["shortNames"] == ["svc"]
    assert resources["services"]["namespaced"] is True
    assert resources["nodes"]["namespaced"] is False
    assert "services/status" in resources
    assert "watch" in resources["pods"]["verbs"]
    _, groups = await http.get("/apis")
    names = [g["name"] for g in groups["groups"]]
    for group in ("apiextensions.k8s.io", "coordination.k8s.io", "discovery.k8s.io",
                  "events.k8s.io", "networking.k8s.io"):
        assert group in names
    _, group = await http.get("/apis/networking.k8s.io")
    assert group["preferredVersion"]["groupVersion"] == "networking.k8s.io/v1"
    _, net = await http.get("/apis/networking.k8s.io/v1")
    assert {r["name"] for r in net["resources"]} == {"ingresses", "ingresses/status",
                                                    "ingressclasses", "networkpolicies"}
    status, _ = await http.get("/apis/nothing.example.com/v1")
    assert status == 404


async def test_aggregated_discovery(http: Http) -> None:
    accept = f"{AGGREGATED_V2},application/json"
    async with http.session.get("/apis", headers={"Accept": accept}) as resp:
        assert resp.headers["Content-Type"] == AGGREGATED_V2
        body = await resp.json(content_type=None)
    assert body["kind"] == "APIGroupDiscoveryList"
    groups = {item["metadata"]["name"]: item for item in body["items"]}
    ingress = next(r for r in groups["networking.k8s.io"]["versions"][0]["resources"]
                   if r["resource"] == "ingresses")
    assert ingress["scope"] == "Namespaced"
    assert ingress["shortNames"] == ["ing"]
    assert ingress["subresources"][0]["subresource"] == "status"
    async with http.session.get("/api", headers={"Accept": accept}) as resp:
        core = await resp.json(content_type=None)
    assert core["items"][0]["metadata"]["name"] == ""


async def test_openapi_v3(http: Http) -> None:
    _, index = await http.get("/openapi/v3")
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    status, doc = await http.get(url)
    assert status == 200
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                        "kind": "Service"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    status, _ = await http.get("/openapi/v2")
    assert status == 404


async def test_table_answers(http: Http) -> None:
    await http.post("/api/v1/namespaces/default/configmaps",
                    {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with http.session.get("/api/v1/namespaces/default/configmaps",
                                headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["c", 2]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    async with http.session.get("/api/v1/namespaces/default/configmaps/c",
                                params={"includeObject": "Object"},
                                headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert table["rows"][0]["object"]["data"] == {"a": "1", "b": "2"}
    async with http.session.get("/api/v1/namespaces/default/configmaps/c",
                                headers={"Accept": "application/json"}) as resp:
        assert (await resp.json())["kind"] == "ConfigMap"
