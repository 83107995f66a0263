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
from runtime.envtest.reviews import access_review, self_review
from runtime.envtest.routes import Target, json_response, read_body
from runtime.envtest.store import Store

_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authentication.k8s.io", "selfsubjectreviews")}


def is_review(rt: ResourceType) -> bool:
    return (rt.group, rt.plural) in _REVIEWS


class AccessControl:
    def __init__(self, store: Store, *, enabled: bool, admin_token: str,
                 tokens: Mapping[str, User] | None = None) -> None:
        self.enabled = enabled
        self.authenticator = Authenticator(admin_token=admin_token, tokens=tokens)
        self.authorizer = RBACAuthorizer(store)
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

    async def review(self, request: web.Request, target: Target,
                     user: User | None) -> web.Response:
        body: Any = await read_body(request)
        who = user or ADMIN
        if target.rt.plural == "selfsubjectreviews":
            answer = self_review(target.rt, body, who)
        else:
            answer = access_review(target.rt, body, who, self.authorize)
        return json_response(answer, status=201)
