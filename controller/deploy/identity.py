"""Which existing load balancers and target groups are a stack's, decided as upstream decides
(pkg/deploy/elbv2/load_balancer_synthesizer.go, target_group_synthesizer.go): by the stack tags
(cluster and stack, or the legacy cluster key) and the resource-id tag. The name is only an
input when creating, so whatever an older model, an older upstream release or a renaming
annotation left under another name is adopted, not replaced.

A matching resource is replaced only when AWS cannot change what differs: a load balancer's
type or scheme (unless the model keeps the existing scheme), a target group's target type,
protocol or protocol version (and, with the stack context's NLBHealthCheckAdvancedConfig gate
off, an L4 target group's health check protocol, matcher, interval or timeout). Where
several match, the one already in use wins (the live path stays), then the one with the
model's name.

Also here, because it follows from the load balancer found: the model's placeholders that
upstream fills from it (`follow_existing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from controller.aws import Reader
from controller.deploy.errors import DeployError, OwnershipConflict
from controller.deploy.ownedarns import StackArns
from controller.deploy.tags import Tracking
from controller.model import LoadBalancer, SubnetDiscovery, TargetGroup
from controller.model.naming import DEFAULT_PROTOCOL_VERSION

Desc = dict[str, Any]
Tags = dict[str, dict[str, str]]


@dataclass
class LoadBalancerMatch:
    """`current`: the stack's load balancer to converge (None: create one). `orphans`: the
    stack's other load balancers, deleted once the current one carries the traffic."""

    current: Desc | None
    orphans: list[str]
    tags: Tags


def compatible_load_balancer(model: LoadBalancer, desc: Mapping[str, Any]) -> bool:
    return desc.get("Type") == model.type and (
        model.keep_existing_scheme or desc.get("Scheme") == model.scheme)


def match_load_balancer(tracking: Tracking, resource_id: str | None,
                        model: LoadBalancer | None, descs: Mapping[str, Desc],
                        tags: Tags) -> LoadBalancerMatch:
    ours = {arn: d for arn, d in descs.items() if tracking.owns(tags.get(arn, {}))}
    # A load balancer with the stack tags but no resource id is nobody's to replace: upstream
    # refuses to touch it, and so do we.
    tracked = {arn: d for arn, d in ours.items()
               if tracking.resource_id(tags.get(arn, {})) is not None}
    current: Desc | None = None
    if model is not None:
        candidates = sorted(
            (d for arn, d in tracked.items()
             if tracking.resource_id(tags[arn]) == resource_id
             and compatible_load_balancer(model, d)),
            key=lambda d: (d.get("LoadBalancerName") != model.name, d["LoadBalancerArn"]))
        current = candidates[0] if candidates else None
        if current is None:
            for arn, d in descs.items():
                if d.get("LoadBalancerName") != model.name:
                    continue
                if (model.replaced_under_same_name and arn in tracked
                        and tracking.resource_id(tags[arn]) == resource_id):
                    continue  # an orphan, deleted before its replacement is created
                if arn not in ours:
                    raise OwnershipConflict(f"load balancer name {model.name} is taken by one "
                                            "this stack does not own")
                raise DeployError(
                    f"load balancer {model.name}: type {d.get('Type')}, scheme "
                    f"{d.get('Scheme')} in AWS, {model.type}, {model.scheme} in the model; "
                    "these cannot be changed in place, and a replacement needs another name")
    keep = {current["LoadBalancerArn"]} if current is not None else set()
    return LoadBalancerMatch(current=current, orphans=sorted(set(tracked) - keep), tags=tags)


async def find_load_balancer(reader: Reader, tracking: Tracking, owned: StackArns,
                             resource_id: str | None, model: LoadBalancer | None
                             ) -> LoadBalancerMatch:
    """The load balancers this process knows for the stack, plus the model's name unless a
    known one can already serve: one lookup by ARN, at most one by name, one DescribeTags."""
    descs = {d["LoadBalancerArn"]: d
             for d in await reader.load_balancers(arns=sorted(owned.load_balancers))}
    looked_up = False
    if model is not None and not any(
            compatible_load_balancer(model, d) or d.get("LoadBalancerName") == model.name
            for d in descs.values()):
        looked_up = True
        for d in await reader.load_balancers(names=[model.name]):
            descs[d["LoadBalancerArn"]] = d
    match = match_load_balancer(tracking, resource_id, model, descs,
                                await reader.tags(descs))
    if match.current is None and model is not None and not looked_up:
        # The known ones cannot serve after all: the name must be free before a create.
        for d in await reader.load_balancers(names=[model.name]):
            descs[d["LoadBalancerArn"]] = d
        match = match_load_balancer(tracking, resource_id, model, descs,
                                    await reader.tags(descs))
    return match


@dataclass
class LoadBalancersMatch:
    """Every load balancer of a stack (an Ingress group's ALB and its frontend NLB):
    `current` by resource id (absent: create it), `orphans` the stack's others."""

    current: dict[str, Desc]
    orphans: list[str]
    tags: Tags


async def find_load_balancers(reader: Reader, tracking: Tracking, owned: StackArns,
                              models: Mapping[str, LoadBalancer]) -> LoadBalancersMatch:
    """`find_load_balancer` for each of the stack's load balancers; with one (or none) it is
    exactly that, with more the lookups of the first are shared where they can be."""
    if len(models) <= 1:
        rid, model = next(iter(models.items()), (None, None))
        one = await find_load_balancer(reader, tracking, owned, rid, model)
        current = {rid: one.current} if rid is not None and one.current is not None else {}
        return LoadBalancersMatch(current=current, orphans=one.orphans, tags=one.tags)
    matches = {rid: await find_load_balancer(reader, tracking, owned, rid, model)
               for rid, model in sorted(models.items())}
    tags: Tags = {}
    for match in matches.values():
        tags.update(match.tags)
    current = {rid: m.current for rid, m in matches.items() if m.current is not None}
    kept = {d["LoadBalancerArn"] for d in current.values()}
    tracked = {arn for arn, t in tags.items()
               if tracking.owns(t) and tracking.resource_id(t) is not None}
    return LoadBalancersMatch(current=current, orphans=sorted(tracked - kept), tags=tags)


def follow_existing(model: LoadBalancer, current: Mapping[str, Any] | None, *,
                    vpc_id: str) -> LoadBalancer:
    """What upstream takes from the stack's existing load balancer: its scheme when the model
    keeps it (then discovery looks for the subnets of that scheme), and its subnets when they
    are to be discovered and the scheme is unchanged
    (pkg/ingress/model_build_load_balancer.go, pkg/service/model_build_load_balancer.go).
    The subnets of a load balancer outside the stack's VPC are not the stack's: then they are
    discovered."""
    if current is None:
        return model
    update: dict[str, Any] = {}
    scheme = model.scheme
    have_scheme = current.get("Scheme")
    if model.keep_existing_scheme and have_scheme in ("internal", "internet-facing") \
            and have_scheme != scheme:
        scheme = have_scheme
        update["scheme"] = scheme
    same_vpc = current.get("VpcId", vpc_id) == vpc_id
    if isinstance(model.subnets, SubnetDiscovery) and have_scheme == scheme and same_vpc:
        subnets = sorted({az["SubnetId"] for az in current.get("AvailabilityZones") or []
                          if az.get("SubnetId")})
        if subnets:
            update["subnets"] = tuple(subnets)
    elif isinstance(model.subnets, SubnetDiscovery) and "scheme" in update:
        update["subnets"] = SubnetDiscovery(
            role="elb" if scheme == "internet-facing" else "internal-elb")
    return model.model_copy(update=update) if update else model


def compatible_target_group(model: TargetGroup, desc: Mapping[str, Any], *,
                            advanced_health_check: bool = True) -> bool:
    """Upstream's replacement rule (isSDKTargetGroupRequiresReplacement): target type,
    protocol, protocol version and the target control port. The port is only where targets
    registered without one go (every registration names a port), so a changed port keeps the
    target group. With `advanced_health_check` off (the NLBHealthCheckAdvancedConfig gate), an
    L4 target group's health check protocol, matcher, interval and timeout count too."""
    if desc.get("TargetType") != model.target_type or desc.get("Protocol") != model.protocol:
        return False
    # Upstream's isSDKTargetGroupTargetControlPortDrifted: no operation changes it.
    if desc.get("TargetControlPort") != model.target_control_port:
        return False
    if model.protocol in ("HTTP", "HTTPS"):
        want = model.protocol_version or DEFAULT_PROTOCOL_VERSION
        return bool(desc.get("ProtocolVersion", DEFAULT_PROTOCOL_VERSION) == want)
    if not advanced_health_check and model.protocol in _L4:
        return not _l4_health_check_drifted(model, desc)
    return True


# Upstream's isL4TargetGroup.
_L4 = frozenset({"TCP", "UDP", "TLS", "QUIC", "TCP_QUIC", "TCP_UDP"})


def _l4_health_check_drifted(model: TargetGroup, desc: Mapping[str, Any]) -> bool:
    """Upstream's isSDKTargetGroupRequiresReplacementDueToNLBHealthCheck: only what the model
    sets counts."""
    hc = model.health_check
    if hc.protocol != desc.get("HealthCheckProtocol"):
        return True
    if hc.matcher is not None:
        have = desc.get("Matcher") or {}
        if (hc.matcher.http_code != have.get("HttpCode")
                or hc.matcher.grpc_code != have.get("GrpcCode")):
            return True
    return bool(hc.interval_seconds != desc.get("HealthCheckIntervalSeconds")
                or hc.timeout_seconds != desc.get("HealthCheckTimeoutSeconds"))


@dataclass
class TargetGroupMatch:
    current: dict[str, Desc] = field(default_factory=dict)  # resource id → target group
    orphans: list[str] = field(default_factory=list)  # ours, no longer wanted
    unmatched: list[str] = field(default_factory=list)  # resource ids to create


def match_target_groups(tracking: Tracking, model: Mapping[str, TargetGroup],
                        descs: Mapping[str, Desc], tags: Tags, *,
                        in_use: Set[str] = frozenset(),
                        advanced_health_check: bool = True) -> TargetGroupMatch:
    """`in_use`: ARNs the load balancer forwards to now; among equals they win.
    `advanced_health_check`: see `compatible_target_group`."""
    by_rid: dict[str, list[Desc]] = {}
    found = TargetGroupMatch()
    for arn, desc in descs.items():
        rid = tracking.resource_id(tags.get(arn, {}))
        if rid is None:
            continue  # someone else's (e.g. referenced by ARN), or ours without a resource id
        by_rid.setdefault(rid, []).append(desc)
    for rid, group in by_rid.items():
        wanted = model.get(rid)
        fit = [] if wanted is None else sorted(
            (d for d in group if compatible_target_group(
                wanted, d, advanced_health_check=advanced_health_check)),
            key=lambda d: (d["TargetGroupArn"] not in in_use,
                           d["TargetGroupName"] != wanted.name, d["TargetGroupArn"]))
        if fit:
            found.current[rid] = fit[0]
        found.orphans += [d["TargetGroupArn"] for d in group
                          if not fit or d is not fit[0]]
    found.orphans.sort()
    found.unmatched = sorted(rid for rid in model if rid not in found.current)
    for rid in found.unmatched:
        name = model[rid].name
        for arn, desc in descs.items():
            if desc.get("TargetGroupName") != name:
                continue
            if not tracking.owns(tags.get(arn, {})):
                raise OwnershipConflict(f"target group name {name} is taken by one this stack "
                                        "does not own")
            raise DeployError(
                f"target group {name}: target type {desc.get('TargetType')}, protocol "
                f"{desc.get('Protocol')} in AWS differ from the model and cannot be changed "
                "in place, and a replacement needs another name")
    return found


__all__ = [
    "LoadBalancerMatch",
    "LoadBalancersMatch",
    "TargetGroupMatch",
    "compatible_load_balancer",
    "compatible_target_group",
    "find_load_balancer",
    "find_load_balancers",
    "follow_existing",
    "match_load_balancer",
    "match_target_groups",
]
