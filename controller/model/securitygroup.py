"""Security groups: the managed frontend group of a load balancer (a stack resource), the shared
backend group (a placeholder the deployer fills in), and the networking a TargetGroupBinding
asks for on its targets' groups."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from controller.model.base import Items, Model, Ref, Tagged

# EC2's names for the protocols a rule may carry ("-1": every protocol).
RuleProtocol = Literal["tcp", "udp", "icmp", "icmpv6", "-1"]
# Upstream's description of a managed frontend group.
MANAGED_SECURITY_GROUP_DESCRIPTION = "[k8s] Managed SecurityGroup for LoadBalancer"
# The stack resource id of that group (upstream's, so its tags name the same resource).
MANAGED_SECURITY_GROUP_ID = "ManagedLBSecurityGroup"
# When its inbound rules pass EC2's rules-per-group quota, the managed group is split: the
# first part keeps upstream's id and name (so a group upstream made is still adopted), part
# N > 1 is `ManagedLBSecurityGroup-N` named `<name>-N`. A load balancer carries at most 16
# security groups whatever an account's quotas, so no split has more parts.
MAX_MANAGED_SECURITY_GROUPS = 16


def managed_group_id(part: int) -> str:
    """The resource id of part `part` (1-based) of a split managed frontend group."""
    return MANAGED_SECURITY_GROUP_ID if part == 1 else f"{MANAGED_SECURITY_GROUP_ID}-{part}"


def managed_group_name(name: str, part: int) -> str:
    return name if part == 1 else f"{name}-{part}"


def is_managed_group_id(resource_id: str | None) -> bool:
    """A resource id of a managed frontend group (any part of a split one)."""
    if resource_id == MANAGED_SECURITY_GROUP_ID:
        return True
    prefix = MANAGED_SECURITY_GROUP_ID + "-"
    if resource_id is None or not resource_id.startswith(prefix):
        return False
    part = resource_id[len(prefix):]
    return part.isascii() and part.isdigit() and 2 <= int(part) <= MAX_MANAGED_SECURITY_GROUPS


class SharedBackendSecurityGroup(Model):
    """Placeholder for the cluster's shared backend security group. It belongs to no stack (every
    load balancer with a managed frontend group carries it), so the deployer finds or creates it
    and puts its ID in place; the model, and so the checkpoint, only says "the backend group"."""

    shared: Literal["backend"] = "backend"


# A security group a load balancer carries or a rule admits: an ID (or, for user-given groups
# before the resolve stage, a name), this stack's managed group, or the shared backend group.
GroupReference = str | Ref | SharedBackendSecurityGroup


def group_sort_key(value: GroupReference) -> str:
    if isinstance(value, Ref):
        return value.ref
    if isinstance(value, SharedBackendSecurityGroup):
        return "$backend"
    return value


def sorted_groups(value: object) -> object:
    """Security groups are a set to AWS: stored sorted and deduplicated."""
    if isinstance(value, (list, tuple)):
        unique: dict[str, GroupReference] = {}
        for item in value:
            if isinstance(item, (str, Ref, SharedBackendSecurityGroup)):
                unique.setdefault(group_sort_key(item), item)
            else:
                return value  # left to validation, which says what is wrong
        return tuple(unique[k] for k in sorted(unique))
    return value


class IngressRule(Model):
    """One inbound rule with exactly one source, as EC2 stores it after expansion. For ICMP,
    `from_port` is the type and `to_port` the code."""

    protocol: RuleProtocol
    from_port: int = Field(ge=-1, le=65535)
    to_port: int = Field(ge=-1, le=65535)
    cidr_ipv4: str | None = None
    cidr_ipv6: str | None = None
    prefix_list_id: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> IngressRule:
        sources = [s for s in (self.cidr_ipv4, self.cidr_ipv6, self.prefix_list_id) if s]
        if len(sources) != 1:
            raise ValueError("an ingress rule needs exactly one of cidr_ipv4, cidr_ipv6, "
                             "prefix_list_id")
        for cidr, version in ((self.cidr_ipv4, 4), (self.cidr_ipv6, 6)):
            if cidr is None:
                continue
            try:
                network = ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ValueError(f"{cidr!r} is not a CIDR") from None
            if network.version != version:
                raise ValueError(f"{cidr!r} is not an IPv{version} CIDR")
        if self.protocol in ("tcp", "udp") and not 0 <= self.from_port <= self.to_port:
            raise ValueError(f"port range {self.from_port}-{self.to_port} is not a range")
        return self

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        source = self.cidr_ipv4 or self.cidr_ipv6 or self.prefix_list_id or ""
        return self.protocol, self.from_port, self.to_port, source


class SecurityGroup(Tagged):
    """A security group the stack owns: created, tagged, its inbound rules kept to exactly
    these, deleted with the stack. Outbound rules are EC2's default (everything)."""

    name: str = Field(min_length=1, max_length=255)
    description: str = Field(default=MANAGED_SECURITY_GROUP_DESCRIPTION, min_length=1,
                             max_length=255)
    ingress: Items[IngressRule] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value.lower().startswith("sg-"):
            raise ValueError(f"security group name {value!r} must not start with 'sg-'")
        return value

    @field_validator("ingress", mode="after")
    @classmethod
    def _rules(cls, value: Sequence[IngressRule]) -> tuple[IngressRule, ...]:
        unique = {rule.sort_key: rule for rule in value}
        return tuple(unique[k] for k in sorted(unique))


# ---- TargetGroupBinding networking ---------------------------------------------------------

class NetworkingPeer(Model):
    """Where traffic to the targets comes from: a security group or a CIDR block."""

    security_group: GroupReference | None = None
    ip_block: str | None = None

    @model_validator(mode="after")
    def _one(self) -> NetworkingPeer:
        if (self.security_group is None) == (self.ip_block is None):
            raise ValueError("a networking peer needs exactly one of security_group, ip_block")
        return self

    @property
    def sort_key(self) -> str:
        if self.security_group is not None:
            return "sg:" + group_sort_key(self.security_group)
        return f"ip:{self.ip_block}"


class NetworkingPort(Model):
    """A port the targets are reached on: a number, a named port (resolved by the binding's
    controller), or every port (None)."""

    protocol: Literal["TCP", "UDP"] = "TCP"
    port: int | str | None = None

    @property
    def sort_key(self) -> tuple[str, int, str]:
        if self.port is None:
            return self.protocol, -1, ""
        if isinstance(self.port, int):
            return self.protocol, self.port, ""
        return self.protocol, 65536, self.port


class NetworkingIngress(Model):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    from_: Items[NetworkingPeer] = Field(alias="from", min_length=1)
    ports: Items[NetworkingPort] = ()

    @field_validator("from_", mode="after")
    @classmethod
    def _peers(cls, value: Sequence[NetworkingPeer]) -> tuple[NetworkingPeer, ...]:
        unique = {p.sort_key: p for p in value}
        return tuple(unique[k] for k in sorted(unique))

    @field_validator("ports", mode="after")
    @classmethod
    def _ports(cls, value: Sequence[NetworkingPort]) -> tuple[NetworkingPort, ...]:
        unique = {p.sort_key: p for p in value}
        return tuple(unique[k] for k in sorted(unique))


class TargetGroupBindingNetworking(Model):
    """`spec.networking` of a managed binding: the inbound rules its targets' groups need."""

    ingress: Items[NetworkingIngress] = Field(min_length=1)


__all__ = [
    "MANAGED_SECURITY_GROUP_DESCRIPTION",
    "MANAGED_SECURITY_GROUP_ID",
    "MAX_MANAGED_SECURITY_GROUPS",
    "GroupReference",
    "IngressRule",
    "NetworkingIngress",
    "NetworkingPeer",
    "NetworkingPort",
    "RuleProtocol",
    "SecurityGroup",
    "SharedBackendSecurityGroup",
    "TargetGroupBindingNetworking",
    "group_sort_key",
    "is_managed_group_id",
    "managed_group_id",
    "managed_group_name",
    "sorted_groups",
]
