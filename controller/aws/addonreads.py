"""Reading what a load balancer carries beside ELBv2: its WAFv2 and WAF Classic (regional) web
ACLs, its Shield Advanced protection, the account's Shield subscription, and a regional WAFv2
web ACL by name. One call each (ListWebACLs pages), through the deploy's `Caller`, so they are
counted, throttled and refused after a snapshot read like every other call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.aws.caller import Caller
from controller.aws.errors import AWSError


@dataclass(frozen=True)
class Protection:
    """A Shield Advanced protection: its id, and the name that says who created it."""

    id: str
    name: str


async def wafv2_web_acl_of(calls: Caller, resource_arn: str) -> str:
    """The ARN of the WAFv2 web ACL associated with `resource_arn` ("" for none)."""
    resp = await calls.call("GetWebACLForResource", service="wafv2", ResourceArn=resource_arn)
    web_acl: dict[str, Any] = resp.get("WebACL") or {}
    return str(web_acl.get("ARN") or "")


async def waf_regional_web_acl_of(calls: Caller, resource_arn: str) -> str:
    """The ID of the WAF Classic (regional) web ACL associated with `resource_arn` ("" for
    none)."""
    resp = await calls.call("GetWebACLForResource", service="waf-regional",
                            ResourceArn=resource_arn)
    summary: dict[str, Any] = resp.get("WebACLSummary") or {}
    return str(summary.get("WebACLId") or "")


async def protection_of(calls: Caller, resource_arn: str) -> Protection | None:
    """The Shield Advanced protection of `resource_arn`, or None."""
    try:
        resp = await calls.call("DescribeProtection", service="shield",
                                ResourceArn=resource_arn)
    except AWSError as exc:
        if exc.code == "ResourceNotFoundException":
            return None
        raise
    found: dict[str, Any] = resp.get("Protection") or {}
    if not found:
        return None
    return Protection(id=str(found.get("Id") or ""), name=str(found.get("Name") or ""))


async def shield_subscribed(calls: Caller) -> bool:
    """Whether the account has an active Shield Advanced subscription."""
    resp = await calls.call("GetSubscriptionState", service="shield")
    return resp.get("SubscriptionState") == "ACTIVE"


async def wafv2_web_acl_named(calls: Caller, name: str) -> str | None:
    """The ARN of the REGIONAL WAFv2 web ACL called `name` (upstream's lookup: ListWebACLs,
    page by page), or None."""
    marker: str | None = None
    while True:
        params: dict[str, Any] = {"Scope": "REGIONAL", "Limit": 100}
        if marker:
            params["NextMarker"] = marker
        resp = await calls.call("ListWebACLs", service="wafv2", **params)
        for summary in resp.get("WebACLs") or []:
            if summary.get("Name") == name:
                return str(summary.get("ARN") or "")
        marker = resp.get("NextMarker")
        if not marker or not resp.get("WebACLs"):
            return None


__all__ = [
    "Protection",
    "protection_of",
    "shield_subscribed",
    "waf_regional_web_acl_of",
    "wafv2_web_acl_named",
    "wafv2_web_acl_of",
]
