"""The access filter every API request passes before it reaches a verb: authentication (bearer
tokens), then authorization (system:masters, then RBAC), with refusals recorded. Off by default:
the server then lets every request through, as it always has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from runtime.envtest.auth import ADMIN, Authenticator, User, unauthorized
from runtime.envtest.rbac import (
    Attributes,
    Decision,
    Denial,
    RBACAuthorizer,
    denial,
    forbidden,
    request_attributes,
)
from runtime.envtest.registry import ResourceType
from runtime.envtest.reviews import (
    access_review,
    self_review,
    subject_access_review,
    token_review,
)
from runtime.envtest.store import Store

_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authorization.k8s.io", "subjectaccessreviews"),
            ("authentication.k8s.io", "selfsubjectreviews"),
            ("authentication.k8s.io", "tokenreviews")}


def is_review(rt: ResourceType) -> bool:
    return (rt.group, rt.plural) in _REVIEWS


class AccessControl:
    def __init__(self, store: Store, *, enabled: bool, admin_token: str,
                 tokens: Mapping[str, User] | None = None) -> None:
        self.enabled = enabled
        self.authenticator = Authenticator(admin_token=admin_token, tokens=tokens)
        self.authorizer = RBACAuthorizer(store)
        self._store = store
        self.denials: list[Denial] = []

    def identify(self, request: web.Request) -> User | None:
        """The caller; raises 401 when RBAC is on and the token names nobody. With RBAC off
        an unknown caller is None (and allowed everything)."""
        user = self.authenticator.user_for(request.headers.get("Authorization"))
        if user is None and self.enabled:
            raise unauthorized()
        return user

    def authorize(self, attrs: Attributes) -> Decision:
        # system:masters is allowed before any authorizer runs, as on the real server.
        if not self.enabled or attrs.user.is_admin:
            return Decision(True)
        return self.authorizer.authorize(attrs)

    def check(self, user: User | None, method: str, path: str, query: dict[str, str]) -> None:
        """Raises the 403 answer (and records it) unless the request is allowed."""
        if not self.enabled or user is None:
            return
        attrs = request_attributes(user, method, path, query)
        decision = self.authorize(attrs)
        if not decision.allowed:
            err = forbidden(attrs, decision.reason)
            self.denials.append(denial(attrs, str(err.body["message"])))
            raise err

    def user_info(self, user: User | None) -> dict[str, Any]:
        """The authentication.k8s.io/v1 UserInfo of a caller (the admin when nobody is
        authenticated, as with RBAC off). A service account's uid is its ServiceAccount's,
        when that object exists."""
        who = user or ADMIN
        uid = who.uid
        account = who.service_account
        if not uid and account is not None:
            entry = self._store.get("/serviceaccounts", *account)
            uid = str(entry.obj["metadata"].get("uid") or "") if entry is not None else ""
        info: dict[str, Any] = {"username": who.name}
        if uid:
            info["uid"] = uid
        info["groups"] = list(who.groups)
        return info

    def answer(self, rt: ResourceType, body: Any, user: User | None) -> dict[str, Any]:
        """The answered review (one of the `is_review` kinds)."""
        who = user or ADMIN
        if rt.plural == "selfsubjectreviews":
            return self_review(rt, body, who, self.user_info(who))
        if rt.plural == "tokenreviews":
            return token_review(rt, body, self.authenticator.user_of, self.user_info)
        if rt.plural == "subjectaccessreviews":
            return subject_access_review(rt, body, self.authorize)
        return access_review(rt, body, who, self.authorize)
