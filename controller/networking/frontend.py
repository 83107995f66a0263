"""The pure side of a load balancer's security groups, shared by the Ingress and Service model
builders: the managed frontend group's inbound rules, the groups the load balancer carries,
and the networking its managed bindings ask of their targets' groups.

Upstream's rules (`pkg/ingress/model_build_managed_sg.go`, `pkg/service/model_build_managed_sg
.go`, `model_build_target_group.go`):
- one rule per listen port (its protocol, lower case) and source: every IPv4 CIDR, every IPv6
  CIDR, every prefix list; ICMP "fragmentation needed" (IPv4 type 3 code 4, IPv6 type 2 code 0)
  per CIDR when path-MTU discovery is asked for;
- the load balancer carries the managed group and, when enabled, the shared backend group;
  with user-given groups, the backend group only when backend rules are managed;
- managed bindings admit the backend group (or, without one, the managed frontend group) on
  their target ports, or on every port with `--disable-restricted-sg-rules`.

Checked before any AWS call: the managed group's rules fit EC2's per-group inbound quota, split
across as many managed groups as needed (`split_rules`, `add_managed_groups`) within the
security groups a load balancer may carry, and CIDRs of a family the load balancer does not
serve (IPv6 on an IPv4 one) are named (`unreachable_cidrs`, `admits_no_one`): they admit no one.

How rules are split (a rule's part depends on the rule and the number of parts only, so adding a
CIDR moves no other rule while the parts still fit): each rule goes to the part of highest
rendezvous weight (sha256 of part and rule); the number of parts is the smallest, from what the
rules need at least, at which no part passes the quota. Only when that would take more parts
than the load balancer may carry are the rules packed instead (each to the heaviest part with
room), which fits more but may move rules when one is added.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from controller.model import (
    MAX_MANAGED_SECURITY_GROUPS,
    GroupReference,
    IngressRule,
    NetworkingIngress,
    NetworkingPeer,
    NetworkingPort,
    Ref,
    SecurityGroup,
    StackBuilder,
    TargetGroupBindingNetworking,
    managed_group_id,
    managed_group_name,
)
from controller.networking.settings import BackendSettings

ICMP_FRAGMENTATION_NEEDED = ("icmp", 3, 4)
ICMPV6_PACKET_TOO_BIG = ("icmpv6", 2, 0)
# EC2's default quota "Inbound or outbound rules per security group" (Amazon VPC quotas): 60
# inbound rules, counted apart for IPv4 and IPv6 sources; a prefix list counts as its maximum
# number of entries. Adjustable per account (--max-rules-per-security-group); going past it
# fails an AuthorizeSecurityGroupIngress halfway through a deploy (RulesPerSecurityGroup
# LimitExceeded), so the managed group is split before any AWS call.
INBOUND_RULES_PER_GROUP: Final = 60


def is_ipv6(cidr: str) -> bool:
    return ipaddress.ip_network(cidr, strict=False).version == 6


def frontend_rules(ports: Iterable[tuple[str, int]], *, cidrs: Sequence[str],
                   prefix_lists: Sequence[str] = (),
                   icmp_path_mtu: bool = False) -> list[IngressRule]:
    """`ports`: (protocol, port) of each listener, protocol as a Service or listener names it
    (TCP, UDP, HTTP, HTTPS: the last two are TCP to EC2)."""
    rules: list[IngressRule] = []
    for protocol, port in ports:
        ec2_protocol: Literal["tcp", "udp"] = "udp" if protocol.upper() == "UDP" else "tcp"
        for cidr in cidrs:
            source = {"cidr_ipv6": cidr} if is_ipv6(cidr) else {"cidr_ipv4": cidr}
            rules.append(IngressRule.model_validate(
                {"protocol": ec2_protocol, "from_port": port, "to_port": port, **source}))
        for prefix_list in prefix_lists:
            rules.append(IngressRule(protocol=ec2_protocol, from_port=port, to_port=port,
                                     prefix_list_id=prefix_list))
    if icmp_path_mtu:
        for cidr in cidrs:
            v6 = is_ipv6(cidr)
            protocol, icmp_type, code = ICMPV6_PACKET_TOO_BIG if v6 else ICMP_FRAGMENTATION_NEEDED
            source = {"cidr_ipv6": cidr} if v6 else {"cidr_ipv4": cidr}
            rules.append(IngressRule.model_validate(
                {"protocol": protocol, "from_port": icmp_type, "to_port": code, **source}))
    return rules


class RuleQuotaExceeded(ValueError):
    """The managed groups would need more inbound rules than EC2 allows (one line)."""


def _cost(rule: IngressRule) -> tuple[int, int]:
    """What a rule counts in each family: a prefix list counts once in both (at least: EC2
    counts its maximum number of entries, which only EC2 knows)."""
    if rule.prefix_list_id is not None:
        return 1, 1
    return (0, 1) if rule.cidr_ipv6 is not None else (1, 0)


def _weight(part: int, rule: IngressRule) -> int:
    key = "\0".join((str(part), *map(str, rule.sort_key)))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def _spread(rules: Sequence[IngressRule], parts: int, *, quota: int,
            packed: bool) -> list[list[IngressRule]] | None:
    """Each rule to its part of highest weight (`packed`: of highest weight with room); None
    when a part would pass the quota."""
    placed: list[list[IngressRule]] = [[] for _ in range(parts)]
    load = [[0, 0] for _ in range(parts)]
    for rule in rules:
        cost = _cost(rule)
        order = sorted(range(parts), key=lambda p: (-_weight(p + 1, rule), p))
        for part in order if packed else order[:1]:
            if all(load[part][f] + cost[f] <= quota for f in (0, 1)):
                break
        else:
            return None
        placed[part].append(rule)
        load[part][0] += cost[0]
        load[part][1] += cost[1]
    return placed


def split_rules(rules: Iterable[IngressRule], *, quota: int = INBOUND_RULES_PER_GROUP,
                max_groups: int = MAX_MANAGED_SECURITY_GROUPS
                ) -> dict[int, tuple[IngressRule, ...]]:
    """The managed group's distinct rules split into parts (numbered from 1) that each fit
    EC2's quota per family (the module's docstring says how). Part 1 is always there (it may
    hold no rule); a later part no rule falls to is left out, so the others keep their
    numbers. RuleQuotaExceeded (one line) when they need more than `max_groups` parts."""
    ordered = [r for _, r in sorted({r.sort_key: r for r in rules}.items())]
    totals = [sum(_cost(r)[f] for r in ordered) for f in (0, 1)]
    needed = max(1, math.ceil(max(totals) / quota))
    limit = max(1, min(max_groups, MAX_MANAGED_SECURITY_GROUPS))
    placed = None
    for parts in range(needed, limit + 1):
        placed = _spread(ordered, parts, quota=quota, packed=False)
        if placed is not None:
            break
    else:
        if needed <= limit:
            placed = _spread(ordered, limit, quota=quota, packed=True)
    if placed is None:
        family, count = max(zip(("IPv4", "IPv6"), totals, strict=True),
                            key=lambda item: item[1])
        raise RuleQuotaExceeded(
            f"the managed security groups would need {count} inbound {family} rules (one per "
            f"listen port and source), more than fit in the {limit} managed security "
            f"group{'s' if limit != 1 else ''} the load balancer may carry with {quota} "
            "rules each (--max-rules-per-security-group; 5 security groups per load "
            "balancer, the backend group included): admit fewer CIDRs or prefix lists, listen "
            "on fewer ports, or name your own security groups")
    return {n: tuple(p) for n, p in enumerate(placed, start=1) if p or n == 1}


def add_managed_groups(builder: StackBuilder, rules: Iterable[IngressRule], *, name: str,
                       tags: Mapping[str, str], quota: int,
                       max_groups: int) -> tuple[Ref, ...]:
    """The managed frontend group, split when its rules pass the quota, added to the stack;
    their `$ref`s, first part first."""
    return tuple(
        builder.add_security_group(managed_group_id(part), SecurityGroup(
            name=managed_group_name(name, part), ingress=part_rules, tags=dict(tags)))
        for part, part_rules in split_rules(rules, quota=quota, max_groups=max_groups).items())


def managed_group_room(backend: BackendSettings, *, security_groups_per_load_balancer: int
                       ) -> int:
    """How many managed groups a load balancer may carry beside the backend group."""
    return security_groups_per_load_balancer - (1 if backend.enabled else 0)


def unreachable_cidrs(cidrs: Iterable[str], *, ip_address_type: str) -> list[str]:
    """The CIDRs that admit no one on a load balancer of `ip_address_type`: IPv6 ones on an
    IPv4 load balancer, which no IPv6 client reaches."""
    if ip_address_type != "ipv4":
        return []
    return [c for c in cidrs if is_ipv6(c)]


def admits_no_one(unreachable: Sequence[str], *, what: str, ip_address_type: str,
                  left: bool, refused: bool = False) -> str:
    """The message naming `unreachable` CIDRs (of `what`: the annotation or field that gave
    them); `left`: any other source (a CIDR, a prefix list) still admits clients; `refused`:
    the load balancer is not built for it."""
    message = (f"{what}: {', '.join(unreachable)} admit{'s' if len(unreachable) == 1 else ''} "
               f"no one: IPv6 sources never reach an {ip_address_type} load balancer (make it "
               "dualstack, or remove them)")
    if not left:
        message += (f"; no other source is given, so the load balancer "
                    f"{'would admit' if refused else 'admits'} no one")
    return message


@dataclass(frozen=True)
class LoadBalancerGroups:
    """The groups a load balancer carries, and what its bindings' targets must admit (None:
    no rules are managed on the targets' groups)."""

    security_groups: tuple[GroupReference, ...]
    target_source: GroupReference | tuple[GroupReference, ...] | None


def load_balancer_groups(*, managed: GroupReference | tuple[GroupReference, ...] | None,
                         user_groups: Sequence[str], manage_backend_rules: bool,
                         backend: BackendSettings, where: str) -> LoadBalancerGroups:
    """`managed`: the managed frontend group's `$ref` (its parts' when split) when the stack
    has one (no user groups). Raises ValueError when backend rules are asked for with the
    backend group disabled."""
    parts = managed if isinstance(managed, tuple) else (managed,) if managed is not None else ()
    if parts:
        # Without the backend group the targets admit every part of the managed group.
        source: GroupReference | tuple[GroupReference, ...] = (
            parts[0] if len(parts) == 1 else parts)
        if not backend.enabled:
            return LoadBalancerGroups(parts, source)
        return LoadBalancerGroups((*parts, backend.group), backend.group)
    groups: tuple[GroupReference, ...] = tuple(user_groups)
    if not manage_backend_rules:
        return LoadBalancerGroups(groups, None)
    if not backend.enabled:
        raise ValueError(f"{where}: managing backend security group rules with user-given "
                         "security groups needs the backend security group "
                         "(--enable-backend-security-group)")
    return LoadBalancerGroups((*groups, backend.group), backend.group)


def binding_networking(source: GroupReference | tuple[GroupReference, ...] | None,
                       ports: Iterable[NetworkingPort], *, restricted: bool,
                       protocols: Iterable[str] = ("TCP",)
                       ) -> TargetGroupBindingNetworking | None:
    """`spec.networking` admitting `source` (every one of them) on `ports`, or on every port of
    `protocols` when rules are not restricted."""
    if source is None:
        return None
    sources = source if isinstance(source, tuple) else (source,)
    wanted = list(ports) if restricted else [NetworkingPort(protocol=p)  # type: ignore[arg-type]
                                             for p in sorted(set(protocols))]
    if not wanted:
        return None
    return TargetGroupBindingNetworking(ingress=[NetworkingIngress.model_validate(
        {"from": [NetworkingPeer(security_group=s) for s in sources], "ports": wanted})])


__all__ = [
    "INBOUND_RULES_PER_GROUP",
    "LoadBalancerGroups",
    "RuleQuotaExceeded",
    "add_managed_groups",
    "admits_no_one",
    "binding_networking",
    "frontend_rules",
    "is_ipv6",
    "load_balancer_groups",
    "managed_group_room",
    "split_rules",
    "unreachable_cidrs",
]
