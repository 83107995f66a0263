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

Checked before any AWS call: the managed group's rules fit EC2's per-group inbound quota
(`check_rule_quota`), and CIDRs of a family the load balancer does not serve (IPv6 on an IPv4
one) are named (`unreachable_cidrs`, `admits_no_one`): they admit no one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from controller.model import (
    GroupReference,
    IngressRule,
    NetworkingIngress,
    NetworkingPeer,
    NetworkingPort,
    TargetGroupBindingNetworking,
)
from controller.networking.settings import BackendSettings

ICMP_FRAGMENTATION_NEEDED = ("icmp", 3, 4)
ICMPV6_PACKET_TOO_BIG = ("icmpv6", 2, 0)
# EC2's default quota "Inbound or outbound rules per security group" (Amazon VPC quotas): 60
# inbound rules, counted apart for IPv4 and IPv6 sources; a prefix list counts as its maximum
# number of entries. Adjustable per account, but upstream has no flag for it, and going past
# it fails an AuthorizeSecurityGroupIngress halfway through a deploy (RulesPerSecurityGroup
# LimitExceeded); so a managed group that needs more is refused before any AWS call.
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
    check_rule_quota(rules)
    return rules


class RuleQuotaExceeded(ValueError):
    """The managed group would need more inbound rules than EC2 allows (one line)."""


def check_rule_quota(rules: Iterable[IngressRule], *,
                     quota: int = INBOUND_RULES_PER_GROUP) -> None:
    """RuleQuotaExceeded when the managed group's distinct inbound rules pass EC2's quota for one
    family. A prefix list counts once for each family here: its maximum number of entries,
    which is what EC2 counts, is known only to EC2."""
    distinct = {(r.protocol, r.from_port, r.to_port, r.cidr_ipv4, r.cidr_ipv6,
                 r.prefix_list_id) for r in rules}
    counts = {"IPv4": sum(1 for r in distinct if r[5] is not None or r[3] is not None),
              "IPv6": sum(1 for r in distinct if r[5] is not None or r[4] is not None)}
    for family, count in counts.items():
        if count > quota:
            raise RuleQuotaExceeded(
                f"the managed security group would need {count} inbound {family} rules (one "
                "per listen port and source), more than the "
                f"{quota} EC2 allows per security group by default: admit fewer CIDRs or "
                "prefix lists, listen on fewer ports, or name your own security groups")


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
    target_source: GroupReference | None


def load_balancer_groups(*, managed: GroupReference | None, user_groups: Sequence[str],
                         manage_backend_rules: bool, backend: BackendSettings,
                         where: str) -> LoadBalancerGroups:
    """`managed`: the managed frontend group's `$ref` when the stack has one (no user groups).
    Raises ValueError when backend rules are asked for with the backend group disabled."""
    if managed is not None:
        if not backend.enabled:
            return LoadBalancerGroups((managed,), managed)
        return LoadBalancerGroups((managed, backend.group), backend.group)
    groups: tuple[GroupReference, ...] = tuple(user_groups)
    if not manage_backend_rules:
        return LoadBalancerGroups(groups, None)
    if not backend.enabled:
        raise ValueError(f"{where}: managing backend security group rules with user-given "
                         "security groups needs the backend security group "
                         "(--enable-backend-security-group)")
    return LoadBalancerGroups((*groups, backend.group), backend.group)


def binding_networking(source: GroupReference | None, ports: Iterable[NetworkingPort], *,
                       restricted: bool, protocols: Iterable[str] = ("TCP",)
                       ) -> TargetGroupBindingNetworking | None:
    """`spec.networking` admitting `source` on `ports`, or on every port of `protocols` when
    rules are not restricted."""
    if source is None:
        return None
    wanted = list(ports) if restricted else [NetworkingPort(protocol=p)  # type: ignore[arg-type]
                                             for p in sorted(set(protocols))]
    if not wanted:
        return None
    return TargetGroupBindingNetworking(ingress=[NetworkingIngress.model_validate(
        {"from": [NetworkingPeer(security_group=source)], "ports": wanted})])


__all__ = ["INBOUND_RULES_PER_GROUP", "LoadBalancerGroups", "RuleQuotaExceeded", "admits_no_one",
           "binding_networking",
           "check_rule_quota", "frontend_rules", "is_ipv6", "load_balancer_groups",
           "unreachable_cidrs"]
