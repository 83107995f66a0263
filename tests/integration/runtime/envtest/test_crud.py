"""Create/get/update/delete with the real server's metadata rules and error Status bodies."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from runtime.envtest import EnvTestServer
from tests.integration.runtime.envtest.rawhttp import CM, SVC, Http
from tests.support.objects import service


async def test_initial_namespaces_exist(http: Http) -> None:
    status, body = await http.get("/api/v1/namespaces")
    assert status == 200
    names = [item["metadata"]["name"] for item in body["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert body["items"][0]["status"]["phase"] == "Active"


async def test_typed_create_get_list(envtest_client: client.ApiClient,
                                     envtest: EnvTestServer) -> None:
    v1 = client.CoreV1Api(envtest_client)
    before = envtest.revision
    created = await v1.create_namespaced_service("default", client.V1Service(
        metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)])))
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert int(created.metadata.resource_version) == before + 1 == envtest.revision
    assert created.metadata.generation == 1
    assert created.spec.ports[0].protocol == "TCP"
    got = await v1.read_namespaced_service("web", "default")
    assert got.metadata.uid == created.metadata.uid
    listed = await v1.list_namespaced_service("default")
    assert [s.metadata.name for s in listed.items] == ["web"]
    assert listed.metadata.resource_version == str(envtest.revision)


async def test_revision_is_global_and_monotonic(http: Http) -> None:
    revisions = []
    for i in range(3):
        _, body = await http.post(SVC, service(f"s{i}"))
        revisions.append(int(body["metadata"]["resourceVersion"]))
        _, body = await http.post(CM, {"metadata": {"name": f"c{i}"}})
        revisions.append(int(body["metadata"]["resourceVersion"]))
    assert revisions == sorted(revisions)
    assert len(set(revisions)) == len(revisions)


async def test_generate_name_and_managed_fields_dropped(http: Http) -> None:
    status, body = await http.post(CM, {"metadata": {
        "generateName": "cfg-", "managedFields": [{"manager": "x"}]}, "data": {"a": "1"}})
    assert status == 201
    name = body["metadata"]["name"]
    assert name.startswith("cfg-")
    assert len(name) == len("cfg-") + 5
    assert "managedFields" not in body["metadata"]
    status, got = await http.get(f"{CM}/{name}")
    assert status == 200
    assert got["data"] == {"a": "1"}


async def test_generation_bumps_only_on_spec_change(http: Http) -> None:
    _, body = await http.post(SVC, service("web"))
    body["metadata"]["labels"] = {"a": "b"}
    _, body = await http.put(f"{SVC}/web", body)
    assert body["metadata"]["generation"] == 1
    body["spec"]["ports"][0]["port"] = 81
    _, body = await http.put(f"{SVC}/web", body)
    assert body["metadata"]["generation"] == 2
    # ConfigMaps have no spec: data changes count.
    _, cm = await http.post(CM, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    cm["metadata"]["annotations"] = {"x": "y"}
    _, cm = await http.put(f"{CM}/c", cm)
    assert cm["metadata"]["generation"] == 1
    cm["data"] = {"a": "2"}
    _, cm = await http.put(f"{CM}/c", cm)
    assert cm["metadata"]["generation"] == 2


async def test_noop_update_keeps_revision(http: Http, envtest: EnvTestServer) -> None:
    _, body = await http.post(CM, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    revision = envtest.revision
    status, same = await http.put(f"{CM}/c", body)
    assert status == 200
    assert same["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    assert envtest.revision == revision


async def test_update_conflict_and_unconditional(http: Http) -> None:
    _, body = await http.post(SVC, service("x"))
    stale = dict(body)
    body["metadata"]["labels"] = {"v": "1"}
    status, updated = await http.put(f"{SVC}/x", body)
    assert status == 200
    status, err = await http.put(f"{SVC}/x", stale)
    assert status == 409
    assert err["reason"] == "Conflict"
    assert err["message"] == ('Operation cannot be fulfilled on services "x": the object has '
                              "been modified; please apply your changes to the latest version "
                              "and try again")
    assert err["details"] == {"name": "x", "kind": "services"}
    assert err["kind"] == "Status"
    assert err["status"] == "Failure"
    unconditional = dict(updated)
    unconditional["metadata"] = {"name": "x", "labels": {"v": "2"}}
    status, body = await http.put(f"{SVC}/x", unconditional)
    assert status == 200
    assert body["metadata"]["labels"] == {"v": "2"}
    assert body["metadata"]["uid"] == updated["metadata"]["uid"]


async def test_error_statuses(http: Http) -> None:
    status, err = await http.get(f"{SVC}/missing")
    assert (status, err["reason"], err["message"]) == (404, "NotFound",
                                                      'services "missing" not found')
    assert err["details"] == {"name": "missing", "kind": "services"}
    await http.post(SVC, service("dup"))
    status, err = await http.post(SVC, service("dup"))
    assert (status, err["reason"], err["message"]) == (409, "AlreadyExists",
                                                      'services "dup" already exists')
    status, err = await http.post("/api/v1/namespaces/nope/services", service("a"))
    assert (status, err["reason"], err["message"]) == (404, "NotFound",
                                                      'namespaces "nope" not found')
    status, err = await http.request("POST", SVC, None, content_type="application/json")
    assert status == 400
    async with http.session.post(SVC, data=b"{not json",
                                 headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 400
        assert (await resp.json())["reason"] == "BadRequest"
    status, err = await http.post(SVC, {"metadata": {}, "spec": {}})
    assert status == 422
    assert err["reason"] == "Invalid"
    assert err["message"] == ('Service "" is invalid: metadata.name: Required value: name or '
                              "generateName is required")
    status, err = await http.post(SVC, service("Bad_Name"))
    assert status == 422
    assert err["details"]["causes"][0]["field"] == "metadata.name"
    status, err = await http.post(SVC, service("a", namespace="other"))
    assert status == 400
    assert "does not match the namespace" in err["message"]
    _, body = await http.post(SVC, service("named"))
    status, err = await http.put(f"{SVC}/other", body)
    assert status == 400
    assert err["message"] == "the name of the object (named) does not match the name on the " \
                             "URL (other)"
    status, err = await http.get("/api/v1/namespaces/default/nothings")
    assert status == 404


async def test_typed_client_raises_api_exception(envtest_client: client.ApiClient) -> None:
    v1 = client.CoreV1Api(envtest_client)
    with pytest.raises(ApiException) as info:
        await v1.read_namespaced_config_map("nope", "default")
    assert info.value.status == 404


async def test_delete_answers(http: Http, envtest: EnvTestServer) -> None:
    await http.post(SVC, service("s"))
    status, body = await http.delete(f"{SVC}/s")
    assert status == 200
    assert body["kind"] == "Service"  # services answer with the object
    await http.post(CM, {"metadata": {"name": "c"}})
    status, body = await http.delete(f"{CM}/c", {"propagationPolicy": "Background"})
    assert status == 200
    assert body["kind"] == "Status"
    assert body["status"] == "Success"
    assert body["details"]["name"] == "c"
    status, _ = await http.get(f"{CM}/c")
    assert status == 404
    status, err = await http.delete(f"{CM}/c")
    assert status == 404
    assert err["message"] == 'configmaps "c" not found'


async def test_dry_run_does_not_persist(http: Http, envtest: EnvTestServer) -> None:
    revision = envtest.revision
    status, body = await http.post(CM, {"metadata": {"name": "dry"}}, dryRun="All")
    assert status == 201
    assert body["metadata"]["name"] == "dry"
    assert envtest.revision == revision
    status, _ = await http.get(f"{CM}/dry")
    assert status == 404
    status, _err = await http.post(CM, {"metadata": {"name": "dry"}}, dryRun="Some")
    assert status == 400


async def test_cluster_scoped_and_group_kinds(http: Http) -> None:
    status, node = await http.post("/api/v1/nodes", {"metadata": {"name": "n1"}})
    assert status == 201
    assert "namespace" not in node["metadata"]
    ing = {"metadata": {"name": "i"}, "spec": {"rules": []}}
    path = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
    status, _ = await http.post(path, ing)
    assert status == 201
    status, err = await http.get(f"{path}/missing")
    assert err["message"] == 'ingresses.networking.k8s.io "missing" not found'
    assert err["details"] == {"name": "missing", "group": "networking.k8s.io",
                              "kind": "ingresses"}
    for path, body in [
        ("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
         {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}}),
        ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
         {"metadata": {"name": "es"}, "addressType": "IPv4", "endpoints": []}),
        ("/apis/events.k8s.io/v1/namespaces/default/events",
         {"metadata": {"name": "e.1"}, "reason": "X"}),
        ("/api/v1/namespaces/default/events", {"metadata": {"name": "e.2"}, "reason": "X"}),
        ("/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}, "data": {}}),
        ("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "sa"}}),
        ("/api/v1/namespaces/default/endpoints", {"metadata": {"name": "ep"}}),
        ("/api/v1/namespaces/default/pods", {"metadata": {"name": "p"}, "spec": {}}),
        ("/apis/networking.k8s.io/v1/ingressclasses", {"metadata": {"name": "alb"}}),
    ]:
        status, created = await http.post(path, body)
        assert status == 201, (path, created)
        status, _ = await http.get(f"{path}/{created['metadata']['name']}")
        assert status == 200
