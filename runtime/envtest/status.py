"""`Status` bodies for error answers, worded as kube-apiserver words them."""

from __future__ import annotations

from typing import Any

from runtime.envtest.registry import ResourceType

_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
            422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}


class StatusError(Exception):
    """An error answer; `body` is the Status object sent to the client."""

    def __init__(self, code: int, message: str, *, reason: str | None = None,
                 details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.headers = headers or {}
        self.body: dict[str, Any] = status_body(code, message, reason=reason, details=details)


def status_body(code: int, message: str, *, reason: str | None = None,
                details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason if reason is not None else _REASONS.get(code, ""),
    }
    if details:
        body["details"] = details
    body["code"] = code
    return body


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(404, f'{rt.qualified} "{name}" not found', details=_details(rt, name))


def namespace_not_found(name: str) -> StatusError:
    return StatusError(404, f'namespaces "{name}" not found',
                       details={"name": name, "kind": "namespaces"})


def already_exists(rt: ResourceType, name: str) -> StatusError:
    return StatusError(409, f'{rt.qualified} "{name}" already exists', reason="AlreadyExists",
                       details=_details(rt, name))


def conflict(rt: ResourceType, name: str, why: str = "the object has been modified; please "
             "apply your changes to the latest version and try again") -> StatusError:
    return StatusError(409, f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
                       details=_details(rt, name))


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """`causes` are (field, reason type, message) triples, e.g.
    ("metadata.name", "FieldValueRequired", "Required value: name is required")."""
    texts = [f"{fld}: {msg}" for fld, _, msg in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.kind
    details["causes"] = [{"reason": why, "message": msg, "field": fld}
                         for fld, why, msg in causes]
    return StatusError(422, f'{rt.kind}{"." + rt.group if rt.group else ""} "{name}" is invalid: '
                       f"{joined}", details=details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, message)


def gone(message: str) -> StatusError:
    return StatusError(410, message, reason="Expired")


def forbidden_terminating(rt: ResourceType, name: str, namespace: str) -> StatusError:
    message = (f'{rt.qualified} "{name}" is forbidden: unable to create new content in namespace '
               f"{namespace} because it is being terminated")
    details = _details(rt, name)
    details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} "
                          "is being terminated", "field": "metadata.namespace"}]
    return StatusError(403, message, details=details)
