"""SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectReview (`kubectl auth whoami`):
create-only kinds answered from the caller's identity, never stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.envtest.auth import User
from runtime.envtest.rbac import Attributes, Decision
from runtime.envtest.registry import ResourceType
from runtime.envtest.status import bad_request, invalid

Authorize = Callable[[Attributes], Decision]


def _check_kind(rt: ResourceType, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("Object 'Kind' is missing in the request body" if body is None
                          else "the body of the request is not a JSON object")
    if body.get("apiVersion") not in (None, rt.api_version):
        raise bad_request(f"the API version in the data ({body.get('apiVersion')}) does not "
                          f"match the expected API version ({rt.api_version})")
    if body.get("kind") not in (None, rt.kind):
        raise bad_request(f"the kind in the data ({body.get('kind')}) does not match the "
                          f"expected kind ({rt.kind})")
    return body


def _text(attrs: dict[str, Any], key: str) -> str:
    value = attrs.get(key)
    return value if isinstance(value, str) else ""


def access_review(rt: ResourceType, body: Any, user: User, authorize: Authorize
                  ) -> dict[str, Any]:
    """The answered review: `status.allowed` and the authorizer's reason."""
    review = _check_kind(rt, body)
    spec = review.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    res, non_res = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(res, dict) == isinstance(non_res, dict):
        raise invalid(rt, "", [("spec.resourceAttributes", "FieldValueInvalid",
                                'Invalid value: "null": exactly one of nonResourceAttributes '
                                "or resourceAttributes must be specified")])
    if isinstance(res, dict):
        attrs = Attributes(user, _text(res, "verb"), "", resource_request=True,
                           api_group=_text(res, "group"), api_version=_text(res, "version"),
                           resource=_text(res, "resource"),
                           subresource=_text(res, "subresource"),
                           namespace=_text(res, "namespace"), name=_text(res, "name"))
    else:
        assert isinstance(non_res, dict)
        attrs = Attributes(user, _text(non_res, "verb"), _text(non_res, "path"),
                           resource_request=False)
    decision = authorize(attrs)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


def self_review(rt: ResourceType, body: Any, user: User) -> dict[str, Any]:
    _check_kind(rt, body if body is not None else {})
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None},
            "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}}}
