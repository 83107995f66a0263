"""The frontend NLB (`enable-frontend-nlb`): a network load balancer in front of a group's ALB,
as upstream builds it (pkg/ingress/model_build_frontend_nlb.go).

Each NLB listener (TCP) forwards to a target group of target type `alb` whose one target is the
group's ALB on one of its listener ports: every ALB listen port of a member maps to the same
NLB port, unless the member's `frontend-nlb-listener-port-mapping` (`<NLB port>=<ALB port>`)
says which NLB ports to open (an ALB port the member does not listen on is passed over, as
upstream does). The keys are read only when the group enables the NLB, as upstream reads them.

Group rules (upstream's): `enable-frontend-nlb` must not conflict; scheme, subnets, security
groups, attributes and tags are set on one member or the same on all (EIP allocations: the same
in any order, the first member's order kept); a health-check setting given on two members
sharing an NLB port must agree, a default never conflicts; one NLB port maps to one ALB port.
Defaults: `--default-load-balancer-scheme` (internal), discovered subnets, the ALB's security
groups, the ALB's tags, health checks HTTP on the traffic port, path `/`, 15 s interval, 5 s
timeout, thresholds 2 and 2, success code 200.

`frontend-nlb-eip-allocations` (upstream's buildFrontendNlbSubnetMappings): an internet-facing
NLB only, one allocation per subnet, paired by position with the subnets in the order
`frontend-nlb-subnets` lists them, else in the order of their IDs (the resolve stage pairs them
and checks the count for discovered subnets); AWS cannot change an NLB's Elastic IPs in place,
so a change is reported (`StaticAddressesKept`) and the addresses kept, as for Services.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from controller import validators
from controller.annotations import (
    TRAFFIC_PORT,
    AnnotationError,
    AnnotationReader,
    parse_string_map,
    quote,
)
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.errors import first_line
from controller.ingress.merge import BuildError
from controller.model import (
    ForwardAction,
    HealthCheck,
    HealthCheckMatcher,
    Listener,
    LoadBalancer,
    LoadBalancerTarget,
    StackBuilder,
    SubnetDiscovery,
    TargetGroup,
    WeightedTargetGroup,
)
from controller.model.naming import frontend_nlb_target_group_name
from runtime.objects import Obj

FRONTEND_NLB_ID: Final = "FrontendNlb"
ENABLE_KEY: Final = PREFIX + "enable-frontend-nlb"
EIP_KEY: Final = PREFIX + "frontend-nlb-eip-allocations"
_ROUTING_POLICIES: Final = ("any_availability_zone", "partial_availability_zone_affinity",
                            "availability_zone_affinity")
_ROUTING_POLICY: Final = "dns_record.client_routing_policy"
Scheme = Literal["internal", "internet-facing"]


@dataclass(frozen=True, kw_only=True)
class HealthCheckAnnotations:
    """One member's `frontend-nlb-healthcheck-*` values; None: not set (the default applies
    and never conflicts)."""

    port: int | Literal["traffic-port"] | None = None
    protocol: Literal["HTTP", "HTTPS"] | None = None
    path: str | None = None
    interval: int | None = None
    timeout: int | None = None
    healthy: int | None = None
    unhealthy: int | None = None
    success_codes: str | None = None

    def value(self, name: str) -> Any:
        given = getattr(self, name)
        return _HEALTH_DEFAULTS[name] if given is None else given


_HEALTH_DEFAULTS: Final[Mapping[str, Any]] = {
    "port": TRAFFIC_PORT, "protocol": "HTTP", "path": "/", "interval": 15, "timeout": 5,
    "healthy": 2, "unhealthy": 2, "success_codes": "200"}
# Field → the key that sets it, for messages.
_HEALTH_KEYS: Final[Mapping[str, str]] = {
    "port": "frontend-nlb-healthcheck-port", "protocol": "frontend-nlb-healthcheck-protocol",
    "path": "frontend-nlb-healthcheck-path",
    "interval": "frontend-nlb-healthcheck-interval-seconds",
    "timeout": "frontend-nlb-healthcheck-timeout-seconds",
    "healthy": "frontend-nlb-healthcheck-healthy-threshold-count",
    "unhealthy": "frontend-nlb-healthcheck-unhealthy-threshold-count",
    "success_codes": "frontend-nlb-healthcheck-success-codes"}


@dataclass(frozen=True, kw_only=True)
class FrontendNlbAnnotations:
    """What one member says about the frontend NLB; None: not set."""

    scheme: Scheme | None = None
    subnets: tuple[str, ...] | None = None
    eip_allocations: tuple[str, ...] | None = None
    security_groups: tuple[str, ...] | None = None
    port_mapping: Mapping[int, int] | None = None  # NLB port → ALB port
    attributes: Mapping[str, str] | None = None
    tags: Mapping[str, str] | None = None
    health: HealthCheckAnnotations = field(default_factory=HealthCheckAnnotations)


def enabled(ingresses: Sequence[tuple[str, Obj]]) -> bool:
    """`enable-frontend-nlb` over a group's members ((namespace/name, Ingress)): unset
    everywhere is off; two members saying different things is an error."""
    chosen: tuple[str, bool] | None = None
    for key, ing in ingresses:
        try:
            value = AnnotationReader.of(ing, PREFIX).get_bool("enable-frontend-nlb")
        except AnnotationError as exc:
            raise BuildError(f"Ingress {key}: {exc}") from None
        if value is None:
            continue
        if chosen is None:
            chosen = (key, value)
        elif chosen[1] != value:
            raise BuildError(f"annotation {ENABLE_KEY} conflicts within the group: {chosen[0]} "
                             f"has {quote(str(chosen[1]).lower())}, {key} has "
                             f"{quote(str(value).lower())}")
    return chosen is not None and chosen[1]


_KEYS: Final = ("frontend-nlb-scheme", "frontend-nlb-subnets", "frontend-nlb-security-groups",
                 "frontend-nlb-listener-port-mapping", "frontend-nlb-attributes",
                 "frontend-nlb-tags", "frontend-nlb-eip-allocations", *_HEALTH_KEYS.values())


def without_effect(ingresses: Sequence[tuple[str, Obj]]) -> dict[str, str]:
    """For a group without the frontend NLB: per member, one line naming the frontend-nlb-*
    keys it carries, which then do nothing (upstream reads them only with the NLB on)."""
    said: dict[str, str] = {}
    for key, ing in ingresses:
        reader = AnnotationReader.of(ing, PREFIX)
        found = [reader.key(suffix) for suffix in _KEYS if reader.has(suffix)]
        if found:
            said[key] = (f"Ingress {key}: {', '.join(found)} "
                         f"{'has' if len(found) == 1 else 'have'} no effect without "
                         f"{ENABLE_KEY}: \"true\" in the group")
    return said


def _port(key: str, raw: str, what: str) -> int:
    try:
        port = int(raw.strip())
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise AnnotationError(key, None, f"has {what} port {quote(raw)}; want 1..65535")
    return port


def _port_mapping(key: str, raw: str) -> dict[int, int]:
    mapping: dict[int, int] = {}
    for nlb, alb in parse_string_map(key, raw).items():
        mapping[_port(key, nlb, "NLB listener")] = _port(key, alb, "ALB listener")
    return mapping


def _attributes(key: str, raw: str) -> dict[str, str]:
    attributes = parse_string_map(key, raw)
    policy = attributes.get(_ROUTING_POLICY)
    if policy is not None and policy not in _ROUTING_POLICIES:
        raise AnnotationError(key, raw, f"has {_ROUTING_POLICY} {quote(policy)}; want one of "
                                        f"{', '.join(_ROUTING_POLICIES)}")
    return attributes


def parse_member(ing: Obj) -> FrontendNlbAnnotations:
    """Raises AnnotationError (one line naming key and value)."""
    reader = AnnotationReader.of(ing, PREFIX)
    interval = reader.get_int("frontend-nlb-healthcheck-interval-seconds", minimum=5,
                              maximum=300)
    timeout = reader.get_int("frontend-nlb-healthcheck-timeout-seconds", minimum=2,
                             maximum=120)
    return FrontendNlbAnnotations(
        scheme=reader.get_enum("frontend-nlb-scheme", ("internal", "internet-facing")),
        subnets=reader.get("frontend-nlb-subnets", validators.subnets),
        eip_allocations=reader.get("frontend-nlb-eip-allocations", validators.eip_allocations),
        security_groups=reader.get("frontend-nlb-security-groups",
                                   validators.security_groups),
        port_mapping=reader.get("frontend-nlb-listener-port-mapping", _port_mapping),
        attributes=reader.get("frontend-nlb-attributes", _attributes),
        tags=reader.get_string_map("frontend-nlb-tags"),
        health=HealthCheckAnnotations(
            port=reader.get_int_or_traffic_port("frontend-nlb-healthcheck-port"),
            protocol=reader.get_enum("frontend-nlb-healthcheck-protocol", ("HTTP", "HTTPS")),
            path=reader.get("frontend-nlb-healthcheck-path", validators.health_check_path),
            interval=interval, timeout=timeout,
            healthy=reader.get_int("frontend-nlb-healthcheck-healthy-threshold-count",
                                   minimum=2, maximum=10),
            unhealthy=reader.get_int("frontend-nlb-healthcheck-unhealthy-threshold-count",
                                     minimum=2, maximum=10),
            success_codes=reader.get("frontend-nlb-healthcheck-success-codes",
                                     validators.success_codes(validators.NLB_HTTP_CODES))))


@dataclass(frozen=True, kw_only=True)
class FrontendMember:
    """A member as the frontend NLB reads it: its key, Ingress, and ALB listen ports."""

    key: str
    ingress: Obj
    alb_ports: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class FrontendSettings:
    cluster_name: str
    group_id: str  # upstream's IngressGroup id: the group name, or namespace/name
    explicit: bool
    default_scheme: Scheme
    default_tags: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _Port:
    target_port: int
    owner: str
    health: dict[str, Any]
    explicit: dict[str, str]  # field → the member that set it


def _exclusive(parsed: Sequence[tuple[str, FrontendNlbAnnotations]], attr: str,
               suffix: str, *, as_set: bool = False) -> Any:
    first: tuple[str, Any, Any] | None = None  # owner, comparable, value
    for key, ann in parsed:
        value = getattr(ann, attr)
        if value is None:
            continue
        comparable = (frozenset(value) if as_set else
                      dict(value) if isinstance(value, Mapping) else value)
        if first is None:
            first = (key, comparable, value)
        elif comparable != first[1]:
            raise BuildError(f"annotation {PREFIX}{suffix} conflicts within the group: "
                             f"{first[0]} has {quote(_show(first[2]))}, {key} has "
                             f"{quote(_show(value))}")
    return None if first is None else first[2]


def _show(value: Any) -> str:
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def target_group_name(settings: FrontendSettings, port: int, hc_port: int | str,
                      hc_protocol: str) -> str:
    """Upstream's buildFrontendNlbTargetGroupName: hashes cluster, group id, port, target type
    `alb`, protocol TCP, the health check's port and protocol."""
    return frontend_nlb_target_group_name(settings.cluster_name, settings.group_id, port,
                                          str(hc_port), hc_protocol, explicit=settings.explicit)


def build_frontend_nlb(builder: StackBuilder, members: Sequence[FrontendMember], *,
                       alb_id: str, alb: LoadBalancer, settings: FrontendSettings) -> None:
    """Adds the NLB, its listeners and their `alb` target groups to `builder`. Raises
    BuildError (one line) for anything a user must fix."""
    parsed: list[tuple[str, FrontendNlbAnnotations]] = []
    for member in members:
        try:
            parsed.append((member.key, parse_member(member.ingress)))
        except AnnotationError as exc:
            raise BuildError(f"Ingress {member.key}: {exc}") from None
    scheme: Scheme = _exclusive(parsed, "scheme", "frontend-nlb-scheme") \
        or settings.default_scheme
    subnets = _exclusive(parsed, "subnets", "frontend-nlb-subnets", as_set=True)
    eips = _eip_allocations(parsed, scheme, subnets)
    groups = _exclusive(parsed, "security_groups", "frontend-nlb-security-groups",
                        as_set=True)
    attributes = _exclusive(parsed, "attributes", "frontend-nlb-attributes") or {}
    own_tags = _exclusive(parsed, "tags", "frontend-nlb-tags")
    # Without frontend-nlb-tags the ALB's tags (upstream); --default-tags on every resource,
    # as on the group's other resources.
    tags = dict(alb.tags) if own_tags is None else {**own_tags, **settings.default_tags}
    ports = _listener_ports(members, dict(parsed))
    # Upstream: the ALB's name cut to 28 characters, then "-nlb".
    name = alb.name[:28] + "-nlb"
    try:
        nlb_ref = builder.add_load_balancer(FRONTEND_NLB_ID, LoadBalancer(
            name=name, type="network", scheme=scheme, replaced_under_same_name=True,
            ip_address_type=alb.ip_address_type,
            subnets=subnets if subnets is not None else SubnetDiscovery(
                role="elb" if scheme == "internet-facing" else "internal-elb"),
            security_groups=groups if groups is not None else alb.security_groups,
            attributes=dict(attributes), tags=tags, eip_allocations=eips,
            subnet_order=subnets if eips is not None and subnets is not None else None))
        for port, cfg in sorted(ports.items()):
            hc = cfg.health
            tg_ref = builder.add_target_group(f"{FRONTEND_NLB_ID}-tg-TCP-{port}", TargetGroup(
                name=target_group_name(settings, port, hc["port"], hc["protocol"]),
                protocol="TCP", port=port, target_type="alb", ip_address_type="ipv4",
                health_check=HealthCheck(
                    protocol=hc["protocol"], port=hc["port"], path=hc["path"],
                    interval_seconds=hc["interval"], timeout_seconds=hc["timeout"],
                    healthy_threshold=hc["healthy"], unhealthy_threshold=hc["unhealthy"],
                    matcher=HealthCheckMatcher(http_code=hc["success_codes"])),
                load_balancer_target=LoadBalancerTarget(load_balancer=alb_id,
                                                        port=cfg.target_port),
                tags=dict(tags)))
            builder.add_listener(f"{FRONTEND_NLB_ID}-ls-TCP-{port}", Listener(
                load_balancer_arn=nlb_ref, port=port, protocol="TCP",
                default_actions=[ForwardAction(target_groups=[
                    WeightedTargetGroup(target_group_arn=tg_ref)])],
                tags=dict(tags)))
    except ValueError as exc:
        raise BuildError(f"frontend NLB: {first_line(exc)}") from None


def _eip_allocations(parsed: Sequence[tuple[str, FrontendNlbAnnotations]], scheme: Scheme,
                     subnets: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The group's EIP allocations (upstream's validateEIPAllocations): the same set on every
    member that sets them, the first member's order kept; internet-facing only; as many as
    the listed subnets."""
    eips: tuple[str, ...] | None = _exclusive(parsed, "eip_allocations", EIP_KEY.removeprefix(
        PREFIX), as_set=True)
    if eips is None:
        return None
    if scheme != "internet-facing":
        raise BuildError(f"annotation {EIP_KEY}: EIP allocations can be set for an "
                         "internet-facing load balancer only (the frontend NLB's scheme is "
                         f"{scheme})")
    if subnets is not None and len(eips) != len(subnets):
        raise BuildError(f"annotation {EIP_KEY}: count of EIP allocations ({len(eips)}) and "
                         f"subnets ({len(subnets)}) must match")
    return eips


def _listener_ports(members: Sequence[FrontendMember],
                    parsed: Mapping[str, FrontendNlbAnnotations]) -> dict[int, _Port]:
    """NLB port → its ALB port and merged health check (upstream's
    mergeFrontendNlbListenPortConfigs), members in group order."""
    ports: dict[int, _Port] = {}
    for member in members:
        ann = parsed[member.key]
        if ann.port_mapping:
            pairs = [(nlb, alb) for nlb, alb in sorted(ann.port_mapping.items())
                     if alb in member.alb_ports]
        else:
            pairs = [(p, p) for p in sorted(member.alb_ports)]
        for nlb_port, alb_port in pairs:
            cfg = ports.get(nlb_port)
            if cfg is None:
                ports[nlb_port] = _Port(
                    target_port=alb_port, owner=member.key,
                    health={n: ann.health.value(n) for n in _HEALTH_DEFAULTS},
                    explicit={n: member.key for n in _HEALTH_DEFAULTS
                              if getattr(ann.health, n) is not None})
                continue
            if cfg.target_port != alb_port:
                raise BuildError(f"frontend NLB listener port {nlb_port}: {cfg.owner} maps it "
                                 f"to ALB port {cfg.target_port}, {member.key} to {alb_port}")
            for n in _HEALTH_DEFAULTS:
                given = getattr(ann.health, n)
                if given is None:
                    continue
                if n in cfg.explicit:
                    if cfg.health[n] != given:
                        raise BuildError(
                            f"frontend NLB listener port {nlb_port}: annotation "
                            f"{PREFIX}{_HEALTH_KEYS[n]} conflicts: {cfg.explicit[n]} has "
                            f"{quote(str(cfg.health[n]))}, {member.key} has {quote(str(given))}")
                else:
                    cfg.health[n] = given
                    cfg.explicit[n] = member.key
    return ports


__all__ = ["FRONTEND_NLB_ID", "FrontendMember", "FrontendNlbAnnotations", "FrontendSettings",
           "build_frontend_nlb", "enabled", "parse_member", "target_group_name",
           "without_effect"]
