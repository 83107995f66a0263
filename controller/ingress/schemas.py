"""JSON annotation values in upstream's shapes: `listen-ports`, `actions.<name>`,
`conditions.<name>` and `transforms.<name>` (the authentication ones are in
`controller.ingress.authschemas`). The routing ones are upstream's
structs (`pkg/ingress/config_types.go`) with its JSON names, decoded as Go decodes them
(`controller.ingress.gojson`: keys in any case, unknown fields ignored and reported)."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Protocol = Literal["HTTP", "HTTPS"]


class Json(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ListenPort(Json):
    protocol: Protocol
    port: int


class _Go(BaseModel):
    """A struct of upstream's `pkg/ingress/config_types.go`: field aliases are its JSON names,
    decoded by `controller.ingress.gojson` as Go decodes them."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


# AWS's lengths (ELBv2 API reference: a condition's RegexValues, a RewriteConfig's Regex and
# Replace), and a bound on rewrites per transform that AWS's own limit stays under.
MAX_REGEX_LENGTH = 128
MAX_REWRITE_LENGTH = 1024
MAX_REWRITES = 10


class TargetGroupTuple(_Go):
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN", min_length=1,
                                         max_length=2048)
    target_group_name: str | None = Field(default=None, alias="targetGroupName", min_length=1,
                                          max_length=32)
    service_name: str | None = Field(default=None, alias="serviceName", min_length=1,
                                     max_length=253)
    service_port: int | str | None = Field(default=None, alias="servicePort")
    weight: int | None = Field(default=None, ge=0, le=999)

    @model_validator(mode="after")
    def _one(self) -> TargetGroupTuple:
        by_aws = self.target_group_arn is not None or self.target_group_name is not None
        if by_aws == (self.service_name is not None):
            raise ValueError("each target group needs exactly one of serviceName, "
                             "targetGroupARN/targetGroupName")
        if self.service_name is not None and self.service_port is None:
            raise ValueError(f"target group {self.service_name} needs a servicePort")
        return self


class StickinessConfig(_Go):
    enabled: bool = False
    duration_seconds: int | None = Field(default=None, alias="durationSeconds", ge=1,
                                         le=604800)


class ForwardConfig(_Go):
    target_groups: tuple[TargetGroupTuple, ...] = Field(alias="targetGroups", min_length=1,
                                                       max_length=5)
    stickiness: StickinessConfig | None = Field(default=None,
                                                alias="targetGroupStickinessConfig")

    @model_validator(mode="after")
    def _weights(self) -> ForwardConfig:
        if len(self.target_groups) > 1 and any(t.weight is None for t in self.target_groups):
            raise ValueError("weight must be set when routing to several target groups")
        return self


class RedirectConfig(_Go):
    protocol: str | None = Field(default=None, alias="protocol")
    port: str | None = Field(default=None, alias="port")
    host: str | None = Field(default=None, alias="host")
    path: str | None = Field(default=None, alias="path")
    query: str | None = Field(default=None, alias="query")
    status_code: Literal["HTTP_301", "HTTP_302"] = Field(alias="statusCode")


class FixedResponseConfig(_Go):
    content_type: str | None = Field(default=None, alias="contentType")
    message_body: str | None = Field(default=None, alias="messageBody")
    status_code: str = Field(alias="statusCode", pattern=r"^[2-5][0-9][0-9]$")


class ActionSpec(_Go):
    """`actions.<name>` (upstream's `Action`): a forward (one target group by ARN or name, or
    weighted target groups), redirect or fixed response."""

    type: Literal["forward", "redirect", "fixed-response"] = Field(alias="type")
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN", min_length=1,
                                         max_length=2048)
    target_group_name: str | None = Field(default=None, alias="targetGroupName", min_length=1,
                                          max_length=32)
    forward_config: ForwardConfig | None = Field(default=None, alias="forwardConfig")
    redirect_config: RedirectConfig | None = Field(default=None, alias="redirectConfig")
    fixed_response_config: FixedResponseConfig | None = Field(default=None,
                                                              alias="fixedResponseConfig")

    @model_validator(mode="after")
    def _complete(self) -> ActionSpec:
        simple = self.target_group_arn is not None or self.target_group_name is not None
        if self.type == "forward" and not (simple or self.forward_config):
            raise ValueError("a forward action needs targetGroupARN, targetGroupName or "
                             "forwardConfig")
        if self.type == "forward" and simple and self.forward_config is not None:
            raise ValueError("a forward action takes either forwardConfig or "
                             "targetGroupARN/targetGroupName")
        if self.type == "redirect" and self.redirect_config is None:
            raise ValueError("a redirect action needs redirectConfig")
        if self.type == "fixed-response" and self.fixed_response_config is None:
            raise ValueError("a fixed-response action needs fixedResponseConfig")
        return self

    def forward_groups(self) -> tuple[TargetGroupTuple, ...]:
        """The target groups of a forward, the simple form as upstream normalises it."""
        if self.forward_config is not None:
            return self.forward_config.target_groups
        return (TargetGroupTuple(targetGroupARN=self.target_group_arn,
                                 targetGroupName=self.target_group_name),)


def _regexes(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if not value or len(value) > MAX_REGEX_LENGTH:
            raise ValueError(f"regex value {value[:40]!r}: want 1..{MAX_REGEX_LENGTH} "
                             "characters")
    return values


class _Values(_Go):
    values: tuple[str, ...] = Field(min_length=1)


class _Matched(_Go):
    """Values (wildcards) or regexValues (regular expressions), exactly one (upstream)."""

    values: tuple[str, ...] = ()
    regex_values: tuple[str, ...] = Field(default=(), alias="regexValues")

    @model_validator(mode="after")
    def _one(self) -> _Matched:
        if not self.values and not self.regex_values:
            raise ValueError("values or regexValues must be specified")
        if self.values and self.regex_values:
            raise ValueError("precisely one of values and regexValues can be specified")
        _regexes(self.regex_values)
        return self


class _HeaderConfig(_Matched):
    http_header_name: str = Field(alias="httpHeaderName", min_length=1, max_length=40)


class _KeyValue(_Go):
    key: str | None = None
    value: str


class _QueryConfig(_Go):
    values: tuple[_KeyValue, ...] = Field(min_length=1)


class ConditionSpec(_Go):
    """One entry of `conditions.<name>` (upstream's `RuleCondition`)."""

    field: Literal["host-header", "path-pattern", "http-header", "query-string", "source-ip",
                   "http-request-method"]
    host_header: _Matched | None = Field(default=None, alias="hostHeaderConfig")
    path_pattern: _Matched | None = Field(default=None, alias="pathPatternConfig")
    http_header: _HeaderConfig | None = Field(default=None, alias="httpHeaderConfig")
    query_string: _QueryConfig | None = Field(default=None, alias="queryStringConfig")
    source_ip: _Values | None = Field(default=None, alias="sourceIPConfig")
    http_request_method: _Values | None = Field(default=None, alias="httpRequestMethodConfig")
    values: tuple[str, ...] | None = None  # legacy form for host-header and path-pattern

    @model_validator(mode="after")
    def _config(self) -> ConditionSpec:
        configs = {
            "host-header": self.host_header, "path-pattern": self.path_pattern,
            "http-header": self.http_header, "query-string": self.query_string,
            "source-ip": self.source_ip, "http-request-method": self.http_request_method,
        }
        legacy_ok = self.field in ("host-header", "path-pattern") and self.values
        if configs[self.field] is None and not legacy_ok:
            raise ValueError(f"a {self.field} condition needs its config")
        if self.source_ip is not None:
            for cidr in self.source_ip.values:
                try:
                    ipaddress.ip_network(cidr, strict=False)
                except ValueError:
                    raise ValueError(f"source-ip {cidr!r} is not a CIDR") from None
        return self


class RewriteConfig(_Go):
    regex: str = Field(min_length=1, max_length=MAX_REWRITE_LENGTH)
    replace: str = Field(max_length=MAX_REWRITE_LENGTH)


class RewriteConfigObject(_Go):
    rewrites: tuple[RewriteConfig, ...] = Field(min_length=1, max_length=MAX_REWRITES)


class TransformSpec(_Go):
    """One entry of `transforms.<name>` (upstream's `Transform`)."""

    type: Literal["url-rewrite", "host-header-rewrite"]
    host_header_rewrite: RewriteConfigObject | None = Field(default=None,
                                                            alias="hostHeaderRewriteConfig")
    url_rewrite: RewriteConfigObject | None = Field(default=None, alias="urlRewriteConfig")

    @model_validator(mode="after")
    def _config(self) -> TransformSpec:
        if self.type == "url-rewrite" and self.url_rewrite is None:
            raise ValueError("a url-rewrite transform needs urlRewriteConfig")
        if self.type == "host-header-rewrite" and self.host_header_rewrite is None:
            raise ValueError("a host-header-rewrite transform needs hostHeaderRewriteConfig")
        return self

