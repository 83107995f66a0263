"""The authentication annotations' JSON values in upstream's shapes: `auth-idp-oidc`,
`auth-idp-cognito` and `jwt-validation`. Keys match as Go's encoding/json (and so upstream)
matches them: in any case. Cognito and JWT-validation values are also held to what AWS accepts
(the ELBv2 API reference), so that a value AWS would refuse stops before any call."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from controller.ingress.schemas import Json


def _go_keys(value: Any, names: Mapping[str, str]) -> Any:
    """Go's encoding/json on a struct: a key matches a field whatever its case, unknown keys are
    ignored, a later duplicate wins, and null leaves the field as it was."""
    if not isinstance(value, dict):
        return value
    result: dict[str, Any] = {}
    for key, item in value.items():
        name = names.get(key.lower()) if isinstance(key, str) else None
        if name is not None and item is not None:
            result[name] = item
    return result


class OidcConfig(Json):
    issuer: str = Field(min_length=1)
    authorization_endpoint: str = Field(alias="authorizationEndpoint", min_length=1)
    token_endpoint: str = Field(alias="tokenEndpoint", min_length=1)
    user_info_endpoint: str = Field(alias="userInfoEndpoint", min_length=1)
    secret_name: str = Field(alias="secretName", min_length=1)
    extra_params: dict[str, str] = Field(default_factory=dict,
                                         alias="authenticationRequestExtraParams")

    @model_validator(mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _go_keys(value, {
            "issuer": "issuer", "authorizationendpoint": "authorizationEndpoint",
            "tokenendpoint": "tokenEndpoint", "userinfoendpoint": "userInfoEndpoint",
            "secretname": "secretName",
            "authenticationrequestextraparams": "authenticationRequestExtraParams"})


# A Cognito user pool ARN (Cognito's ArnType and UserPoolIdType: `<region>_<id>`).
_USER_POOL_ARN = re.compile(
    r"arn:aws[a-z-]{0,20}:cognito-idp:[a-z]{2}(?:-[a-z]+)+-[0-9]:[0-9]{12}:"
    r"userpool/[a-z]{2}(?:-[a-z]+)+-[0-9]_[0-9A-Za-z]{1,40}")
_CLIENT_ID = re.compile(r"[\w+]{1,128}")
_DOMAIN_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_MAX_EXTRA_PARAMS = 10
_MAX_EXTRA_PARAM_LENGTH = 1024


class CognitoConfig(Json):
    """`auth-idp-cognito` (upstream's `AuthIDPConfigCognito`)."""

    user_pool_arn: str = Field(alias="userPoolARN")
    user_pool_client_id: str = Field(alias="userPoolClientID")
    user_pool_domain: str = Field(alias="userPoolDomain")
    extra_params: dict[str, str] = Field(default_factory=dict,
                                         alias="authenticationRequestExtraParams")

    @model_validator(mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _go_keys(value, {
            "userpoolarn": "userPoolARN", "userpoolclientid": "userPoolClientID",
            "userpooldomain": "userPoolDomain",
            "authenticationrequestextraparams": "authenticationRequestExtraParams"})

    @field_validator("user_pool_arn")
    @classmethod
    def _arn(cls, value: str) -> str:
        if not _USER_POOL_ARN.fullmatch(value):
            raise ValueError("not a Cognito user pool ARN "
                             "(arn:aws:cognito-idp:<region>:<account>:userpool/<pool id>)")
        return value

    @field_validator("user_pool_client_id")
    @classmethod
    def _client(cls, value: str) -> str:
        if not _CLIENT_ID.fullmatch(value):
            raise ValueError("must be 1 to 128 letters, digits, _ or +")
        return value

    @field_validator("user_pool_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        # AWS takes the domain prefix of an Amazon Cognito domain ("my-domain") or a custom
        # domain's name; upstream passes the value through unchanged, and so does aiolbc.
        if "://" in value or "/" in value:
            raise ValueError("a URL: set the domain prefix (my-domain) of an "
                             "Amazon Cognito domain, or a custom domain's name")
        labels = value.split(".")
        if len(value) > 253 or not all(_DOMAIN_LABEL.fullmatch(label) for label in labels):
            raise ValueError("not a domain prefix or a domain name")
        return value

    @field_validator("extra_params")
    @classmethod
    def _extra(cls, value: dict[str, str]) -> dict[str, str]:
        return _extra_params(value)


def _extra_params(value: dict[str, str]) -> dict[str, str]:
    if len(value) > _MAX_EXTRA_PARAMS:
        raise ValueError(f"{len(value)} entries; AWS "
                         f"allows at most {_MAX_EXTRA_PARAMS}")
    for key, item in value.items():
        if not key or len(key) > _MAX_EXTRA_PARAM_LENGTH or len(item) > _MAX_EXTRA_PARAM_LENGTH:
            raise ValueError("names must be 1 to "
                             f"{_MAX_EXTRA_PARAM_LENGTH} characters, values at most "
                             f"{_MAX_EXTRA_PARAM_LENGTH}")
    return value


_JWT_MAX = 256
_JWT_MAX_CLAIMS = 10
_JWT_MAX_VALUES = 10
# Validated by AWS whatever the configuration says, so AWS refuses them as additional claims.
_JWT_DEFAULT_CLAIMS = ("exp", "iss", "nbf", "iat")


def _printable(value: str) -> bool:
    return value.isprintable()


class JwtClaimSpec(Json):
    """One of `jwt-validation`'s `additionalClaims` (upstream's `JwtAdditionalClaim`)."""

    format: str = ""
    name: str = ""
    values: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _go_keys(value, {"format": "format", "name": "name", "values": "values"})

    @model_validator(mode="after")
    def _valid(self) -> JwtClaimSpec:
        # Upstream's checks and messages first (pkg/ingress/enhanced_backend_builder.go).
        if not self.format:
            raise ValueError("format is a required field for additional claims for jwt "
                             "validation")
        if not self.name:
            raise ValueError("name is a required field for additional claims for jwt "
                             "validation")
        if not self.values:
            raise ValueError("values must not be empty for additional claims for jwt "
                             "validation")
        # Then what AWS would refuse (JwtValidationActionAdditionalClaim).
        if len(self.name) > _JWT_MAX or not _printable(self.name):
            raise ValueError(f"a claim name must be at most {_JWT_MAX} printable characters")
        if self.format not in ("single-string", "string-array", "space-separated-values"):
            raise ValueError(f"claim {self.name!r}: format must be single-string, "
                             "string-array or space-separated-values")
        if self.name in _JWT_DEFAULT_CLAIMS:
            raise ValueError(f"claim {self.name!r} is always validated and cannot be an "
                             "additional claim")
        if len(self.values) > _JWT_MAX_VALUES:
            raise ValueError(f"claim {self.name!r} has {len(self.values)} values; AWS allows "
                             f"at most {_JWT_MAX_VALUES}")
        for item in self.values:
            if not item or len(item) > _JWT_MAX or not _printable(item):
                raise ValueError(f"claim {self.name!r}: each value must be 1 to {_JWT_MAX} "
                                 "printable characters")
            if self.format == "space-separated-values" and " " in item:
                raise ValueError(f"claim {self.name!r}: space-separated values cannot contain "
                                 "spaces")
        return self


class JwtValidationConfig(Json):
    """`jwt-validation` (upstream's `JwtValidationConfig`)."""

    jwks_endpoint: str = Field(default="", alias="jwksEndpoint")
    issuer: str = ""
    additional_claims: tuple[JwtClaimSpec, ...] = Field(default=(), alias="additionalClaims")

    @model_validator(mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _go_keys(value, {"jwksendpoint": "jwksEndpoint", "issuer": "issuer",
                                "additionalclaims": "additionalClaims"})

    @model_validator(mode="after")
    def _valid(self) -> JwtValidationConfig:
        if not self.jwks_endpoint:
            raise ValueError("jwksEndpoint is a required field for jwt validation")
        if not self.issuer:
            raise ValueError("issuer is a required field for jwt validation")
        if len(self.jwks_endpoint) > _JWT_MAX or not _https_url(self.jwks_endpoint):
            raise ValueError(f"jwksEndpoint must be a full https:// URL of at most {_JWT_MAX} "
                             "characters")
        if len(self.issuer) > _JWT_MAX or not _printable(self.issuer):
            raise ValueError(f"issuer must be at most {_JWT_MAX} printable characters")
        if len(self.additional_claims) > _JWT_MAX_CLAIMS:
            raise ValueError(f"additionalClaims has {len(self.additional_claims)} claims; AWS "
                             f"allows at most {_JWT_MAX_CLAIMS}")
        names = [c.name for c in self.additional_claims]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"claim {name!r} appears twice in additionalClaims")
        return self


def _https_url(value: str) -> bool:
    if not value.isprintable() or any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a port that is not a number or out of range
    except ValueError:
        return False
    del port
    return parts.scheme == "https" and bool(parts.hostname) and not parts.username \
        and not parts.password
