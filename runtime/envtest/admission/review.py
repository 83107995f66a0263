"""AdmissionReview (admission.k8s.io/v1): the request a webhook is sent and what its answer must
look like, checked as the real server checks it."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from runtime.envtest import conversion
from runtime.envtest.admission.attributes import Attributes
from runtime.envtest.registry import ResourceType

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"


class InvalidResponse(ValueError):
    """The webhook answered, but not with a usable AdmissionReview."""


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _gvr(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "resource": rt.plural}


def _at_version(obj: Any, rt: ResourceType) -> Any:
    if isinstance(obj, dict) and obj.get("apiVersion") != rt.api_version:
        return conversion.served(obj, rt)
    return obj


def request(uid: str, attrs: Attributes, rt: ResourceType, obj: Any, old: Any) -> bytes:
    """The review for one call. `rt` is the version the webhook asked for (it differs from the
    requested one when matched through an equivalent version); objects are sent at it."""
    body: dict[str, Any] = {"uid": uid, "kind": _gvk(rt), "resource": _gvr(rt)}
    if attrs.subresource:
        body["subResource"] = attrs.subresource
    body["requestKind"] = _gvk(attrs.rt)
    body["requestResource"] = _gvr(attrs.rt)
    if attrs.subresource:
        body["requestSubResource"] = attrs.subresource
    if attrs.name:
        body["name"] = attrs.name
    if attrs.namespace:
        body["namespace"] = attrs.namespace
    body.update({"operation": attrs.operation, "userInfo": attrs.user,
                 "object": _at_version(obj, rt), "oldObject": _at_version(old, rt),
                 "dryRun": attrs.dry_run, "options": attrs.options})
    review = {"kind": KIND, "apiVersion": API_VERSION, "request": body}
    return json.dumps(review, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    status: dict[str, Any] | None
    patch: list[Any] | None
    warnings: tuple[str, ...]


def _decoded_patch(raw: Any) -> list[Any]:
    try:
        ops = json.loads(base64.b64decode(raw, validate=True)) if isinstance(raw, str) else None
    except (binascii.Error, ValueError) as exc:
        raise InvalidResponse(f"received undecodable patch in webhook response: {exc}"
                              ) from None
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise InvalidResponse("received undecodable patch in webhook response: json: cannot "
                              "unmarshal into Go value of type jsonpatch.Patch")
    return ops


def verdict(raw: bytes, uid: str, *, mutating: bool) -> Verdict:
    """The webhook's answer; raises InvalidResponse with the real server's reason."""
    try:
        review = json.loads(raw)
    except ValueError as exc:
        raise InvalidResponse(f"couldn't get version/kind; json parse error: {exc}") from None
    if not isinstance(review, dict):
        raise InvalidResponse("couldn't get version/kind; json parse error: the answer is not "
                              "a JSON object")
    response = review.get("response")
    if response is None:
        raise InvalidResponse("received invalid webhook response: webhook response was absent")
    if not isinstance(response, dict) or not isinstance(response.get("allowed", False), bool):
        raise InvalidResponse("couldn't decode the answer: json: cannot unmarshal into Go "
                              "struct field AdmissionReview.response of type "
                              "v1.AdmissionResponse")
    got_uid = response.get("uid")
    if got_uid != uid:
        raise InvalidResponse(f'received invalid webhook response: expected response.uid="{uid}'
                              f'", got "{got_uid if isinstance(got_uid, str) else ""}"')
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        got = f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
        raise InvalidResponse(f"received invalid webhook response: expected webhook response "
                              f"of {API_VERSION}, Kind={KIND}, got {got}")
    patch, patch_type = response.get("patch"), response.get("patchType")
    ops: list[Any] | None = None
    if mutating:
        if patch and patch_type is None:
            raise InvalidResponse("received invalid webhook response: webhook returned "
                                  "response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise InvalidResponse("received invalid webhook response: webhook returned "
                                  "response.patchType but not response.patch")
        if patch:
            if patch_type != "JSONPatch":
                raise InvalidResponse(f'unsupported patch type "{patch_type}"')
            ops = _decoded_patch(patch)
    else:
        if patch:
            raise InvalidResponse("received invalid webhook response: validating webhook may "
                                  "not return response.patch")
        if patch_type is not None:
            raise InvalidResponse("received invalid webhook response: validating webhook may "
                                  "not return response.patchType")
    warnings = response.get("warnings") or []
    status = response.get("status")
    return Verdict(allowed=response.get("allowed") is True,
                   status=status if isinstance(status, dict) else None, patch=ops or None,
                   warnings=tuple(w for w in warnings if isinstance(w, str))
                   if isinstance(warnings, list) else ())
