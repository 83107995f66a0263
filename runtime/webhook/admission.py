"""AdmissionReview (admission.k8s.io/v1, and v1beta1, which has the same shape): the request a
webhook handler gets and the response it gives.

The body comes from the network, so `parse_review` trusts nothing: any shape it cannot use is a
`ReviewError` carrying the HTTP code and one clear message. Responses are built with `allowed`,
`denied`, `errored` and `patched` (as controller-runtime's helpers: a denial is 403 Forbidden,
so kubectl prints "Error from server (Forbidden): admission webhook ... denied the request").
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.webhook.jsonpatch import create_patch

__all__ = [
    "API_VERSIONS",
    "AdmissionRequest",
    "AdmissionResponse",
    "GroupVersionKind",
    "GroupVersionResource",
    "ReviewError",
    "allowed",
    "denied",
    "encode_review",
    "errored",
    "parse_review",
    "patched",
]

KIND = "AdmissionReview"
API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")

Obj = dict[str, Any]


class ReviewError(ValueError):
    """A body that is not a usable AdmissionReview; `code` is the HTTP status to answer."""

    def __init__(self, message: str, *, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionRequest:
    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    operation: str
    name: str = ""
    namespace: str = ""
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    user_info: Obj = field(default_factory=dict)
    object: Obj | None = None
    old_object: Obj | None = None
    dry_run: bool = False
    options: Obj | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionResponse:
    """What a handler answers. `patch` is a list of RFC 6902 operations (mutating webhooks
    only); `code`, `reason` and `message` become the response's status."""

    allowed: bool
    code: int = 200
    reason: str = ""
    message: str = ""
    patch: tuple[Obj, ...] = ()
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self, uid: str) -> Obj:
        status: Obj = {"code": self.code}
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        out: Obj = {"uid": uid, "allowed": self.allowed, "status": status}
        if self.patch:
            out["patchType"] = "JSONPatch"
            out["patch"] = base64.b64encode(
                json.dumps(list(self.patch), separators=(",", ":")).encode()).decode()
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.audit_annotations:
            out["auditAnnotations"] = dict(self.audit_annotations)
        return out


def allowed(message: str = "", *, warnings: Sequence[str] = ()) -> AdmissionResponse:
    return AdmissionResponse(allowed=True, message=message, warnings=tuple(warnings))


def denied(message: str, *, code: int = 403, reason: str = "Forbidden",
           warnings: Sequence[str] = ()) -> AdmissionResponse:
    return AdmissionResponse(allowed=False, code=code, reason=reason, message=message,
                             warnings=tuple(warnings))


def errored(code: int, message: str) -> AdmissionResponse:
    """The handler could not decide (bad request content, an internal failure)."""
    return AdmissionResponse(allowed=False, code=code, message=message)


def patched(old: Any, new: Any, *, warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Allow, with the JSON patch that turns `old` into `new` (none when they are equal)."""
    return AdmissionResponse(allowed=True, patch=tuple(create_patch(old, new)),
                             warnings=tuple(warnings))


# ---- decoding ------------------------------------------------------------------------------


def _str(body: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = body.get(key)
    if value is None:
        if required:
            raise ReviewError(f"{where}.{key} is required")
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"{where}.{key} must be a string")
    return value


def _obj(body: Mapping[str, Any], key: str, where: str) -> Obj | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"{where}.{key} must be an object")
    return value


def _part(body: Mapping[str, Any], key: str) -> tuple[Mapping[str, Any], str] | None:
    value = _obj(body, key, "request")
    return None if value is None else (value, f"request.{key}")


def _gvk(body: Mapping[str, Any], key: str) -> GroupVersionKind | None:
    part = _part(body, key)
    if part is None:
        return None
    value, where = part
    return GroupVersionKind(_str(value, "group", where), _str(value, "version", where),
                            _str(value, "kind", where))


def _gvr(body: Mapping[str, Any], key: str) -> GroupVersionResource | None:
    part = _part(body, key)
    if part is None:
        return None
    value, where = part
    return GroupVersionResource(_str(value, "group", where), _str(value, "version", where),
                                _str(value, "resource", where))


def parse_review(body: bytes) -> tuple[str, AdmissionRequest]:
    """The review's apiVersion (the answer must use the same) and its request."""
    if not body:
        raise ReviewError("request body is empty")
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # RecursionError: deeply nested JSON is a hostile body, not a server fault.
        raise ReviewError(f"couldn't decode the AdmissionReview: {exc}") from None
    if not isinstance(review, dict):
        raise ReviewError("couldn't decode the AdmissionReview: the body is not a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if kind != KIND or api_version not in API_VERSIONS:
        shown = f"{api_version if isinstance(api_version, str) else ''}, " \
                f"Kind={kind if isinstance(kind, str) else ''}"
        raise ReviewError(f"expected an AdmissionReview of {' or '.join(API_VERSIONS)}, "
                          f"got {shown}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise ReviewError("the AdmissionReview has no request")
    uid = _str(request, "uid", "request", required=True)
    if not uid:
        raise ReviewError("request.uid is required")
    operation = _str(request, "operation", "request", required=True)
    if operation not in OPERATIONS:
        raise ReviewError(f"request.operation must be one of {', '.join(OPERATIONS)}")
    kind_, resource = _gvk(request, "kind"), _gvr(request, "resource")
    if kind_ is None:
        raise ReviewError("request.kind is required")
    if resource is None:
        raise ReviewError("request.resource is required")
    dry_run = request.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise ReviewError("request.dryRun must be a boolean")
    return str(api_version), AdmissionRequest(
        uid=uid, kind=kind_, resource=resource, operation=operation,
        name=_str(request, "name", "request"), namespace=_str(request, "namespace", "request"),
        sub_resource=_str(request, "subResource", "request"),
        request_kind=_gvk(request, "requestKind"),
        request_resource=_gvr(request, "requestResource"),
        request_sub_resource=_str(request, "requestSubResource", "request"),
        user_info=_obj(request, "userInfo", "request") or {},
        object=_obj(request, "object", "request"),
        old_object=_obj(request, "oldObject", "request"),
        dry_run=dry_run, options=_obj(request, "options", "request"))


def encode_review(api_version: str, uid: str, response: AdmissionResponse) -> bytes:
    review = {"apiVersion": api_version, "kind": KIND, "response": response.to_dict(uid)}
    return json.dumps(review, separators=(",", ":")).encode()
