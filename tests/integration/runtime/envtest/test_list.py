"""Selectors, pagination, cross-namespace lists and list resourceVersions."""

from __future__ import annotations

import pytest

from runtime.envtest import EnvTestServer
from runtime.envtest.selectors import labels_match, parse_label_selector
from runtime.envtest.status import StatusError
from tests.integration.runtime.envtest.rawhttp import SVC, Http
from tests.support.objects import service


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("app in (web, db)", ["a", "b", "c"]),
    ("app notin (web)", ["c", "d"]),
    ("tier", ["a"]),
    ("!tier", ["b", "c", "d"]),
    ("app=web,tier=front", ["a"]),
    ("app in (web,db),!tier", ["b", "c"]),
])
async def test_label_selectors(http: Http, selector: str, expected: list[str]) -> None:
    await http.post(SVC, service("a", labels={"app": "web", "tier": "front"}))
    await http.post(SVC, service("b", labels={"app": "web"}))
    await http.post(SVC, service("c", labels={"app": "db"}))
    await http.post(SVC, service("d"))
    status, body = await http.get(SVC, labelSelector=selector)
    assert status == 200
    assert [i["metadata"]["name"] for i in body["items"]] == expected


def test_label_selector_parse_errors() -> None:
    for bad in ("app in web", "=x", "a b c", "app=(x"):
        with pytest.raises(StatusError):
            parse_label_selector(bad)
    assert labels_match(parse_label_selector("n>3"), {"metadata": {"labels": {"n": "4"}}})


async def test_field_selectors_and_all_namespaces(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await http.post(SVC, service("a"))
    await http.post("/api/v1/namespaces/other/services", service("a"))
    await http.post("/api/v1/namespaces/other/services", service("b"))
    _, body = await http.get("/api/v1/services")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        ("default", "a"), ("other", "a"), ("other", "b")]
    _, body = await http.get("/api/v1/services", fieldSelector="metadata.name=a")
    assert len(body["items"]) == 2
    _, body = await http.get("/api/v1/services", fieldSelector="metadata.namespace!=default")
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    _, body = await http.get("/api/v1/services",
                             fieldSelector="metadata.namespace==other,metadata.name!=a")
    assert [i["metadata"]["name"] for i in body["items"]] == ["b"]
    status, err = await http.get("/api/v1/services", fieldSelector="spec.bogus=1")
    assert status == 400
    assert err["message"] == "field label not supported: spec.bogus"


async def test_list_items_and_revision(http: Http, envtest: EnvTestServer) -> None:
    await http.post(SVC, service("a"))
    _, body = await http.get(SVC)
    assert body["kind"] == "ServiceList"
    assert body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == str(envtest.revision)
    # Items of built-in lists carry no apiVersion/kind, as the real server sends them.
    assert "kind" not in body["items"][0]
    for params in ({"resourceVersion": "0"},
                   {"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"}):
        status, body = await http.get(SVC, **params)
        assert status == 200
        assert len(body["items"]) == 1


async def test_pagination_is_consistent(http: Http, envtest: EnvTestServer) -> None:
    for i in range(7):
        await http.post(SVC, service(f"s{i}"))
    _, page = await http.get(SVC, limit="3")
    names = [i["metadata"]["name"] for i in page["items"]]
    revision = page["metadata"]["resourceVersion"]
    assert page["metadata"]["remainingItemCount"] == 4
    await http.post(SVC, service("s99"))  # not part of the snapshot being paged
    await http.delete(f"{SVC}/s6")
    token = page["metadata"]["continue"]
    while token:
        status, page = await http.get(SVC, limit="3", **{"continue": token})
        assert status == 200
        assert page["metadata"]["resourceVersion"] == revision
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue", "")
    assert names == [f"s{i}" for i in range(7)]
    status, err = await http.get(SVC, **{"continue": "garbage!"})
    assert status == 400
    _, page = await http.get(SVC, limit="2")
    await http.post(SVC, service("later"))
    envtest.compact()
    status, err = await http.get(SVC, limit="2", **{"continue": page["metadata"]["continue"]})
    assert status == 410
    assert err["reason"] == "Expired"
