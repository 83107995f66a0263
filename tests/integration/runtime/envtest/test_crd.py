"""CustomResourceDefinitions: created CRDs are served, established, and withdrawn on delete."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from runtime.envtest import EnvTestServer
from runtime.envtest.patch import MERGE_PATCH, STRATEGIC_MERGE_PATCH
from tests.integration.runtime.envtest.rawhttp import CRDS, WIDGET_CRD, WIDGETS, Http


async def test_crd_is_served_and_established(http: Http) -> None:
    status, _ = await http.get(WIDGETS)
    assert status == 404
    status, _created = await http.post(CRDS, WIDGET_CRD)
    assert status == 201
    status, crd = await http.get(f"{CRDS}/widgets.example.com")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["wd"]
    status, widget = await http.post(WIDGETS, {"apiVersion": "example.com/v1",
                                               "kind": "Widget", "metadata": {"name": "w"},
                                               "spec": {"size": 1}, "status": {"ready": True}})
    assert status == 201
    assert "status" not in widget  # status subresource declared: create ignores status
    status, listed = await http.get(WIDGETS)
    assert listed["kind"] == "WidgetList"
    assert listed["items"][0]["kind"] == "Widget"  # custom resource items keep their kind
    status, result = await http.put(f"{WIDGETS}/w/status", {**widget, "status": {"ready": True}})
    assert result["status"] == {"ready": True}
    # Custom resources refuse unconditional updates and strategic merge patches.
    no_rv = copy.deepcopy(result)
    del no_rv["metadata"]["resourceVersion"]
    status, err = await http.put(f"{WIDGETS}/w", no_rv)
    assert status == 422
    assert "must be specified for an update" in err["message"]
    status, err = await http.patch(f"{WIDGETS}/w", {"spec": {"size": 2}}, STRATEGIC_MERGE_PATCH)
    assert status == 415
    status, result = await http.patch(f"{WIDGETS}/w", {"spec": {"size": 2}}, MERGE_PATCH)
    assert result["metadata"]["generation"] == 2
    status, disco = await http.get("/apis/example.com/v1")
    assert disco["resources"][0]["name"] == "widgets"
    assert disco["resources"][1]["name"] == "widgets/status"
    status, index = await http.get("/openapi/v3")
    assert "apis/example.com/v1" in index["paths"]


async def test_cluster_scoped_crd(http: Http) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    await http.post(CRDS, crd)
    status, body = await http.post("/apis/example.com/v1/gadgets", {"metadata": {"name": "g"}})
    assert status == 201
    assert "namespace" not in body["metadata"]
    status, _ = await http.post("/apis/example.com/v1/namespaces/default/gadgets",
                                {"metadata": {"name": "g"}})
    assert status == 404


async def test_deleting_crd_withdraws_resource(http: Http, envtest: EnvTestServer) -> None:
    await http.post(CRDS, WIDGET_CRD)
    await http.post(WIDGETS, {"metadata": {"name": "w1"}})
    await http.post(WIDGETS, {"metadata": {"name": "w2", "finalizers": ["x/y"]}})
    status, _ = await http.delete(f"{CRDS}/widgets.example.com")
    assert status == 200
    # As the real server: the CRD is Terminating while an object waits for its finalizers; the
    # others are gone, nothing new may be created, and the waiting one can still be updated.
    status, crd = await http.get(f"{CRDS}/widgets.example.com")
    assert status == 200
    assert crd["metadata"]["deletionTimestamp"]
    assert {"type": "Terminating", "status": "True"}.items() <= next(
        c for c in crd["status"]["conditions"] if c["type"] == "Terminating").items()
    status, listed = await http.get(WIDGETS)
    assert [w["metadata"]["name"] for w in listed["items"]] == ["w2"]
    assert listed["items"][0]["metadata"]["deletionTimestamp"]
    status, err = await http.post(WIDGETS, {"metadata": {"name": "w3"}})
    assert status == 405
    assert err["message"] == ("create not allowed while custom resource definition is "
                              "terminating")
    status, _ = await http.patch(f"{WIDGETS}/w2", {"metadata": {"finalizers": None}},
                                 "application/merge-patch+json")
    assert status == 200
    # The last object gone, the CRD goes.
    status, _ = await http.get(WIDGETS)
    assert status == 404
    status, _ = await http.get(f"{CRDS}/widgets.example.com")
    assert status == 404
    status, index = await http.get("/openapi/v3")
    assert "apis/example.com/v1" not in index["paths"]
    # Re-creating starts empty.
    await http.post(CRDS, WIDGET_CRD)
    status, listed = await http.get(WIDGETS)
    assert listed["items"] == []


async def test_deleting_crd_without_finalized_objects_is_immediate(http: Http) -> None:
    await http.post(CRDS, WIDGET_CRD)
    await http.post(WIDGETS, {"metadata": {"name": "w1"}})
    status, _ = await http.delete(f"{CRDS}/widgets.example.com")
    assert status == 200
    status, _ = await http.get(f"{CRDS}/widgets.example.com")
    assert status == 404


async def test_invalid_crd_is_refused(http: Http) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "wrong.example.com"
    status, err = await http.post(CRDS, crd)
    assert status == 422
    assert 'must be spec.names.plural+"."+spec.group' in err["message"]


async def test_crds_loaded_at_start(tmp_path: Path) -> None:
    (tmp_path / "widgets.yaml").write_text(yaml.safe_dump(WIDGET_CRD))
    async with EnvTestServer(crds=[tmp_path]) as server:
        assert server.api.registry.lookup("example.com", "v1", "widgets") is not None
    (tmp_path / "bad.yaml").write_text("kind: ConfigMap\n")
    server = EnvTestServer(crds=[tmp_path / "bad.yaml"])
    with pytest.raises(ValueError, match="expected only CustomResourceDefinition documents"):
        await server.start()
