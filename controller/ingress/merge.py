"""A group's load-balancer settings: IngressClassParams applied to each member's annotations,
then upstream's merge rules across members (Exclusive: set once or equal everywhere; Merge:
combined in member order)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from controller.annotations import quote
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.errors import InvalidInput, MissingReference
from controller.ingress.annotations import (
    DEFAULT_INBOUND_CIDRS,
    DEFAULT_INBOUND_CIDRS_DUALSTACK,
    EXCLUSIVE_FIELDS,
    IngressAnnotations,
)
from controller.ingress.classes import ClassParams
from controller.ingress.groups import Member
from controller.model import QuotaExceeded, SubnetSelector


class BuildError(InvalidInput):
    """The group cannot be built; one line, shown on every member as is."""

    condition_reason = "FailedBuildModel"


class GroupQuotaExceeded(BuildError):
    """The group would pass one of AWS's quotas (`exceeded`: which, its value, what it needs):
    planned member by member, in the group's order (`exclusions.settle`)."""

    def __init__(self, message: str, exceeded: QuotaExceeded) -> None:
        super().__init__(message)
        self.exceeded = exceeded


class MissingObject(BuildError, MissingReference):
    """A backend Service (or its port) or an OIDC Secret that does not exist (yet)."""


@dataclass(frozen=True, kw_only=True)
class LoadBalancerConfig:
    scheme: Literal["internal", "internet-facing"]
    name: str | None
    ip_address_type: Literal["ipv4", "dualstack", "dualstack-without-public-ipv4"]
    subnets: tuple[str, ...] | SubnetSelector | None
    security_groups: tuple[str, ...]
    attributes: Mapping[str, str]
    ssl_redirect: int | None
    # Who the managed frontend group admits (CIDRs already defaulted when neither CIDRs nor
    # prefix lists are given).
    inbound_cidrs: tuple[str, ...]
    ssl_policy: str
    tags: Mapping[str, str] = field(default_factory=dict)
    prefix_lists: tuple[str, ...] = ()
    manage_backend_rules: bool | None = None  # None: --enable-manage-backend-security-group-rules


def apply_params(ann: IngressAnnotations, params: ClassParams | None) -> IngressAnnotations:
    """IngressClassParams values replace the member's own annotations."""
    if params is None:
        return ann
    update: dict[str, Any] = {}
    if params.scheme is not None:
        update["scheme"] = params.scheme
    if params.load_balancer_name:
        update["load_balancer_name"] = params.load_balancer_name
    if params.ip_address_type is not None:
        update["ip_address_type"] = params.ip_address_type
    if params.ssl_policy:
        update["ssl_policy"] = params.ssl_policy
    if params.inbound_cidrs is not None:
        update["inbound_cidrs"] = tuple(params.inbound_cidrs)
    if params.prefix_lists is not None:
        update["prefix_lists"] = tuple(params.prefix_lists)
    if params.subnets is not None and (params.subnets.ids or params.subnets.tags):
        if params.subnets.ids and params.subnets.tags:
            raise BuildError(f"IngressClassParams {params.name}: subnets: give either ids or "
                             "tags, not both")
        if params.subnets.ids:
            update["subnets"] = tuple(params.subnets.ids)
        else:
            try:
                update["subnets"] = SubnetSelector(tags=dict(params.subnets.tags))
            except ValueError as exc:
                reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else exc
                raise BuildError(f"IngressClassParams {params.name}: subnets.tags: "
                                 f"{reason}") from None
    if params.load_balancer_attributes:
        update["load_balancer_attributes"] = {**(ann.load_balancer_attributes or {}),
                                              **params.attribute_map()}
    if params.ssl_redirect is not None:
        # Upstream: a member whose class params set sslRedirectPort redirects to it, its own
        # ssl-redirect annotation aside; the group's members must then agree.
        update["ssl_redirect"] = params.ssl_redirect
    if params.certificate_arn:
        update["certificate_arns"] = tuple(params.certificate_arn)
    if params.tags:
        update["tags"] = {**ann.tags, **params.tag_map()}
    return dataclasses.replace(ann, **update)


def _exclusive(members: Sequence[tuple[Member, IngressAnnotations]], attr: str,
               suffix: str) -> Any:
    chosen: Any = None
    owner = ""
    for member, ann in members:
        value = getattr(ann, attr)
        if value is None:
            continue
        comparable = dict(value) if isinstance(value, Mapping) else value
        if chosen is None:
            chosen, owner = comparable, member.key
        elif comparable != chosen:
            raise BuildError(
                f"annotation {PREFIX}{suffix} conflicts within the group: {owner} has "
                f"{quote(_show(chosen))}, {member.key} has {quote(_show(comparable))}")
    return chosen


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def merge_load_balancer(members: Sequence[tuple[Member, IngressAnnotations]], *,
                        default_scheme: Literal["internal", "internet-facing"],
                        default_ssl_policy: str,
                        default_tags: Mapping[str, str] | None = None,
                        external_managed_tags: frozenset[str] = frozenset(),
                        default_tags_low_priority: bool = False) -> LoadBalancerConfig:
    values = {attr: _exclusive(members, attr, suffix) for attr, suffix in EXCLUSIVE_FIELDS}
    tags: dict[str, str] = {}
    owners: dict[str, str] = {}
    for member, ann in members:
        for name in sorted(set(ann.tags) & external_managed_tags):
            raise BuildError(f"Ingress {member.key}: tag {name!r} is managed outside the "
                             "controller (--external-managed-tags)")
        # The group's resources carry every member's tags: a key two members give different
        # values is an error naming both (upstream), never one value chosen silently.
        for name, value in sorted(ann.tags.items()):
            if name in tags and tags[name] != value:
                raise BuildError(
                    f"annotation {PREFIX}tags conflicts within the group: tag {name!r} is "
                    f"{quote(tags[name])} on {owners[name]}, {quote(value)} on {member.key}")
            tags[name] = value
            owners.setdefault(name, member.key)
    # --default-tags win over the tags annotation, as upstream documents, unless the
    # EnableDefaultTagsLowPriority gate is on.
    tags = ({**(default_tags or {}), **tags} if default_tags_low_priority
            else {**tags, **(default_tags or {})})
    ip_type: Literal["ipv4", "dualstack", "dualstack-without-public-ipv4"] = (
        values["ip_address_type"] or "ipv4")
    prefix_lists = values["prefix_lists"] or ()
    inbound = values["inbound_cidrs"] or (() if prefix_lists else (
        DEFAULT_INBOUND_CIDRS if ip_type == "ipv4" else DEFAULT_INBOUND_CIDRS_DUALSTACK))
    return LoadBalancerConfig(
        scheme=values["scheme"] or default_scheme,
        name=values["load_balancer_name"],
        ip_address_type=ip_type,
        subnets=values["subnets"],
        security_groups=values["security_groups"] or (),
        attributes=values["load_balancer_attributes"] or {},
        ssl_redirect=values["ssl_redirect"],
        inbound_cidrs=tuple(inbound),
        ssl_policy=values["ssl_policy"] or default_ssl_policy,
        tags=tags,
        prefix_lists=tuple(prefix_lists),
        manage_backend_rules=values["manage_backend_rules"],
    )
