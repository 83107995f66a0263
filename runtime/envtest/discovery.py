"""Discovery documents (legacy and aggregated v2) and the OpenAPI v3 index kubectl reads before
`apply`: enough for kubectl to resolve kinds and short names and to trust server-side field
validation."""

from __future__ import annotations

import hashlib
from typing import Any

from runtime.envtest.registry import ALL_VERBS, Registry, ResourceType
from runtime.envtest.store import dumps

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SERVER_VERSION = {"major": "1", "minor": "37", "emulationMajor": "1", "emulationMinor": "37",
                  "minCompatibilityMajor": "1", "minCompatibilityMinor": "36",
                  "gitVersion": "v1.37.0-envtest", "gitCommit": "0" * 40,
                  "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                  "goVersion": "go1.26.0", "compiler": "gc", "platform": "linux/amd64"}
STATUS_VERBS = ["get", "patch", "update"]


def wants_aggregated(accept: str) -> bool:
    """True when the client accepts aggregated discovery v2 (kubectl asks for it first)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=APIGroupDiscoveryList" in params and "v=v2" in params \
                and "g=apidiscovery.k8s.io" in params:
            return True
    return False


def _sorted_groups(registry: Registry) -> list[tuple[str, list[str]]]:
    groups = registry.groups()
    named = sorted(g for g in groups if g)
    return [(g, groups[g]) for g in named]


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": address}]}


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs,
            "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [{k: v for k, v in api_group(g, vs).items() if k not in ("kind", "apiVersion")}
              for g, vs in _sorted_groups(registry)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _legacy_resource(rt: ResourceType) -> dict[str, Any]:
    res: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular,
                           "namespaced": rt.namespaced, "kind": rt.kind, "verbs": list(rt.verbs)}
    if rt.short_names:
        res["shortNames"] = list(rt.short_names)
    if rt.categories:
        res["categories"] = list(rt.categories)
    return res


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.resources(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for rt in sorted(types, key=lambda t: t.plural):
        resources.append(_legacy_resource(rt))
        if rt.has_status:
            resources.append({"name": f"{rt.plural}/status", "singularName": "",
                              "namespaced": rt.namespaced, "kind": rt.kind,
                              "verbs": STATUS_VERBS})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": version if not group else f"{group}/{version}",
            "resources": resources}


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    res: dict[str, Any] = {"resource": rt.plural, "responseKind": kind,
                           "scope": "Namespaced" if rt.namespaced else "Cluster",
                           "singularResource": rt.singular, "verbs": list(rt.verbs)}
    if rt.short_names:
        res["shortNames"] = list(rt.short_names)
    if rt.categories:
        res["categories"] = list(rt.categories)
    if rt.has_status:
        res["subresources"] = [{"subresource": "status", "responseKind": kind,
                                "verbs": STATUS_VERBS}]
    return res


def _aggregated_group(registry: Registry, group: str, versions: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": group, "creationTimestamp": None},
            "versions": [{"version": v, "freshness": "Current",
                          "resources": [_aggregated_resource(rt) for rt in sorted(
                              registry.resources(group, v), key=lambda t: t.plural)]}
                         for v in versions]}


def aggregated(registry: Registry, *, core: bool) -> dict[str, Any]:
    if core:
        items = [_aggregated_group(registry, "", ["v1"])]
    else:
        items = [_aggregated_group(registry, g, vs) for g, vs in _sorted_groups(registry)]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


# -- OpenAPI v3 -------------------------------------------------------------------------------

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _schema_name(rt: ResourceType) -> str:
    if not rt.group:
        return f"io.k8s.api.core.v1.{rt.kind}"
    if rt.custom:
        return ".".join(reversed(rt.group.split("."))) + f".{rt.version}.{rt.kind}"
    return f"io.k8s.api.{rt.group.split('.')[0]}.{rt.version}.{rt.kind}"


def _operation(rt: ResourceType, action: str, schema_ref: str) -> dict[str, Any]:
    return {
        "operationId": f"{action}{rt.kind}",
        "parameters": [{"name": p, "in": "query", "schema": {"type": "string",
                                                              "uniqueItems": True}}
                       for p in _QUERY_PARAMS],
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": {"$ref": schema_ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version,
                                            "kind": rt.kind},
    }


def openapi_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """A permissive OpenAPI v3 document for one group-version: every kind is an object that
    preserves unknown fields, and every object path has a `patch` operation that accepts
    `fieldValidation` (which is what kubectl looks for)."""
    types = registry.resources(group, version)
    if not types:
        return None
    prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in sorted(types, key=lambda t: t.plural):
        name = _schema_name(rt)
        ref = f"#/components/schemas/{name}"
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        schemas[name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "x-kubernetes-group-version-kind": [gvk]}
        scope = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
        if rt.verbs != ALL_VERBS:
            # The real document has only `post` here; kubectl then validates against
            # /openapi/v2, which is not served. The `patch` is where kubectl looks for
            # server-side field validation, so `kubectl create -f` of a review works.
            paths[f"{scope}/{rt.plural}"] = {"post": _operation(rt, "post", ref),
                                             "patch": _operation(rt, "patch", ref)}
            continue
        item = {action: _operation(rt, action, ref)
                for action in ("get", "put", "patch", "delete")}
        paths[f"{scope}/{rt.plural}/{{name}}"] = item
        collection = {action: _operation(rt, verb, ref)
                      for action, verb in (("get", "list"), ("post", "post"))}
        paths[f"{scope}/{rt.plural}"] = collection
        if rt.has_status:
            paths[f"{scope}/{rt.plural}/{{name}}/status"] = {
                action: _operation(rt, action, ref) for action in ("get", "put", "patch")}
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


class OpenAPICache:
    """Serialized per group-version documents and their hashes, rebuilt when CRDs change."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._docs: dict[tuple[str, str], bytes] | None = None

    def invalidate(self) -> None:
        self._docs = None

    def _build(self) -> dict[tuple[str, str], bytes]:
        if self._docs is None:
            docs = {}
            for group, version in self._registry.group_versions():
                doc = openapi_document(self._registry, group, version)
                if doc is not None:
                    docs[(group, version)] = dumps(doc)
            self._docs = docs
        return self._docs

    def index(self) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        for (group, version), raw in sorted(self._build().items()):
            gv = f"api/{version}" if not group else f"apis/{group}/{version}"
            digest = hashlib.sha512(raw).hexdigest()[:128].upper()
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
        return {"paths": paths}

    def document(self, group: str, version: str) -> bytes | None:
        return self._build().get((group, version))
