"""JSON annotation values in upstream's shapes: `listen-ports`, `actions.<name>` and
`conditions.<name>` (the authentication ones are in `controller.ingress.authschemas`). Upstream
(Go's encoding/json) matches action keys case-insensitively; so does `ActionSpec`."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Protocol = Literal["HTTP", "HTTPS"]


class Json(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ListenPort(Json):
    protocol: Protocol
    port: int


class TargetGroupTuple(Json):
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN")
    service_name: str | None = Field(default=None, alias="serviceName")
    service_port: int | str | None = Field(default=None, alias="servicePort")
    weight: int | None = Field(default=None, ge=0, le=999)

    @model_validator(mode="after")
    def _one(self) -> TargetGroupTuple:
        if (self.target_group_arn is None) == (self.service_name is None):
            raise ValueError("each target group needs exactly one of targetGroupARN, "
                             "serviceName")
        if self.service_name is not None and self.service_port is None:
            raise ValueError(f"target group {self.service_name} needs a servicePort")
        return self


class StickinessConfig(Json):
    enabled: bool
    duration_seconds: int | None = Field(default=None, alias="durationSeconds", ge=1,
                                         le=604800)


class ForwardConfig(Json):
    target_groups: tuple[TargetGroupTuple, ...] = Field(alias="targetGroups", min_length=1,
                                                       max_length=5)
    stickiness: StickinessConfig | None = Field(default=None,
                                                alias="targetGroupStickinessConfig")


class RedirectConfig(Json):
    protocol: str | None = Field(default=None, alias="Protocol")
    port: str | None = Field(default=None, alias="Port")
    host: str | None = Field(default=None, alias="Host")
    path: str | None = Field(default=None, alias="Path")
    query: str | None = Field(default=None, alias="Query")
    status_code: Literal["HTTP_301", "HTTP_302"] = Field(alias="StatusCode")


class FixedResponseConfig(Json):
    content_type: str | None = Field(default=None, alias="ContentType")
    message_body: str | None = Field(default=None, alias="MessageBody")
    status_code: str = Field(alias="StatusCode", pattern=r"^[2-5][0-9][0-9]$")


class ActionSpec(Json):
    """`actions.<name>`: a forward (one ARN, or weighted target groups), redirect or fixed
    response. Upstream accepts its config keys in either case; so does this parser."""

    type: Literal["forward", "redirect", "fixed-response"] = Field(alias="Type")
    target_group_arn: str | None = Field(default=None, alias="TargetGroupArn")
    forward_config: ForwardConfig | None = Field(default=None, alias="ForwardConfig")
    redirect_config: RedirectConfig | None = Field(default=None, alias="RedirectConfig")
    fixed_response_config: FixedResponseConfig | None = Field(default=None,
                                                              alias="FixedResponseConfig")

    @model_validator(mode="before")
    @classmethod
    def _case(cls, value: Any) -> Any:
        return _title_keys(value)

    @model_validator(mode="after")
    def _complete(self) -> ActionSpec:
        if self.type == "forward" and not (self.target_group_arn or self.forward_config):
            raise ValueError("a forward action needs targetGroupARN or forwardConfig")
        if self.type == "redirect" and self.redirect_config is None:
            raise ValueError("a redirect action needs redirectConfig")
        if self.type == "fixed-response" and self.fixed_response_config is None:
            raise ValueError("a fixed-response action needs fixedResponseConfig")
        return self


_TITLE_KEYS = {
    "type": "Type", "targetgrouparn": "TargetGroupArn", "forwardconfig": "ForwardConfig",
    "redirectconfig": "RedirectConfig", "fixedresponseconfig": "FixedResponseConfig",
    "protocol": "Protocol", "port": "Port", "host": "Host", "path": "Path", "query": "Query",
    "statuscode": "StatusCode", "contenttype": "ContentType", "messagebody": "MessageBody",
}
_NESTED = {"RedirectConfig", "FixedResponseConfig"}


_FORWARD_KEYS = {"targetgroups": "targetGroups",
                 "targetgroupstickinessconfig": "targetGroupStickinessConfig"}
_TUPLE_KEYS = {"targetgrouparn": "targetGroupARN", "servicename": "serviceName",
               "serviceport": "servicePort", "weight": "weight"}
_STICKY_KEYS = {"enabled": "enabled", "durationseconds": "durationSeconds"}


def _rename(value: Any, names: Mapping[str, str]) -> Any:
    if not isinstance(value, dict):
        return value
    return {(names.get(k.lower(), k) if isinstance(k, str) else k): v for k, v in value.items()}


def _title_keys(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    result: dict[str, Any] = {}
    for key, item in value.items():
        name = _TITLE_KEYS.get(key.lower(), key) if isinstance(key, str) else key
        if name == "ForwardConfig" and isinstance(item, dict):
            item = _rename(item, _FORWARD_KEYS)
            groups = item.get("targetGroups")
            if isinstance(groups, list):
                item["targetGroups"] = [_rename(g, _TUPLE_KEYS) for g in groups]
            if "targetGroupStickinessConfig" in item:
                item["targetGroupStickinessConfig"] = _rename(
                    item["targetGroupStickinessConfig"], _STICKY_KEYS)
        elif name in _NESTED:
            item = _title_keys(item)
        result[name] = item
    return result


class _Values(Json):
    values: tuple[str, ...] = Field(min_length=1)


class _HeaderConfig(Json):
    http_header_name: str = Field(alias="httpHeaderName", min_length=1, max_length=40)
    values: tuple[str, ...] = Field(min_length=1)


class _KeyValue(Json):
    key: str | None = None
    value: str


class _QueryConfig(Json):
    values: tuple[_KeyValue, ...] = Field(min_length=1)


class ConditionSpec(Json):
    field: Literal["host-header", "path-pattern", "http-header", "query-string", "source-ip",
                   "http-request-method"]
    host_header: _Values | None = Field(default=None, alias="hostHeaderConfig")
    path_pattern: _Values | None = Field(default=None, alias="pathPatternConfig")
    http_header: _HeaderConfig | None = Field(default=None, alias="httpHeaderConfig")
    query_string: _QueryConfig | None = Field(default=None, alias="queryStringConfig")
    source_ip: _Values | None = Field(default=None, alias="sourceIpConfig")
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
