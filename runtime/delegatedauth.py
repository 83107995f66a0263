"""Authentication and authorization delegated to the API server, as controller-runtime's secure
metrics filter (`filters.WithAuthenticationAndAuthorization`) does it:

- the caller's bearer token goes to a TokenReview; the answer, either way, is kept for
  `token_ttl` (1 min), keyed by the token's SHA-256 so that no token is held in memory;
- the user it names goes to a SubjectAccessReview for the request's non-resource path and
  lower-cased HTTP method (`get /metrics`); allowed answers are kept for `allow_ttl` (5 min),
  denials for `deny_ttl` (30 s), failures not at all;
- no or an unknown token: 401 `Unauthorized`; denied: 403 `Authorization denied for user U`;
  a review that could not be made: 500, so that a scraper tells an outage from a refusal.

The process's own identity needs `create` on tokenreviews and subjectaccessreviews (the
`system:auth-delegator` ClusterRole has exactly that); the caller needs `get` on the path.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import structlog
from aiohttp import web

from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError
from runtime.resources import SUBJECTACCESSREVIEWS, TOKENREVIEWS

__all__ = ["DelegatedAuth", "UserInfo"]

log = structlog.get_logger("delegatedauth")

_V = TypeVar("_V")
# Bounded so that a flood of made-up tokens cannot grow memory without limit.
_CACHE_ENTRIES = 1024
# The API server answers reviews at once; a review slower than this is an outage.
_REVIEW_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class _Missing:
    pass


_MISSING = _Missing()


class _TTLCache(Generic[_V]):
    """Least-recently-used entries that expire; time comes from the clock."""

    def __init__(self, clock: Clock, *, size: int = _CACHE_ENTRIES) -> None:
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[Any, tuple[float, _V]] = OrderedDict()

    def get(self, key: Any) -> _V | _Missing:
        entry = self._entries.get(key)
        if entry is None:
            return _MISSING
        expires, value = entry
        if self._clock.now() >= expires:
            del self._entries[key]
            return _MISSING
        self._entries.move_to_end(key)
        return value

    def put(self, key: Any, value: _V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (self._clock.now() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class ReviewFailed(Exception):
    """The API server could not be asked."""


def bearer_token(request: web.Request) -> str | None:
    """The token of `Authorization: Bearer <token>` (scheme in any case), else None."""
    parts = request.headers.get("Authorization", "").split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatedAuth:
    """A `RequestFilter` for `MetricsServer` (runtime/httpserver.py)."""

    def __init__(self, client: KubeClient, *, clock: Clock | None = None,
                 token_ttl: float = 60.0, allow_ttl: float = 300.0,
                 deny_ttl: float = 30.0) -> None:
        self._client = client
        clock = clock or RealClock()
        self._token_ttl = token_ttl
        self._allow_ttl = allow_ttl
        self._deny_ttl = deny_ttl
        self._tokens: _TTLCache[UserInfo | None] = _TTLCache(clock)
        self._decisions: _TTLCache[tuple[bool, str]] = _TTLCache(clock)

    async def __call__(self, request: web.Request) -> web.StreamResponse | None:
        token = bearer_token(request)
        if token is None:
            return _text("Unauthorized", 401)
        try:
            user = await self.authenticate(token)
        except ReviewFailed as exc:
            log.error("authentication failed", error=str(exc))
            return _text("Authentication failed", 500)
        if user is None:
            return _text("Unauthorized", 401)
        verb = request.method.lower()
        try:
            allowed, reason = await self.authorize(user, verb=verb, path=request.path)
        except ReviewFailed as exc:
            log.error("authorization failed", user=user.name, error=str(exc))
            return _text(f"Authorization for user {user.name} failed", 500)
        if not allowed:
            log.debug("authorization denied", user=user.name, verb=verb, path=request.path,
                      reason=reason)
            return _text(f"Authorization denied for user {user.name}", 403)
        return None

    async def authenticate(self, token: str) -> UserInfo | None:
        """The user the API server says `token` belongs to; None if it is not a valid token."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if not isinstance(cached, _Missing):
            return cached
        review = await self._review(TOKENREVIEWS, {"token": token})
        status = review.get("status") or {}
        user: UserInfo | None = None
        if status.get("authenticated") is True:
            info = status.get("user") or {}
            name = str(info.get("username") or "")
            if name:
                extra = info.get("extra") or {}
                user = UserInfo(
                    name=name, uid=str(info.get("uid") or ""),
                    groups=tuple(str(g) for g in info.get("groups") or ()),
                    extra={str(k): tuple(str(x) for x in v or ()) for k, v in extra.items()}
                    if isinstance(extra, dict) else {})
        self._tokens.put(key, user, self._token_ttl)
        return user

    async def authorize(self, user: UserInfo, *, verb: str, path: str) -> tuple[bool, str]:
        """Whether `user` may `verb` the non-resource `path`, and the authorizer's reason."""
        key = (user.name, user.uid, user.groups, tuple(sorted(user.extra.items())), verb, path)
        cached = self._decisions.get(key)
        if not isinstance(cached, _Missing):
            return cached
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        review = await self._review(SUBJECTACCESSREVIEWS, spec)
        status = review.get("status") or {}
        decision = (status.get("allowed") is True, str(status.get("reason") or ""))
        self._decisions.put(key, decision, self._allow_ttl if decision[0] else self._deny_ttl)
        return decision

    async def _review(self, resource: Any, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": resource.api_version, "kind": resource.kind, "spec": spec}
        try:
            return await self._client.create(resource, body, timeout=_REVIEW_TIMEOUT)
        except ApiError as exc:
            raise ReviewFailed(f"{resource.kind}: {exc.message}") from exc


def _text(body: str, status: int) -> web.Response:
    return web.Response(text=body + "\n", status=status, content_type="text/plain",
                        headers={"X-Content-Type-Options": "nosniff"})
