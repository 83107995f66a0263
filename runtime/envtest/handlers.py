"""HTTP handlers for resource verbs and discovery. Every answer is JSON; protobuf Accepts get
JSON as well (clients fall back to it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from runtime.envtest import discovery, tables
from runtime.envtest.access import is_review
from runtime.envtest.api import ObjectAPI, encode_for
from runtime.envtest.auth import User
from runtime.envtest.listing import Lister
from runtime.envtest.registry import Registry, ResourceType
from runtime.envtest.reviews import check_kind
from runtime.envtest.routes import (
    Target,
    dry_run,
    int_param,
    json_response,
    method_not_allowed,
    not_found_path,
    read_body,
)
from runtime.envtest.selectors import (
    FieldRequirement,
    matcher,
    parse_field_selector,
    parse_label_selector,
)
from runtime.envtest.status import StatusError, bad_request, gone
from runtime.envtest.store import Entry, Store
from runtime.envtest.watch import WatchStream, error_line
from runtime.envtest.writes import Caller, WritePath

# Answers a review kind for a caller: (kind, admitted body, user) -> the review with status.
ReviewAnswer = Callable[[ResourceType, Any, User | None], dict[str, Any]]


class WatchHub:
    """The open watch streams."""

    def __init__(self) -> None:
        self.streams: set[WatchStream] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def add(self, stream: WatchStream) -> None:
        self.streams.add(stream)
        self._idle.clear()

    def remove(self, stream: WatchStream) -> None:
        self.streams.discard(stream)
        if not self.streams:
            self._idle.set()

    async def idle(self) -> None:
        """Wait until no stream is open."""
        await self._idle.wait()

    def close_all(self) -> None:
        for stream in list(self.streams):
            stream.close()

    def close_for(self, types: list[ResourceType]) -> None:
        gone_keys = {(rt.group, rt.plural) for rt in types}
        for stream in list(self.streams):
            if (stream.rt.group, stream.rt.plural) in gone_keys:
                stream.close()


def _invalid_list_options(problems: list[tuple[str, str]]) -> StatusError:
    text = "; ".join(f"{f}: Forbidden: {m}" for f, m in problems)
    return StatusError(422, f'ListOptions.meta.k8s.io "" is invalid: {text}', details={
        "group": "meta.k8s.io", "kind": "ListOptions",
        "causes": [{"reason": "FieldValueForbidden", "message": f"Forbidden: {m}", "field": f}
                   for f, m in problems]})


class ApiHandlers:
    def __init__(self, *, api: ObjectAPI, writes: WritePath, reviews: ReviewAnswer,
                 store: Store, registry: Registry, hub: WatchHub,
                 openapi: discovery.OpenAPICache, bookmark_interval: Callable[[], float],
                 address: Callable[[], str], wall: Callable[[], float]) -> None:
        self.api = api
        self.writes = writes
        self._reviews = reviews
        self._wall = wall
        self.store = store
        self.registry = registry
        self.hub = hub
        self.openapi = openapi
        self.lister = Lister()
        self._interval = bookmark_interval
        self._address = address

    # -- non-resource paths ----------------------------------------------------------------

    async def non_resource(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            raise method_not_allowed(request.method, request.path)
        path = request.path.rstrip("/") or "/"
        segs = [s for s in path.split("/") if s]
        aggregated = discovery.wants_aggregated(request.headers.get("Accept", ""))
        if path == "/version":
            return json_response(discovery.SERVER_VERSION)
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/api":
            if aggregated:
                return json_response(discovery.aggregated(self.registry, core=True),
                                     content_type=discovery.AGGREGATED_V2)
            return json_response(discovery.api_versions(self._address()))
        if path == "/apis":
            if aggregated:
                return json_response(discovery.aggregated(self.registry, core=False),
                                     content_type=discovery.AGGREGATED_V2)
            return json_response(discovery.api_group_list(self.registry))
        if len(segs) == 2 and segs[0] == "api":
            doc = discovery.api_resource_list(self.registry, "", segs[1])
            if doc is not None:
                return json_response(doc)
        if len(segs) == 2 and segs[0] == "apis":
            versions = self.registry.groups().get(segs[1])
            if versions:
                return json_response(discovery.api_group(segs[1], versions))
        if len(segs) == 3 and segs[0] == "apis":
            doc = discovery.api_resource_list(self.registry, segs[1], segs[2])
            if doc is not None:
                return json_response(doc)
        if path == "/openapi/v3":
            return json_response(self.openapi.index())
        if len(segs) >= 4 and segs[:2] == ["openapi", "v3"]:
            raw = None
            if segs[2] == "api" and len(segs) == 4:
                raw = self.openapi.document("", segs[3])
            elif segs[2] == "apis" and len(segs) == 5:
                raw = self.openapi.document(segs[3], segs[4])
            if raw is not None:
                return json_response(raw)
        raise not_found_path()

    # -- resources -------------------------------------------------------------------------

    async def resource(self, request: web.Request, target: Target,
                       caller: Caller) -> web.StreamResponse:
        verb = target.verb
        if verb == "get":
            return self._get(request, target)
        if verb == "list":
            return self._list(request, target)
        if verb == "watch":
            return await self._watch(request, target)
        if verb == "create":
            if is_review(target.rt):
                return await self._review(request, target, caller)
            return await self._create(request, target, caller)
        if verb == "update":
            return await self._update(request, target, caller)
        if verb == "patch":
            return await self._patch(request, target, caller)
        if verb == "delete":
            return await self._delete(request, target, caller)
        return await self._delete_collection(request, target, caller)

    def _namespace(self, target: Target, *, required: bool) -> str:
        if not target.rt.namespaced:
            return ""
        if target.namespace is None:
            if required:
                raise not_found_path()
            return ""
        return target.namespace

    def _table(self, request: web.Request) -> str | None:
        return tables.wanted(request.headers.get("Accept", ""))

    def _table_body(self, target: Target, entries: list[Entry], api_version: str, *,
                    list_meta: dict[str, Any], headers: bool = True) -> dict[str, Any]:
        include = target.query.get("includeObject", "Metadata")
        if include not in ("None", "Metadata", "Object"):
            raise bad_request(f'includeObject: Unsupported value: "{include}": supported '
                              'values: "None", "Metadata", "Object"')
        return tables.table(target.rt, entries, api_version=api_version, revision=None,
                            include=include, now=self._wall(), headers=headers,
                            list_meta=list_meta)

    def _get(self, request: web.Request, target: Target) -> web.Response:
        assert target.name is not None
        entry = self.api.get(target.rt, self._namespace(target, required=True), target.name)
        table_version = self._table(request)
        if table_version is not None:
            meta = {"resourceVersion": entry.obj["metadata"]["resourceVersion"]}
            return json_response(self._table_body(target, [entry], table_version,
                                                  list_meta=meta))
        return json_response(encode_for(entry, target.rt))

    def _selection(self, target: Target) -> Callable[[Any], bool] | None:
        labels = parse_label_selector(target.query.get("labelSelector", ""))
        fields = parse_field_selector(target.query.get("fieldSelector", ""), target.rt)
        if target.name is not None:
            fields = (*fields, FieldRequirement(("metadata", "name"), True, target.name))
        return matcher(labels, fields)

    def _list(self, request: web.Request, target: Target) -> web.Response:
        query = target.query
        match = self._selection(target)
        limit = int_param(query, "limit") or 0
        token = query.get("continue", "")
        rv_match = query.get("resourceVersionMatch", "")
        rv = query.get("resourceVersion", "")
        if rv_match not in ("", "NotOlderThan", "Exact"):
            raise bad_request(f'resourceVersionMatch: Unsupported value: "{rv_match}": '
                              'supported values: "Exact", "NotOlderThan"')
        if rv_match == "Exact" and rv:
            wanted = _revision(rv)
            if wanted < self.store.compacted and wanted != self.store.revision:
                raise gone("The resourceVersion for the provided list is too old.")
        namespace = target.namespace if target.rt.namespaced else None
        entries = [] if token else self.api.entries(target.rt, namespace)
        table_version = self._table(request)
        if table_version is not None:
            page, meta = self.lister.select(
                entries, revision=self.store.revision, compacted=self.store.compacted,
                match=match, limit=limit, token=token, count_remaining=match is None)
            return json_response(self._table_body(target, page, table_version,
                                                  list_meta=meta))
        body = self.lister.page(target.rt, entries, revision=self.store.revision,
                                compacted=self.store.compacted, match=match, limit=limit,
                                token=token, count_remaining=match is None)
        return json_response(body)

    async def _watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        query = target.query
        rt = target.rt
        match = self._selection(target)
        rv = query.get("resourceVersion", "")
        send_initial = query.get("sendInitialEvents", "").lower()
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        timeout = int_param(query, "timeoutSeconds")
        if send_initial == "true":
            problems = []
            if query.get("resourceVersionMatch") != "NotOlderThan":
                problems.append(("resourceVersionMatch", "sendInitialEvents requires setting "
                                 "resourceVersionMatch to NotOlderThan"))
            if not bookmarks:
                problems.append(("allowWatchBookmarks", "sendInitialEvents requires setting "
                                 "allowWatchBookmarks to true"))
            if problems:
                raise _invalid_list_options(problems)
        namespace = target.namespace if rt.namespaced else None
        table_version = self._table(request)
        as_table: Callable[[Entry], Any] | None = None
        if table_version is not None:
            version = table_version

            def as_table(entry: Entry) -> Any:
                return self._table_body(target, [entry], version, list_meta={})

        stream = WatchStream(rt=rt, namespace=namespace, match=match, bookmarks=bookmarks,
                             timeout=float(timeout) if timeout else None,
                             bookmark_interval=self._interval,
                             revision=lambda: self.store.revision, as_table=as_table)
        first: list[bytes] = []
        # From here to subscribe() nothing awaits, so no event can slip between the two.
        if send_initial == "true" or (rv in ("", "0") and send_initial != "false"):
            for entry in self.api.entries(rt, namespace):
                line = stream.initial_line(entry)
                if line is not None:
                    first.append(line)
            if send_initial == "true":
                first.append(stream.bookmark_line(initial_events_end=True))
        elif rv not in ("", "0"):
            since = _revision(rv)
            events = self.store.events_since(rt.store_key, since)
            if events is None:
                return await _single_error(request, error_line(
                    410, f"too old resource version: {since} ({self.store.compacted})",
                    "Expired"))
            for event in events:
                if namespace is not None and event.namespace != namespace:
                    continue
                line = stream.render(event)
                if line is not None:
                    first.append(line)
        self.store.subscribe(rt.store_key, stream.push)
        self.hub.add(stream)
        try:
            return await stream.serve(request, first)
        finally:
            self.store.unsubscribe(rt.store_key, stream.push)
            self.hub.remove(stream)

    async def _review(self, request: web.Request, target: Target,
                      caller: Caller) -> web.Response:
        rt = target.rt
        body = await read_body(request)
        if body is None and rt.plural == "selfsubjectreviews":
            body = {}  # `kubectl auth whoami` may send nothing
        admitted = await self.writes.review(rt, check_kind(rt, body), caller=caller,
                                            query=target.query,
                                            decode=lambda obj: check_kind(rt, obj))
        return json_response(self._reviews(rt, admitted, caller.user), status=201)

    async def _create(self, request: web.Request, target: Target,
                      caller: Caller) -> web.Response:
        if target.rt.namespaced and target.namespace is None:
            raise method_not_allowed(request.method, request.path)
        body = await read_body(request)
        entry = await self.writes.create(target.rt, self._namespace(target, required=True), body,
                                         caller=caller, query=target.query,
                                         dry_run=dry_run(target.query))
        return json_response(encode_for(entry, target.rt), status=201)

    async def _update(self, request: web.Request, target: Target,
                      caller: Caller) -> web.Response:
        assert target.name is not None
        body = await read_body(request)
        entry = await self.writes.update(target.rt, self._namespace(target, required=True),
                                         target.name, body, subresource=target.subresource,
                                         caller=caller, query=target.query,
                                         dry_run=dry_run(target.query))
        return json_response(encode_for(entry, target.rt))

    async def _patch(self, request: web.Request, target: Target,
                     caller: Caller) -> web.Response:
        assert target.name is not None
        content_type = request.content_type
        if content_type == "application/apply-patch+yaml":
            raise StatusError(415, "server-side apply is not supported by this server")
        body = await read_body(request)
        entry = await self.writes.patch(target.rt, self._namespace(target, required=True),
                                        target.name, content_type, body,
                                        subresource=target.subresource, caller=caller,
                                        query=target.query, dry_run=dry_run(target.query))
        return json_response(encode_for(entry, target.rt))

    async def _delete(self, request: web.Request, target: Target,
                      caller: Caller) -> web.Response:
        assert target.name is not None
        options = await read_body(request)
        if options is not None and not isinstance(options, dict):
            raise bad_request("the body of the request is not a DeleteOptions object")
        dry = dry_run(target.query) or (options or {}).get("dryRun") == ["All"]
        policy = target.query.get("propagationPolicy")
        if policy:
            options = {**(options or {}), "propagationPolicy": policy}
        rt = target.rt
        entry, deleted = await self.writes.delete(rt, self._namespace(target, required=True),
                                                  target.name, options, caller=caller,
                                                  dry_run=dry)
        if rt.returns_deleted_object or not deleted:
            return json_response(encode_for(entry, rt))
        return json_response(_success(rt, entry.name, entry.obj["metadata"].get("uid", "")))

    async def _delete_collection(self, request: web.Request, target: Target,
                                 caller: Caller) -> web.Response:
        options = await read_body(request)
        if options is not None and not isinstance(options, dict):
            raise bad_request("the body of the request is not a DeleteOptions object")
        match = self._selection(target)
        rt = target.rt
        namespace = target.namespace if rt.namespaced else None
        dry = dry_run(target.query)
        deleted = []
        for entry in self.api.entries(rt, namespace):
            if match is None or match(entry.obj):
                try:
                    # Each item is admitted on its own, as the real server deletes them.
                    gone_entry, _ = await self.writes.delete(rt, entry.namespace, entry.name,
                                                             options, caller=caller,
                                                             dry_run=dry)
                except StatusError as err:
                    if err.code == 404:
                        continue  # deleted meanwhile
                    raise
                deleted.append(gone_entry)
        body = self.lister.page(rt, deleted, revision=self.store.revision,
                                compacted=self.store.compacted, match=None, limit=0,
                                token="", count_remaining=False)
        return json_response(body)


def _revision(value: str) -> int:
    try:
        revision = int(value)
    except ValueError:
        revision = -1
    if revision < 0:
        raise bad_request(f'resourceVersion: Invalid value: "{value}": must be a non-negative '
                          "integer")
    return revision


def _success(rt: ResourceType, name: str, uid: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


async def _single_error(request: web.Request, line: bytes) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(line)
    await response.write_eof()
    return response

