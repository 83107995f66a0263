"""The load balancer resource."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from controller.model.addons import ShieldProtection, WAFRegionalAssociation, WAFv2Association
from controller.model.base import Items, Model, Tagged, sorted_unique
from controller.model.limits import LOAD_BALANCER_ATTRIBUTES, unknown_attributes
from controller.model.securitygroup import GroupReference, sorted_groups

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$")

LoadBalancerType = Literal["application", "network"]
Scheme = Literal["internal", "internet-facing"]
IpAddressType = Literal["ipv4", "dualstack", "dualstack-without-public-ipv4"]


def check_elb_name(value: str, *, what: str) -> str:
    """ELBv2 names: 1..32 of [A-Za-z0-9-], no leading or trailing '-'."""
    if not _NAME_RE.match(value):
        raise ValueError(
            f"{what} name {value!r}: want 1..32 characters of [a-zA-Z0-9-], "
            "not starting or ending with '-'"
        )
    return value


class SubnetDiscovery(Model):
    """Placeholder resolved by the resolve stage: the VPC's subnets tagged
    `kubernetes.io/role/<role>`, one per availability zone."""

    role: Literal["elb", "internal-elb"]


class SubnetSelector(Model):
    """Placeholder resolved by the resolve stage: the VPC's subnets that carry every listed tag
    key with one of its values (IngressClassParams `subnets.tags`), one per availability
    zone."""

    tags: dict[str, Items[str]]

    @field_validator("tags", mode="before")
    @classmethod
    def _sorted(cls, value: object) -> object:
        if isinstance(value, dict):
            return {key: sorted_unique(values) for key, values in value.items()}
        return value

    @field_validator("tags")
    @classmethod
    def _filters(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        if not value:
            raise ValueError("a subnet tag selector needs at least one tag key")
        for key, values in value.items():
            if not key:
                raise ValueError("a subnet tag selector has an empty tag key")
            if not values:
                raise ValueError(f"subnet tag selector key {key!r} lists no value")
        return value


SubnetPlaceholder = SubnetDiscovery | SubnetSelector
_ADDONS = ("wafv2", "waf_regional", "shield")
# Network load balancer subnet settings; absent (None) ones are not written, so a load balancer
# without them has the canonical JSON (and checkpoint) it had before they existed.
_SUBNET_SETTINGS = ("subnet_order", "eip_allocations", "private_ipv4_addresses",
                    "ipv6_addresses", "enable_prefix_for_ipv6_source_nat",
                    "source_nat_ipv6_prefixes", "subnet_mappings")
SOURCE_NAT_AUTO_ASSIGNED = "auto_assigned"
# Settings nobody asked for are not written at all (None), so that a load balancer without them
# keeps the canonical JSON, and the checkpoint, it had before they existed.
_OMITTED_WHEN_UNSET = (*_ADDONS, *_SUBNET_SETTINGS, "capacity_units", "ipv4_ipam_pool",
                       "customer_owned_ipv4_pool")
_ALB_ONLY = (("ipv4_ipam_pool", "IPAM pools"),
             ("customer_owned_ipv4_pool", "customer-owned IPv4 pools"))
# ModifyCapacityReservation's CapacityUnits is an int32.
MAX_CAPACITY_UNITS = 2**31 - 1


class SubnetMapping(Model):
    """One subnet of a network load balancer and what is asked of it (AWS's SubnetMapping):
    built by the resolve stage, once subnet IDs and their CIDRs are known."""

    subnet_id: str
    allocation_id: str | None = None
    private_ipv4_address: str | None = None
    ipv6_address: str | None = None
    source_nat_ipv6_prefix: str | None = None  # a /80 or `auto_assigned`


class LoadBalancer(Tagged):
    name: str
    type: LoadBalancerType
    scheme: Scheme = "internal"
    # Nobody asked for a scheme: the load balancer the stack already has keeps its own, and
    # `scheme` is only for a new one (upstream's rule for Services without a scheme
    # annotation, pkg/service/model_build_load_balancer.go).
    keep_existing_scheme: bool = False
    # The name does not change with the scheme (a frontend NLB's: upstream's name is its ALB's
    # plus "-nlb"), so a scheme change replaces the load balancer under the same name: the old
    # one (the stack's, with this resource id) is deleted first, as upstream does. Left out of
    # the canonical JSON when false.
    replaced_under_same_name: bool = Field(default=False, exclude_if=lambda value: not value)
    ip_address_type: IpAddressType = "ipv4"
    # Subnet IDs or Name tags as written (the resolve stage turns names into IDs), or a
    # placeholder for discovery.
    subnets: Items[str] | SubnetDiscovery | SubnetSelector
    # IDs (or names, until the resolve stage), the stack's managed group as a `$ref`, or the
    # shared backend group's placeholder.
    security_groups: Items[GroupReference] = ()
    # NLB only: whether inbound rules apply to traffic arriving through PrivateLink (None:
    # AWS's default, "on", left as it is).
    inbound_rules_on_private_link: Literal["on", "off"] | None = None
    attributes: dict[str, str] = Field(default_factory=dict)
    # The subnets in the order the annotation lists them, when something pairs with them by
    # position (upstream keeps a listed order, and sorts discovered subnets by ID).
    subnet_order: Items[str] | None = None
    # NLB static addresses as the Service lists them: EIP allocations pair with the subnets by
    # position, addresses with the subnet whose CIDR holds them. None: AWS picks them.
    eip_allocations: Items[str] | None = None
    private_ipv4_addresses: Items[str] | None = None
    ipv6_addresses: Items[str] | None = None
    # NLB IPv6 source NAT: "on" or "off" (None: AWS's default, off, never sent), and one /80
    # prefix or `auto_assigned` per subnet in the order of their IDs.
    enable_prefix_for_ipv6_source_nat: Literal["on", "off"] | None = None
    source_nat_ipv6_prefixes: Items[str] | None = None
    # The resolve stage's pairing of the settings above with the resolved subnets; None when
    # none is asked for (the deployer then sends plain subnet IDs).
    subnet_mappings: Items[SubnetMapping] | None = None
    # ALB addons (addons.py); None: nobody asked, what AWS has is left alone.
    wafv2: WAFv2Association | None = None
    waf_regional: WAFRegionalAssociation | None = None
    shield: ShieldProtection | None = None
    # The minimum capacity reserved (ModifyCapacityReservation), in capacity units: 0 resets
    # the reservation; None: nobody asked, what AWS has is left alone (upstream: removing the
    # annotation does not reset it).
    capacity_units: int | None = Field(default=None, ge=0, le=MAX_CAPACITY_UNITS)
    # ALB only. The IPv4 IPAM pool public addresses come from first (None: none; one the load
    # balancer has is removed, as upstream does when the annotation goes).
    ipv4_ipam_pool: str | None = None
    # ALB on Outposts only: the customer-owned IPv4 pool, given at creation; AWS cannot change
    # it afterwards (the deployer says so and leaves it).
    customer_owned_ipv4_pool: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_addons(self, handler: SerializerFunctionWrapHandler,
                               info: SerializationInfo) -> dict[str, object]:
        # An addon nobody asked for is not written at all, so a load balancer without addons
        # has the canonical JSON (and checkpoint) it had before addons existed.
        data: dict[str, object] = handler(self)
        for name in _OMITTED_WHEN_UNSET:
            if data.get(name, ...) is None:
                del data[name]
        return data

    @model_validator(mode="after")
    def _addons_on_albs(self) -> LoadBalancer:
        if self.type != "application" and any(getattr(self, a) is not None for a in _ADDONS):
            raise ValueError("WAF and Shield associations are application load balancer "
                             "settings")
        for name, what in _ALB_ONLY:
            if self.type != "application" and getattr(self, name) is not None:
                raise ValueError(f"{what} are an application load balancer setting")
        return self

    @model_validator(mode="after")
    def _subnet_settings_on_nlbs(self) -> LoadBalancer:
        if self.type != "network" and any(
                getattr(self, name) is not None for name in _SUBNET_SETTINGS):
            raise ValueError("static addresses and IPv6 source NAT are network load balancer "
                             "settings")
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        check_elb_name(value, what="load balancer")
        if value.startswith("internal-"):
            raise ValueError(f"load balancer name {value!r} must not start with 'internal-'")
        return value

    @model_validator(mode="after")
    def _known_attributes(self) -> LoadBalancer:
        unknown = unknown_attributes(set(self.attributes), LOAD_BALANCER_ATTRIBUTES[self.type])
        if unknown:
            raise ValueError(f"load balancer attribute {unknown[0]!r} is not one an {self.type} "
                             "load balancer has")
        return self

    @field_validator("subnets", mode="before")
    @classmethod
    def _sets(cls, value: object) -> object:
        return sorted_unique(value)

    @field_validator("security_groups", mode="before")
    @classmethod
    def _groups(cls, value: object) -> object:
        return sorted_groups(value)

    @model_validator(mode="after")
    def _private_link(self) -> LoadBalancer:
        if self.inbound_rules_on_private_link is not None and self.type != "network":
            raise ValueError("inbound rules on PrivateLink traffic are a network load "
                             "balancer setting")
        if self.inbound_rules_on_private_link is not None and not self.security_groups:
            raise ValueError("inbound rules on PrivateLink traffic need security groups on "
                             "the load balancer")
        return self

    @field_validator("subnets")
    @classmethod
    def _some_subnets(
        cls, value: Sequence[str] | SubnetPlaceholder
    ) -> Sequence[str] | SubnetPlaceholder:
        if not isinstance(value, SubnetDiscovery | SubnetSelector) and not value:
            raise ValueError("a load balancer needs at least one subnet")
        return value
