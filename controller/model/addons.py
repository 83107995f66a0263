"""What an ALB carries beside its listeners (upstream's "addons", `pkg/model/wafv2`,
`pkg/model/wafregional`, `pkg/model/shield`): a WAFv2 web ACL association, a WAF Classic
(regional) web ACL association, a Shield Advanced protection.

Each is part of the load balancer's model, so its checkpoint covers it. Absent (None) means
nobody asked: the deployer leaves whatever AWS has alone, as upstream does when no member of
the group carries the key. An empty web ACL means "none": the deployer removes the
association. A web ACL named by its name stays a name here (`WebACLByName`): the resolve stage
looks it up, so the checkpoint covers what the user wrote, not what AWS answered.
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import field_validator

from controller.model.base import Model

_WAFV2_ARN: Final = re.compile(r"arn:[a-z0-9-]+:wafv2:[a-z0-9-]+:\d{12}:regional/webacl/\S+")
# AWS: Name of a WAFv2 web ACL, 1..128 of [A-Za-z0-9_-]; a WAF Classic ResourceId, 1..128.
_WAFV2_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
_WAF_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")


def wafv2_arn_problem(value: str) -> str | None:
    """Why `value` is not a regional WAFv2 web ACL ARN (None: it is)."""
    if _WAFV2_ARN.fullmatch(value) is None:
        return ("is not a regional WAFv2 web ACL ARN "
                "(arn:<partition>:wafv2:<region>:<account>:regional/webacl/<name>/<id>)")
    return None


def wafv2_name_problem(value: str) -> str | None:
    if _WAFV2_NAME.fullmatch(value) is None:
        return "is not a WAFv2 web ACL name (1 to 128 of A-Z, a-z, 0-9, _ and -)"
    return None


def waf_id_problem(value: str) -> str | None:
    if _WAF_ID.fullmatch(value) is None:
        return "is not a WAF Classic web ACL ID (1 to 128 of A-Z, a-z, 0-9, _ and -)"
    return None


def web_acl_not_found(name: str) -> str:
    """What the resolve stage (an Event) and admission (a denial) say of a name no regional
    WAFv2 web ACL has."""
    return f"no REGIONAL WAFv2 web ACL is named {name!r} in this account and region"


class WebACLByName(Model):
    """Placeholder for the resolve stage: the REGIONAL WAFv2 web ACL of this name
    (wafv2 ListWebACLs), as upstream's name lookup."""

    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        problem = wafv2_name_problem(value)
        if problem is not None:
            raise ValueError(f"web ACL name {value!r} {problem}")
        return value


class WAFv2Association(Model):
    """The WAFv2 web ACL the load balancer is associated with; "" disassociates."""

    web_acl: str | WebACLByName

    @field_validator("web_acl")
    @classmethod
    def _arn(cls, value: str | WebACLByName) -> str | WebACLByName:
        if isinstance(value, str) and value:
            problem = wafv2_arn_problem(value)
            if problem is not None:
                raise ValueError(f"web ACL {value!r} {problem}")
        return value


class WAFRegionalAssociation(Model):
    """The WAF Classic (regional) web ACL the load balancer is associated with, by ID; ""
    disassociates."""

    web_acl_id: str

    @field_validator("web_acl_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if value:
            problem = waf_id_problem(value)
            if problem is not None:
                raise ValueError(f"web ACL ID {value!r} {problem}")
        return value


class ShieldProtection(Model):
    """Whether the load balancer has a Shield Advanced protection. Disabling removes only a
    protection the controller created (upstream's names, `SHIELD_PROTECTION_NAMES`)."""

    enabled: bool


# The names upstream gives the protections it creates; one with another name is someone else's.
SHIELD_PROTECTION_NAME: Final = "managed by aws-load-balancer-controller"
SHIELD_PROTECTION_NAMES: Final = frozenset({SHIELD_PROTECTION_NAME,
                                            "managed by aws-alb-ingress-controller"})

__all__ = [
    "SHIELD_PROTECTION_NAME",
    "SHIELD_PROTECTION_NAMES",
    "ShieldProtection",
    "WAFRegionalAssociation",
    "WAFv2Association",
    "WebACLByName",
    "waf_id_problem",
    "wafv2_arn_problem",
    "wafv2_name_problem",
    "web_acl_not_found",
]
