"""Raw HTTP to the local API server, for assertions on exact wire behaviour: a thin JSON
client, the paths the tests use, and a CRD to serve."""

from __future__ import annotations

import json
from typing import Any

import aiohttp


class Http:
    """A thin JSON client: `await http.request("GET", path)` → (status, body)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json",
                      params: dict[str, str] | None = None,
                      headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": content_type, **(headers or {})}
        async with self.session.request(method, path, data=data, params=params,
                                        headers=hdrs) as resp:
            raw = await resp.read()
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, raw.decode()

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: Any, **params: str) -> tuple[int, Any]:
        return await self.request("POST", path, body, params=params or None)

    async def put(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body)

    async def patch(self, path: str, body: Any, content_type: str) -> tuple[int, Any]:
        return await self.request("PATCH", path, body, content_type=content_type)

    async def delete(self, path: str, body: Any = None) -> tuple[int, Any]:
        return await self.request("DELETE", path, body)


SVC = "/api/v1/namespaces/default/services"
CM = "/api/v1/namespaces/default/configmaps"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "shortNames": ["wd"], "categories": ["all"]},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object",
                               "x-kubernetes-preserve-unknown-fields": True}}}]},
}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
