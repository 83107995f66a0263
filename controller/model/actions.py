"""Listener and rule actions. OIDC client credentials are redacted in canonical JSON.

Cognito authentication and JWT validation carry no secret: every field is in the canonical JSON.

Write-only fields: AWS accepts an OIDC client secret but never returns it, so the deployer cannot
compare it. Such actions carry `credentials_version` (the source Secret's uid and
resourceVersion) instead: it is in the canonical JSON, so a rotated Secret changes the stack's
checkpoint without any digest of the secret itself being written anywhere, and the deployer
rewrites every action that `carries_write_only` whenever the checkpoint did not match."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, FieldSerializationInfo, field_serializer, field_validator

from controller.model.base import Items, Model, Ref

REDACTED = "[REDACTED]"


class TargetGroupByName(Model):
    """Placeholder the resolve stage turns into the ARN of the target group of this name
    (upstream's `targetGroupName`); the checkpoint covers the name, as it does a subnet
    selector."""

    target_group_name: str = Field(min_length=1, max_length=32)


class WeightedTargetGroup(Model):
    target_group_arn: Ref | str | TargetGroupByName
    weight: int = Field(default=1, ge=0, le=999)


class Stickiness(Model):
    enabled: bool
    duration_seconds: int | None = Field(default=None, ge=1, le=604800)


class ForwardAction(Model):
    type: Literal["forward"] = "forward"
    target_groups: Items[WeightedTargetGroup] = Field(min_length=1, max_length=5)
    stickiness: Stickiness | None = None

    @field_validator("target_groups", mode="after")
    @classmethod
    def _order(cls, value: Sequence[WeightedTargetGroup]) -> tuple[WeightedTargetGroup, ...]:
        # Weighted target groups are a set to AWS; order them so digests ignore build order.
        def key(w: WeightedTargetGroup) -> str:
            arn = w.target_group_arn
            if isinstance(arn, TargetGroupByName):
                return "name:" + arn.target_group_name
            return arn.ref if isinstance(arn, Ref) else arn

        keys = [key(w) for w in value]
        if len(set(keys)) != len(keys):
            raise ValueError("forward action: a target group appears twice")
        return tuple(sorted(value, key=key))


class RedirectAction(Model):
    type: Literal["redirect"] = "redirect"
    protocol: str = "#{protocol}"
    port: str = "#{port}"
    host: str = "#{host}"
    path: str = "/#{path}"
    query: str = "#{query}"
    status_code: Literal["HTTP_301", "HTTP_302"]


class FixedResponseAction(Model):
    type: Literal["fixed-response"] = "fixed-response"
    status_code: str = Field(pattern=r"^[2-5][0-9][0-9]$")
    content_type: str | None = None
    message_body: str | None = None


class AuthenticateOidcAction(Model):
    WRITE_ONLY: ClassVar[frozenset[str]] = frozenset({"client_secret"})

    type: Literal["authenticate-oidc"] = "authenticate-oidc"
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    user_info_endpoint: str
    client_id: str
    client_secret: str
    session_cookie_name: str = "AWSELBAuthSessionCookie"
    scope: str = "openid"
    session_timeout: int = Field(default=604800, ge=1, le=604800)
    on_unauthenticated_request: Literal["authenticate", "allow", "deny"] = "authenticate"
    authentication_request_extra_params: dict[str, str] = Field(default_factory=dict)
    # "<Secret uid>/<resourceVersion>" of the Secret the credentials were read from.
    credentials_version: str = ""

    @field_serializer("client_id", "client_secret")
    def _redact(self, value: str, info: FieldSerializationInfo) -> str:
        # The credentials come from a Kubernetes Secret: they never appear in logged or hashed
        # JSON; `credentials_version` stands for them in digests.
        ctx: Any = info.context
        if isinstance(ctx, dict) and ctx.get("reveal_secrets"):
            return value
        return REDACTED


class AuthenticateCognitoAction(Model):
    type: Literal["authenticate-cognito"] = "authenticate-cognito"
    user_pool_arn: str = Field(min_length=1)
    user_pool_client_id: str = Field(min_length=1)
    user_pool_domain: str = Field(min_length=1)
    session_cookie_name: str = "AWSELBAuthSessionCookie"
    scope: str = "openid"
    session_timeout: int = Field(default=604800, ge=1, le=604800)
    on_unauthenticated_request: Literal["authenticate", "allow", "deny"] = "authenticate"
    authentication_request_extra_params: dict[str, str] = Field(default_factory=dict,
                                                                max_length=10)


JwtClaimFormat = Literal["single-string", "string-array", "space-separated-values"]


class JwtClaim(Model):
    format: JwtClaimFormat
    name: str = Field(min_length=1)
    # AWS compares the claim's values in the order given; they stay as written.
    values: Items[str] = Field(min_length=1, max_length=10)


class JwtValidationAction(Model):
    type: Literal["jwt-validation"] = "jwt-validation"
    jwks_endpoint: str = Field(min_length=1, max_length=256)
    issuer: str = Field(min_length=1, max_length=256)
    additional_claims: Items[JwtClaim] = Field(default=(), max_length=10)

    @field_validator("additional_claims", mode="after")
    @classmethod
    def _claims(cls, value: Sequence[JwtClaim]) -> tuple[JwtClaim, ...]:
        # Claims are checked together, whatever their order: fix one so digests ignore it.
        names = [c.name for c in value]
        if len(set(names)) != len(names):
            raise ValueError("jwt-validation: a claim is named twice")
        return tuple(sorted(value, key=lambda c: c.name))


def carries_write_only(actions: Sequence[Any]) -> bool:
    """True if any action has a field AWS accepts but never returns (see the module doc)."""
    return any(getattr(type(action), "WRITE_ONLY", None) for action in actions)


Action = Annotated[
    ForwardAction | RedirectAction | FixedResponseAction | AuthenticateOidcAction
    | AuthenticateCognitoAction | JwtValidationAction,
    Field(discriminator="type"),
]
