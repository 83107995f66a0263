"""Request decoding: a URL and method become a verb on a resource, answered with JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from aiohttp import web

from runtime.envtest import protobuf
from runtime.envtest.registry import Registry, ResourceType
from runtime.envtest.status import StatusError, bad_request

_TRUE = {"true", "1"}


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource URL names."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    verb: str
    watch_prefix: bool = False
    query: dict[str, str] = field(default_factory=dict)


def not_found_path() -> StatusError:
    return StatusError(404, "the server could not find the requested resource",
                       details={"causes": [{"reason": "UnexpectedServerResponse",
                                            "message": "404 page not found"}]})


def method_not_allowed(method: str, path: str) -> StatusError:
    return StatusError(405, f"the server does not allow this method on the requested resource "
                       f"({method} {path})")


def resource_of(path: str) -> tuple[str, str, list[str]] | None:
    """(group, version, rest) for an API path, None for anything else."""
    segs = [s for s in path.split("/") if s]
    if len(segs) >= 3 and segs[0] == "api":
        return "", segs[1], segs[2:]
    if len(segs) >= 4 and segs[0] == "apis":
        return segs[1], segs[2], segs[3:]
    return None


def parse_target(registry: Registry, method: str, path: str,
                 query: dict[str, str]) -> Target | None:
    """The resource request a URL makes, or None if it is not one (discovery and the like).
    Raises 404/405 for resource-shaped paths that name nothing served."""
    parsed = resource_of(path)
    if parsed is None:
        return None
    group, version, rest = parsed
    watch_prefix = False
    if rest and rest[0] == "watch":
        watch_prefix, rest = True, rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise not_found_path()
    rt = registry.lookup(group, version, rest[0])
    if rt is None:
        raise not_found_path()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if namespace is not None and not rt.namespaced:
        raise not_found_path()
    if sub is not None and not (sub == "status" and rt.has_status):
        raise not_found_path()
    watching = watch_prefix or query.get("watch", "").lower() in _TRUE
    if method == "GET":
        verb = "get" if name else ("watch" if watching else "list")
        if watch_prefix and name:
            verb = "watch"
    elif method == "POST" and name is None:
        verb = "create"
    elif method == "PUT" and name:
        verb = "update"
    elif method == "PATCH" and name:
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        raise method_not_allowed(method, path)
    if verb not in rt.verbs:
        raise method_not_allowed(method, path)
    return Target(rt, namespace, name, sub, verb, watch_prefix, query)


async def read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        return None
    ctype = request.content_type
    if ctype == "application/vnd.kubernetes.protobuf":
        return protobuf.decode(raw)
    if "protobuf" in ctype or "cbor" in ctype:
        raise StatusError(415, "the body of the request was in an unknown format - accepted "
                          "media types include: application/json, application/yaml")
    try:
        if ctype in ("application/yaml", "application/x-yaml"):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def dry_run(query: dict[str, str]) -> bool:
    value = query.get("dryRun", "")
    if not value:
        return False
    if value != "All":
        raise bad_request(f'Invalid dryRun value: "{value}": supported values: "All"')
    return True


def json_response(body: Any, *, status: int = 200, content_type: str = "application/json",
                  headers: dict[str, str] | None = None) -> web.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
    return web.Response(body=raw, status=status, headers={"Content-Type": content_type,
                                                          **(headers or {})})


def error_response(err: StatusError) -> web.Response:
    return json_response(err.body, status=err.code, headers=err.headers)


def int_param(query: dict[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{name}: Invalid value: {value!r}: must be an integer") from None
