"""Model values → ELBv2 API parameters, and API answers → a normal form for comparison.

Both sides of a comparison go through the same `normal_*` function, so defaults AWS fills in
(redirect placeholders, stickiness off, weight 1, legacy `Values` next to `*Config`) never
look like drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from controller.model import (
    Action,
    AuthenticateCognitoAction,
    AuthenticateOidcAction,
    Condition,
    FixedResponseAction,
    ForwardAction,
    HealthCheck,
    HttpHeaderCondition,
    JwtValidationAction,
    QueryStringCondition,
    RedirectAction,
    Ref,
    RuleTransform,
    TargetGroupByName,
)

RefResolver = Callable[[Ref], str]

_CONDITION_CONFIG = {
    "host-header": "HostHeaderConfig",
    "path-pattern": "PathPatternConfig",
    "http-header": "HttpHeaderConfig",
    "query-string": "QueryStringConfig",
    "source-ip": "SourceIpConfig",
    "http-request-method": "HttpRequestMethodConfig",
}
_REDIRECT_DEFAULTS = {
    "Protocol": "#{protocol}", "Port": "#{port}", "Host": "#{host}",
    "Path": "/#{path}", "Query": "#{query}",
}
_AUTH_DEFAULTS: dict[str, Any] = {
    "SessionCookieName": "AWSELBAuthSessionCookie", "Scope": "openid",
    "SessionTimeout": 604800, "OnUnauthenticatedRequest": "authenticate",
    "AuthenticationRequestExtraParams": {},
}


def arn_of(value: Ref | str | TargetGroupByName, resolve: RefResolver) -> str:
    if isinstance(value, TargetGroupByName):
        # The resolve stage replaces every name; one left here is a bug, not input.
        raise ValueError(f"target group named {value.target_group_name!r} was not resolved")
    return resolve(value) if isinstance(value, Ref) else value


def api_action(action: Action, order: int, resolve: RefResolver) -> dict[str, Any]:
    out: dict[str, Any] = {"Type": action.type, "Order": order}
    if isinstance(action, ForwardAction):
        config: dict[str, Any] = {"TargetGroups": [
            {"TargetGroupArn": arn_of(tg.target_group_arn, resolve), "Weight": tg.weight}
            for tg in action.target_groups
        ]}
        if action.stickiness is not None:
            sticky: dict[str, Any] = {"Enabled": action.stickiness.enabled}
            if action.stickiness.duration_seconds is not None:
                sticky["DurationSeconds"] = action.stickiness.duration_seconds
            config["TargetGroupStickinessConfig"] = sticky
        out["ForwardConfig"] = config
    elif isinstance(action, RedirectAction):
        out["RedirectConfig"] = {
            "Protocol": action.protocol, "Port": action.port, "Host": action.host,
            "Path": action.path, "Query": action.query, "StatusCode": action.status_code,
        }
    elif isinstance(action, FixedResponseAction):
        fixed: dict[str, Any] = {"StatusCode": action.status_code}
        if action.content_type is not None:
            fixed["ContentType"] = action.content_type
        if action.message_body is not None:
            fixed["MessageBody"] = action.message_body
        out["FixedResponseConfig"] = fixed
    elif isinstance(action, AuthenticateOidcAction):
        out["AuthenticateOidcConfig"] = {
            "Issuer": action.issuer,
            "AuthorizationEndpoint": action.authorization_endpoint,
            "TokenEndpoint": action.token_endpoint,
            "UserInfoEndpoint": action.user_info_endpoint,
            "ClientId": action.client_id,
            "ClientSecret": action.client_secret,
            "SessionCookieName": action.session_cookie_name,
            "Scope": action.scope,
            "SessionTimeout": action.session_timeout,
            "OnUnauthenticatedRequest": action.on_unauthenticated_request,
            "AuthenticationRequestExtraParams": dict(action.authentication_request_extra_params),
        }
    elif isinstance(action, AuthenticateCognitoAction):
        out["AuthenticateCognitoConfig"] = {
            "UserPoolArn": action.user_pool_arn,
            "UserPoolClientId": action.user_pool_client_id,
            "UserPoolDomain": action.user_pool_domain,
            "SessionCookieName": action.session_cookie_name,
            "Scope": action.scope,
            "SessionTimeout": action.session_timeout,
            "OnUnauthenticatedRequest": action.on_unauthenticated_request,
            "AuthenticationRequestExtraParams": dict(action.authentication_request_extra_params),
        }
    elif isinstance(action, JwtValidationAction):
        jwt: dict[str, Any] = {"JwksEndpoint": action.jwks_endpoint, "Issuer": action.issuer}
        if action.additional_claims:
            jwt["AdditionalClaims"] = [
                {"Format": c.format, "Name": c.name, "Values": list(c.values)}
                for c in action.additional_claims]
        out["JwtValidationConfig"] = jwt
    return out


def api_actions(actions: Iterable[Action], resolve: RefResolver) -> list[dict[str, Any]]:
    return [api_action(a, i + 1, resolve) for i, a in enumerate(actions)]


def normal_action(action: dict[str, Any]) -> dict[str, Any]:
    kind = action["Type"]
    if kind == "forward":
        config = action.get("ForwardConfig") or {}
        groups = config.get("TargetGroups") or [{"TargetGroupArn": action.get("TargetGroupArn")}]
        sticky = config.get("TargetGroupStickinessConfig") or {}
        enabled = bool(sticky.get("Enabled", False))
        return {
            "Type": kind,
            "TargetGroups": sorted((g["TargetGroupArn"], int(g.get("Weight", 1))) for g in groups),
            "Stickiness": (enabled, sticky.get("DurationSeconds") if enabled else None),
        }
    if kind == "redirect":
        config = {**_REDIRECT_DEFAULTS, **(action.get("RedirectConfig") or {})}
        return {"Type": kind, **config}
    if kind == "fixed-response":
        config = action.get("FixedResponseConfig") or {}
        return {"Type": kind, "StatusCode": config.get("StatusCode"),
                "ContentType": config.get("ContentType"),
                "MessageBody": config.get("MessageBody") or None}
    if kind == "authenticate-oidc":
        config = {**_AUTH_DEFAULTS, **(action.get("AuthenticateOidcConfig") or {})}
        # AWS never returns the client secret, so it cannot be compared here.
        config.pop("ClientSecret", None)
        config.pop("UseExistingClientSecret", None)
        config["SessionTimeout"] = int(config["SessionTimeout"])
        return {"Type": kind, **config}
    if kind == "authenticate-cognito":
        config = {**_AUTH_DEFAULTS, **(action.get("AuthenticateCognitoConfig") or {})}
        config["SessionTimeout"] = int(config["SessionTimeout"])
        return {"Type": kind, **config}
    if kind == "jwt-validation":
        config = action.get("JwtValidationConfig") or {}
        claims = sorted((str(c.get("Name")), str(c.get("Format")), tuple(c.get("Values") or ()))
                        for c in config.get("AdditionalClaims") or ())
        return {"Type": kind, "JwksEndpoint": config.get("JwksEndpoint"),
                "Issuer": config.get("Issuer"), "AdditionalClaims": claims}
    return dict(action)


def normal_actions(actions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(actions, key=lambda a: int(a.get("Order", 0)))
    return [normal_action(a) for a in ordered]


def api_condition(condition: Condition) -> dict[str, Any]:
    key = _CONDITION_CONFIG[condition.field]
    if isinstance(condition, QueryStringCondition):
        values: list[Any] = []
        for kv in condition.values:
            item = {"Value": kv.value}
            if kv.key is not None:
                item["Key"] = kv.key
            values.append(item)
        return {"Field": condition.field, key: {"Values": values}}
    config: dict[str, Any] = {"Values": list(condition.values)}
    regex = getattr(condition, "regex_values", ())
    if regex:
        config = {"RegexValues": list(regex)}
    if isinstance(condition, HttpHeaderCondition):
        config["HttpHeaderName"] = condition.header_name
    return {"Field": condition.field, key: config}


def normal_condition(condition: dict[str, Any]) -> tuple[Any, ...]:
    field = condition["Field"]
    config = condition.get(_CONDITION_CONFIG.get(field, "")) or {}
    values = config.get("Values") or condition.get("Values") or []
    if field == "query-string":
        pairs = sorted((v.get("Key") or "", v["Value"]) for v in values)
        return (field, "", tuple(pairs))
    header = (config.get("HttpHeaderName") or "").lower() if field == "http-header" else ""
    regex = config.get("RegexValues") or []
    if regex:
        return (field, header, tuple(sorted(values)), tuple(sorted(regex)))
    return (field, header, tuple(sorted(values)))


def normal_conditions(conditions: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(normal_condition(c) for c in conditions)


_TRANSFORM_CONFIG = {"host-header-rewrite": "HostHeaderRewriteConfig",
                     "url-rewrite": "UrlRewriteConfig"}


def api_transforms(transforms: Iterable[RuleTransform]) -> list[dict[str, Any]]:
    return [{"Type": t.type, _TRANSFORM_CONFIG[t.type]: {"Rewrites": [
        {"Regex": r.regex, "Replace": r.replace} for r in t.rewrites]}} for t in transforms]


def normal_transforms(transforms: Iterable[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for t in transforms or ():
        config = t.get(_TRANSFORM_CONFIG.get(str(t.get("Type")), "")) or {}
        rewrites = tuple((r.get("Regex"), r.get("Replace") or "")
                         for r in config.get("Rewrites") or ())
        out.append((t.get("Type"), rewrites))
    return sorted(out, key=lambda item: str(item[0]))


def api_health_check(hc: HealthCheck) -> dict[str, Any]:
    params: dict[str, Any] = {
        "HealthCheckEnabled": True,
        "HealthCheckProtocol": hc.protocol,
        "HealthCheckPort": str(hc.port),
        "HealthCheckIntervalSeconds": hc.interval_seconds,
        "HealthCheckTimeoutSeconds": hc.timeout_seconds,
        "HealthyThresholdCount": hc.healthy_threshold,
        "UnhealthyThresholdCount": hc.unhealthy_threshold,
    }
    if hc.protocol in ("HTTP", "HTTPS"):
        params["HealthCheckPath"] = hc.path or "/"
    if hc.matcher is not None:
        if hc.matcher.http_code is not None:
            params["Matcher"] = {"HttpCode": hc.matcher.http_code}
        else:
            params["Matcher"] = {"GrpcCode": hc.matcher.grpc_code}
    return params


def health_check_differs(desired: dict[str, Any], current: dict[str, Any]) -> bool:
    for key, value in desired.items():
        if key == "HealthCheckEnabled":
            if current.get(key, True) is not True:
                return True
            continue
        if key == "Matcher":
            cur = {k: v for k, v in (current.get(key) or {}).items() if v}
            if cur != value:
                return True
            continue
        if str(current.get(key)) != str(value):
            return True
    return False
