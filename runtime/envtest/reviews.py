"""The review kinds: create-only, answered from the server's authenticator and authorizer, never
stored. SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectReview (`kubectl auth
whoami`) ask about the caller; SubjectAccessReview and TokenReview about anyone — what a
delegating server (metrics endpoints behind authentication and authorization) asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.envtest.auth import User
from runtime.envtest.rbac import Attributes, Decision
from runtime.envtest.registry import ResourceType
from runtime.envtest.status import bad_request, invalid

Authorize = Callable[[Attributes], Decision]
# The audience of the server's own tokens: the usual in-cluster issuer.
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)


def check_kind(rt: ResourceType, body: Any) -> dict[str, Any]:
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


def _spec(review: dict[str, Any]) -> dict[str, Any]:
    spec = review.get("spec")
    return spec if isinstance(spec, dict) else {}


def _attributes(rt: ResourceType, spec: dict[str, Any], user: User) -> Attributes:
    res, non_res = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(res, dict) and isinstance(non_res, dict):
        raise invalid(rt, "", [("spec.nonResourceAttributes", "FieldValueInvalid",
                                "Invalid value: cannot be specified in combination with "
                                "resourceAttributes")])
    if not isinstance(res, dict) and not isinstance(non_res, dict):
        raise invalid(rt, "", [("spec.resourceAttributes", "FieldValueInvalid",
                                'Invalid value: "null": exactly one of nonResourceAttributes '
                                "or resourceAttributes must be specified")])
    if isinstance(res, dict):
        return Attributes(user, _text(res, "verb"), "", resource_request=True,
                          api_group=_text(res, "group"), api_version=_text(res, "version"),
                          resource=_text(res, "resource"),
                          subresource=_text(res, "subresource"),
                          namespace=_text(res, "namespace"), name=_text(res, "name"))
    assert isinstance(non_res, dict)
    return Attributes(user, _text(non_res, "verb"), _text(non_res, "path"),
                      resource_request=False)


def _answer(rt: ResourceType, spec: dict[str, Any], decision: Decision) -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


def access_review(rt: ResourceType, body: Any, user: User, authorize: Authorize
                  ) -> dict[str, Any]:
    """SelfSubjectAccessReview: may the caller do this? `status.allowed` and the reason."""
    spec = _spec(check_kind(rt, body))
    return _answer(rt, spec, authorize(_attributes(rt, spec, user)))


def subject_access_review(rt: ResourceType, body: Any, authorize: Authorize
                          ) -> dict[str, Any]:
    """SubjectAccessReview: may `spec.user` (with `spec.groups`, as given) do this?"""
    spec = _spec(check_kind(rt, body))
    name = spec.get("user")
    groups = spec.get("groups")
    if groups is not None and (not isinstance(groups, list)
                               or not all(isinstance(g, str) for g in groups)):
        raise bad_request("json: cannot unmarshal into Go struct field "
                          "SubjectAccessReviewSpec.spec.groups of type string")
    if not name and not groups:
        raise invalid(rt, "", [("spec.user", "FieldValueInvalid", 'Invalid value: "": at least '
                                "one of user or group must be specified")])
    uid = spec.get("uid")
    subject = User(name if isinstance(name, str) else "", tuple(groups or ()),
                   uid=uid if isinstance(uid, str) else "")
    attrs = _attributes(rt, spec, subject)
    return _answer(rt, spec, authorize(attrs))


def self_review(rt: ResourceType, body: Any, user: User, info: dict[str, Any]
                ) -> dict[str, Any]:
    check_kind(rt, body if body is not None else {})
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None}, "status": {"userInfo": info}}


def token_review(rt: ResourceType, body: Any, user_of: Callable[[str], User | None],
                 info_of: Callable[[User], dict[str, Any]]) -> dict[str, Any]:
    """TokenReview: whom does `spec.token` authenticate? The server's tokens are static (like a
    token file's), so they serve only the server's own audiences."""
    spec = _spec(check_kind(rt, body))
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise bad_request("token is required for TokenReview in authentication")
    wanted = spec.get("audiences") or list(API_AUDIENCES)
    if not isinstance(wanted, list) or not all(isinstance(a, str) for a in wanted):
        raise bad_request("json: cannot unmarshal into Go struct field "
                          "TokenReviewSpec.spec.audiences of type string")
    audiences = [a for a in API_AUDIENCES if a in wanted]
    user = user_of(token) if audiences else None
    status: dict[str, Any] = {"user": {}}
    if user is not None:
        status = {"authenticated": True, "user": info_of(user), "audiences": audiences}
    return {"kind": rt.kind, "apiVersion": rt.api_version,
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
