"""Calls made as another account's IAM role (a TargetGroupBinding's `iamRoleArnToAssume`).

A `Role` names one (role ARN, external id, region); the pool keeps one set of clients per
`Role`, signed with the credentials STS AssumeRole gave for it (`RoleCredentials`). They are
asked for on the first call and again `REFRESH_BEFORE` seconds before they expire, by the
pool's injected clock, so no call is signed with credentials about to lapse; a refresh that
fails while the old credentials still hold keeps using them until they lapse. Upstream keeps
one ELBv2 client per (role, external id), built from one AssumeRole and dropped 30 s before
its credentials expire (`pkg/aws/cloud.go` GetAssumedRoleELBV2); the margin here is wider, so
that a call's own retries never outlive its signature.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from controller.aws.errors import AWSError
from runtime.clock import Clock

# AssumeRole's own default and upstream's (it never sets DurationSeconds).
DURATION: Final = 3600.0
REFRESH_BEFORE: Final = 300.0
# What IAM and STS accept (AWS's API reference: RoleArn, ExternalId, RoleSessionName).
ROLE_ARN: Final = re.compile(r"arn:aws(?:-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]{1,512}")
EXTERNAL_ID: Final = re.compile(r"[\w+=,.@:/-]{2,1224}")
_SESSION_NAME_ILLEGAL: Final = re.compile(r"[^a-zA-Z0-9=,.@_-]+")
_SESSION_NAME_MAX: Final = 64


def session_name(cluster_name: str) -> str:
    """Upstream's session name, `AWS-LBC-<cluster>` with what STS refuses left out, cut to
    the 64 characters STS takes (upstream cuts at 2047, which STS would refuse)."""
    return ("AWS-LBC-" + _SESSION_NAME_ILLEGAL.sub("", cluster_name))[:_SESSION_NAME_MAX]


def role_arn_problem(arn: str) -> str | None:
    """Why STS would refuse `arn` as a role to assume, None when it would not."""
    if not ROLE_ARN.fullmatch(arn):
        return "not an IAM role ARN (arn:<partition>:iam::<account id>:role/<name>)"
    return None


def external_id_problem(external_id: str) -> str | None:
    if not EXTERNAL_ID.fullmatch(external_id):
        return ("must be 2 to 1224 letters, digits or any of _+=,.@:/- (what STS accepts "
                "as an external id)")
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Role:
    """An IAM role to call as: one set of clients each."""

    arn: str
    external_id: str = ""
    region: str | None = None  # None: the pool's

    def __post_init__(self) -> None:
        problem = role_arn_problem(self.arn)
        if problem is not None:
            raise ValueError(f"iamRoleArnToAssume {self.arn[:600]!r}: {problem}")
        if self.external_id:
            problem = external_id_problem(self.external_id)
            if problem is not None:
                raise ValueError(f"assumeRoleExternalId: {problem}")

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


class AssumeRoleFailed(AWSError):
    """STS refused to let the controller assume the role (AccessDenied, a role that is not
    there); the message names the role."""

    def __init__(self, role: Role, cause: AWSError) -> None:
        super().__init__(cause.code, f"cannot assume role {role.arn}: "
                         f"{cause.message or cause.code}", operation="AssumeRole",
                         status=cause.status, request_id=cause.request_id,
                         retry_attempts=cause.retry_attempts)
        self.role = role


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str


AssumeCall = Callable[[Role], Awaitable[dict[str, Any]]]


class RoleCredentials:
    """The current credentials of one role and when to ask STS again. `generation` counts
    the credentials handed out, so that clients signed with older ones are replaced."""

    def __init__(self, role: Role, *, assume: AssumeCall, clock: Clock,
                 refresh_before: float = REFRESH_BEFORE) -> None:
        self.role = role
        self._assume = assume
        self._clock = clock
        self._refresh_before = refresh_before
        self._lock = asyncio.Lock()
        self._current: Credentials | None = None
        self._refresh_at = 0.0
        self._expires_at = 0.0
        self.generation = 0

    async def current(self) -> tuple[int, Credentials]:
        if self._current is not None and self._clock.now() < self._refresh_at:
            return self.generation, self._current
        async with self._lock:
            now = self._clock.now()
            if self._current is not None and now < self._refresh_at:
                return self.generation, self._current
            try:
                answer = await self._assume(self.role)
            except AWSError as exc:
                if self._current is not None and now < self._expires_at:
                    return self.generation, self._current  # still good: try again next call
                raise AssumeRoleFailed(self.role, exc) from None
            given = answer["Credentials"]
            self._current = Credentials(str(given["AccessKeyId"]),
                                        str(given["SecretAccessKey"]),
                                        str(given["SessionToken"]))
            lifetime = self._lifetime(given.get("Expiration"))
            self._expires_at = now + lifetime
            self._refresh_at = now + (lifetime - self._refresh_before
                                      if lifetime > 2 * self._refresh_before else lifetime / 2)
            self.generation += 1
            return self.generation, self._current

    def _lifetime(self, expiration: Any) -> float:
        """Seconds the credentials hold: what AWS says, measured on the injected wall clock,
        never more than was asked for (a clock ahead of AWS's must not stretch them)."""
        if isinstance(expiration, dt.datetime):
            if expiration.tzinfo is None:
                expiration = expiration.replace(tzinfo=dt.UTC)
            left = float(expiration.timestamp()) - self._clock.wall()
            return max(0.0, min(DURATION, left))
        return DURATION


__all__ = ["DURATION", "REFRESH_BEFORE", "AssumeRoleFailed", "Credentials", "Role",
           "RoleCredentials", "external_id_problem", "role_arn_problem", "session_name"]
