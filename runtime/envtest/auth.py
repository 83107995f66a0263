"""Authentication: bearer tokens → users, as a static token file does for kube-apiserver.

Only consulted when the server runs with `rbac=True`. The admin identity belongs to
`system:masters`, which the real server lets do anything before any authorizer runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runtime.envtest.status import StatusError

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"
ADMIN_NAME = "envtest-admin"


@dataclass(frozen=True, slots=True)
class User:
    """An authenticated identity. `groups` as given; `system:authenticated` is added when the
    user is registered with the server, as every authenticator in the real chain does."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def with_authenticated(self) -> User:
        if AUTHENTICATED in self.groups:
            return self
        return User(self.name, (*self.groups, AUTHENTICATED), self.uid)

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) for a service-account identity."""
        if not self.name.startswith(SA_PREFIX):
            return None
        namespace, sep, name = self.name[len(SA_PREFIX):].partition(":")
        return (namespace, name) if sep and namespace and name and ":" not in name else None

    @property
    def is_admin(self) -> bool:
        return MASTERS in self.groups


ADMIN = User(ADMIN_NAME, (MASTERS, AUTHENTICATED))


def service_account_user(namespace: str, name: str) -> User:
    """The identity a ServiceAccount token authenticates as."""
    if not namespace or not name or ":" in namespace or ":" in name:
        raise ValueError(f"invalid service account {namespace!r}/{name!r}")
    return User(f"{SA_PREFIX}{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED))


def parse_token_spec(spec: str) -> tuple[str, User]:
    """`TOKEN=USER[,GROUP...]`; a `system:serviceaccount:NS:NAME` user gets the service-account
    groups. Raises ValueError with one clear message."""
    token, sep, rest = spec.partition("=")
    if not sep or not token or not rest:
        raise ValueError(f"expected TOKEN=USER[,GROUP...], got {spec!r}")
    name, *groups = [part.strip() for part in rest.split(",")]
    if not name or not all(groups):
        raise ValueError(f"empty user or group name in {spec!r}")
    if name.startswith(SA_PREFIX):
        parts = name[len(SA_PREFIX):].split(":")
        if len(parts) != 2:
            raise ValueError(f"expected {SA_PREFIX}NAMESPACE:NAME, got {name!r}")
        user = service_account_user(parts[0], parts[1])
        return token, User(user.name, (*user.groups, *groups))
    return token, User(name, tuple(groups)).with_authenticated()


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", reason="Unauthorized")


class Authenticator:
    """Token → user; the admin token is always known."""

    def __init__(self, *, admin_token: str, tokens: Mapping[str, User] | None = None) -> None:
        self.admin_token = admin_token
        self._tokens: dict[str, User] = {admin_token: ADMIN}
        for token, user in (tokens or {}).items():
            self.add(token, user)

    def add(self, token: str, user: User) -> None:
        if not token or any(c.isspace() for c in token):
            raise ValueError("a token must be non-empty and contain no whitespace")
        if token == self.admin_token:
            raise ValueError("that token is the admin token")
        self._tokens[token] = user.with_authenticated()

    def remove(self, token: str) -> None:
        if token != self.admin_token:
            self._tokens.pop(token, None)

    def user_of(self, token: str) -> User | None:
        return self._tokens.get(token)

    def user_for(self, header: str | None) -> User | None:
        """The user an `Authorization` header names; None if it names nobody."""
        if not header:
            return None
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.user_of(token.strip())
