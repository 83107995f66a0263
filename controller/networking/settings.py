"""The security-group settings: `BackendSettings` declares the networking flags (the shared
backend group, the rules on the targets' groups, EC2's rules-per-group quota) that the Ingress
and Service model builders and the TargetGroupBinding controller read; `NetworkingSettings` is
where and how the TargetGroupBinding controller keeps the targets' rules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller import flagrules
from controller.model import GroupReference, SharedBackendSecurityGroup
from controller.settings import ClusterScope
from runtime import flags, flagvalues
from runtime.flags import flag

_SECURITY_GROUP_ID = re.compile(r"sg-[0-9a-f]{1,32}")


def _security_group_id(value: str) -> str | None:
    if value and _SECURITY_GROUP_ID.fullmatch(value) is None:
        return f"{value!r} is not a security group ID (sg-...)"
    return None


def _tags_to_match(tags: Mapping[str, str]) -> str | None:
    # Tags to match, not to write: any key a group may carry (aws: ones included).
    for key, tag in tags.items():
        if len(key) > flagrules.TAG_KEY_MAX or len(tag) > flagrules.TAG_VALUE_MAX:
            return (f"tag {key!r}: keys are at most {flagrules.TAG_KEY_MAX} characters and "
                    f"values at most {flagrules.TAG_VALUE_MAX}")
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendSettings:
    """The shared backend security group, and the rules load balancers get on their targets'
    groups."""

    enabled: bool = flag(
        "--enable-backend-security-group", default=True, parse=flagvalues.parse_bool,
        help="attach a shared backend security group to load balancers with a managed "
        "frontend group and admit it on the targets' groups")
    group_id: str = flag(  # a user-managed backend group; "" = the controller's own
        "--backend-security-group", default="", parse=str, check=_security_group_id,
        help="use this security group (ID) as the shared backend group instead of creating one")
    manage_rules_default: bool = flag(
        "--enable-manage-backend-security-group-rules", default=False, parse=flagvalues.parse_bool,
        help="manage the targets' rules for load balancers with user-given security groups too "
        "(the default of the manage-backend-security-group-rules annotations)")
    disable_restricted_rules: bool = flag(
        "--disable-restricted-sg-rules", default=False, parse=flagvalues.parse_bool,
        help="admit load balancers on every port of the targets' groups, not only the target "
        "ports")
    # EC2's "Inbound or outbound rules per security group" (60 unless the account raised it;
    # 1000 at most): past it, the managed frontend group is split across several groups.
    rules_per_group: int = flag(
        "--max-rules-per-security-group", default=60, parse=flagvalues.parse_int,
        check=flagvalues.within(1, 1000),
        help="inbound rules per security group (EC2's quota, per IP family): a managed "
        "frontend group needing more is split across several groups")
    eni_security_group_tags: Mapping[str, str] = flag(
        "--service-target-eni-security-group-tags", default={}, parse=flagvalues.parse_key_values,
        check=_tags_to_match,
        help="key=value,...: of a target ENI's security groups, the one carrying these tags "
        "(besides the cluster tag) gets the rules")

    def __post_init__(self) -> None:
        flags.freeze(self)

    def check(self) -> str | None:
        if self.group_id and not self.enabled:
            return "--backend-security-group: set, but --enable-backend-security-group is false"
        return None

    @property
    def restricted_rules(self) -> bool:
        """Rules admit the target ports only."""
        return not self.disable_restricted_rules

    @property
    def group(self) -> GroupReference:
        return self.group_id or SharedBackendSecurityGroup()


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkingSettings:
    """Where targets live and how their rules are kept: the cluster (whose tag marks the
    targets' groups) and its VPC, the rules' flags, and how long a group's rules, once read,
    are trusted while nothing about them changed."""

    cluster: ClusterScope
    backend: BackendSettings = field(default_factory=BackendSettings)
    verify_interval: float = 60.0


__all__ = ["BackendSettings", "NetworkingSettings"]
