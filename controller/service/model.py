"""The pure stage of the Service model builder: a Service, its annotations and the controller's
settings in, the desired ELBv2 `Stack` out. No AWS call, no Kubernetes call: the event handler
runs it on cached objects to compute a checkpoint, and the reconciler runs it before deploying.

One NLB per Service (stack id `namespace/name`, kind "service"); per Service port a listener, a
target group and a TargetGroupBinding. TCP and UDP on the same port number share one TCP_UDP
listener when `aws-load-balancer-enable-tcp-udp-listener` or the EnableTCPUDPListener gate
(upstream's default off) says so, and are refused otherwise. Subnets stay a `SubnetDiscovery`
placeholder unless the annotation lists them; the resolve stage (the deployer's resolver) fills
them in.

Security groups (upstream's NLB behaviour since v2.6): without
`aws-load-balancer-security-groups` the NLB gets a managed frontend group admitting
`spec.loadBalancerSourceRanges` (else the `load-balancer-source-ranges` annotation, else
everyone, unless prefix lists are given) and the prefix lists on every Service port, and the
shared backend group; the bindings ask their targets' groups to admit the backend group.
`aws-load-balancer-disable-nlb-sg: "true"` gives an NLB without security groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from controller import checkpoint, gates, validators
from controller.annotationreview import UnsupportedAnnotation
from controller.annotations import TRAFFIC_PORT, AnnotationError, TrafficPort
from controller.apis import (
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
    controller_labels,
    service_finalizer,
)
from controller.defaults import DEFAULT_LOAD_BALANCER_CLASS
from controller.errors import InvalidInput, MissingReference
from controller.model import (
    ForwardAction,
    HealthCheck,
    HealthCheckMatcher,
    Listener,
    LoadBalancer,
    NetworkingPort,
    Quotas,
    Ref,
    ServiceReference,
    Stack,
    StackBuilder,
    StackContext,
    Stickiness,
    SubnetDiscovery,
    TargetGroup,
    TargetGroupBindingResource,
    WeightedTargetGroup,
    check_quotas,
    service_load_balancer_name,
    service_security_group_name,
    service_target_group_name,
)
from controller.model.listener import AlpnPolicy, ListenerProtocol
from controller.model.stack import InvalidStack, describe_validation_error
from controller.model.targetgroup import TargetGroupProtocol, TargetIpAddressType
from controller.networking.frontend import (
    LoadBalancerGroups,
    RuleQuotaExceeded,
    add_managed_groups,
    admits_no_one,
    binding_networking,
    frontend_rules,
    load_balancer_groups,
    managed_group_room,
    unreachable_cidrs,
)
from controller.networking.settings import BackendSettings
from controller.service.actions import (
    ACTIONS,
    ListenerAction,
    TargetGroupTuple,
    parse_listener_actions,
)
from controller.service.annotations import (
    EIP_ALLOCATIONS,
    ENABLE_SOURCE_NAT_PREFIX,
    ENABLE_TCP_UDP_LISTENER,
    IPV6_ADDRESSES,
    LISTENER_ATTRIBUTES,
    PORT_TARGET_GROUP_ATTRIBUTES,
    PREFIX,
    PRIVATE_IPV4_ADDRESSES,
    PROXY_PROTOCOL_PER_TARGET_GROUP,
    QUIC_ENABLED_PORTS,
    SOURCE_NAT_PREFIXES,
    SOURCE_RANGES,
    ServiceLBConfig,
    parse_capacity_units,
    parse_listener_attributes,
    parse_port_config,
    parse_service_config,
    qualifies,
)
from controller.settings import ClusterScope, StackDefaults, enhanced_default_behavior
from runtime.featuregates import FeatureGates

# Bump when the same inputs would build a different stack: every stored checkpoint of a
# Service then stops matching, and the next start verifies all of them at normal priority.
# 2: the stack carries its deploy context (cluster, region, VPC, externally managed tags).
# 3: target group names hash upstream's inputs. 4: managed security groups and the
# bindings' networking.
MODEL_VERSION: Final = 4
LOAD_BALANCER_ID: Final = "LoadBalancer"


class InvalidService(InvalidInput):
    """A Service spec the builder cannot turn into an NLB; the message is shown as is."""

    condition_reason = "InvalidService"


class MissingService(MissingReference):
    """A weighted action's backend Service does not exist (yet): reported until it appears,
    which wakes the Service (watches.py)."""

    condition_reason = "BackendNotFound"


# A Service of the cache by "namespace/name".
ServiceLookup = Callable[[str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """The controller configuration that shapes a Service's model (and hence its checkpoint)."""

    cluster: ClusterScope
    load_balancer_class: str = DEFAULT_LOAD_BALANCER_CLASS
    defaults: StackDefaults = field(default_factory=StackDefaults)
    quotas: Quotas = field(default_factory=Quotas)
    backend_sg: BackendSettings = field(default_factory=BackendSettings)
    gates: FeatureGates = field(default_factory=FeatureGates)

    @property
    def finalizer(self) -> str:
        """This controller's finalizer on the Services it provisions for."""
        return service_finalizer(self.cluster.controller_id)

    @property
    def by_annotation(self) -> bool:
        """Services without a class are served by their annotations: by the cluster's
        default controller only."""
        return not self.cluster.controller_id

    @property
    def load_balancer_only(self) -> bool:
        """The ServiceTypeLoadBalancerOnly gate: only Services of type LoadBalancer."""
        return gates.enabled(self.gates, "ServiceTypeLoadBalancerOnly")

    @property
    def advanced_health_check(self) -> bool:
        """The NLBHealthCheckAdvancedConfig gate."""
        return gates.enabled(self.gates, "NLBHealthCheckAdvancedConfig")

    @property
    def context(self) -> StackContext:
        return StackContext(cluster_name=self.cluster.name, region=self.cluster.region,
                            vpc_id=self.cluster.vpc_id,
                            external_managed_tags=tuple(self.defaults.external_managed_tags),
                            **gates.stack_context(self.gates))


@dataclass(frozen=True, slots=True)
class _Port:
    port: int
    protocol: str  # TCP, UDP or TCP_UDP (merged)
    spec: Mapping[str, Any]  # the Service port the target group forwards to


def stack_id(service: Mapping[str, Any]) -> str:
    meta = service.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def build_stack(service: Mapping[str, Any], *, settings: ModelSettings,
                services: ServiceLookup | None = None) -> Stack:
    """Raises `AnnotationError` (bad annotation), `InvalidService` (bad spec) or `InvalidStack`
    (a model AWS would refuse): each a ValueError with one line of text. `services`: the
    Services of the cache by `namespace/name`, for the backends a weighted action names by
    `serviceName` (none: every such backend is missing)."""
    config = parse_service_config(
        service, defaults=settings.defaults,
        default_tags_low_priority=gates.enabled(settings.gates, "EnableDefaultTagsLowPriority"),
        advanced_health_check=settings.advanced_health_check)
    # The LBCapacityReservation gate off: the key is not even read (upstream).
    capacity_units = (parse_capacity_units(service)
                      if gates.enabled(settings.gates, "LBCapacityReservation") else None)
    if config.target_type == "ip" and not gates.enabled(settings.gates, "EnableIPTargetType"):
        raise InvalidService(f"service {stack_id(service)}: unsupported targetType: ip when "
                             "EnableIPTargetType is false")
    try:
        stack = _Builder(service, config, settings, services,
                         capacity_units=capacity_units).build()
    except ValidationError as exc:
        # A resource refused on construction (e.g. more tags than AWS allows).
        raise InvalidStack(f"service {stack_id(service)}: "
                           f"{describe_validation_error(exc)}") from None
    check_quotas(stack, settings.quotas)
    return stack


def admission_refusal(service: Mapping[str, Any], *, settings: ModelSettings,
                      services: ServiceLookup | None = None) -> str | None:
    """What the reconciler would refuse a Service we serve with (its Warning Event's text), for
    the Service webhook to say at `kubectl apply`; None when it builds or is not ours. A key
    that narrows access is left to `admission_warnings`, which already says it."""
    if not qualifies(service, load_balancer_class=settings.load_balancer_class,
                     load_balancer_only=settings.load_balancer_only,
                     by_annotation=settings.by_annotation):
        return None
    try:
        build_stack(service, settings=settings, services=services)
    except UnsupportedAnnotation:
        return None
    except InvalidInput as exc:
        return str(exc)
    return None


def checkpoint_input(service: Mapping[str, Any], *, settings: ModelSettings,
                     services: ServiceLookup | None = None) -> Stack | None:
    """The stack a checkpoint is computed from, or None when the Service is not ours to build
    (not qualifying, or being deleted): nothing to compare then."""
    if (service.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if not qualifies(service, load_balancer_class=settings.load_balancer_class,
                     load_balancer_only=settings.load_balancer_only,
                     by_annotation=settings.by_annotation):
        return None
    return build_stack(service, settings=settings, services=services)


def checkpoint_of(service: Mapping[str, Any], *, settings: ModelSettings,
                  services: ServiceLookup | None = None) -> str | None:
    """The Service's checkpoint as computed from cached objects, None when there is none to
    compare. Raises like `build_stack` on bad input."""
    stack = checkpoint_input(service, settings=settings, services=services)
    return checkpoint.compute(stack, version=MODEL_VERSION) if stack is not None else None


class _Builder:
    def __init__(self, service: Mapping[str, Any], config: ServiceLBConfig,
                 settings: ModelSettings, services: ServiceLookup | None = None, *,
                 capacity_units: int | None = None) -> None:
        meta = service.get("metadata") or {}
        self.namespace = str(meta.get("namespace") or "")
        self.name = str(meta.get("name") or "")
        self.uid = str(meta.get("uid") or "")
        self.spec: Mapping[str, Any] = service.get("spec") or {}
        self.config = config
        self.capacity_units = capacity_units
        self.listener_attributes = parse_listener_attributes(service)
        self.listener_actions = parse_listener_actions(service)
        self.services = services
        self.backend_groups: dict[str, Ref] = {}
        self.port_config = parse_port_config(service)
        self.settings = settings
        self.stack_id = f"{self.namespace}/{self.name}"
        self.builder = StackBuilder(self.stack_id, kind="service", context=settings.context)

    def build(self) -> Stack:
        ports = self._ports()
        self._check_port_keys(ports)
        self._check_listener_attributes(ports)
        self._check_listener_actions(ports)
        cfg = self.config
        self.groups = self._security_groups()
        lb = self.builder.add_load_balancer(LOAD_BALANCER_ID, LoadBalancer(
            name=cfg.name or service_load_balancer_name(
                self.settings.cluster.name, self.namespace, self.name, cfg.scheme, uid=self.uid),
            type="network", scheme=cfg.scheme,
            keep_existing_scheme=not cfg.scheme_from_annotation,
            ip_address_type=cfg.ip_address_type,
            subnets=cfg.placement.subnets if cfg.placement.subnets is not None else
            SubnetDiscovery(role="elb" if cfg.scheme == "internet-facing" else "internal-elb"),
            security_groups=self.groups.security_groups,
            inbound_rules_on_private_link=(cfg.inbound_rules_on_private_link
                                           if self.groups.security_groups else None),
            attributes=dict(cfg.load_balancer_attributes), tags=dict(cfg.tags),
            capacity_units=self.capacity_units, **self._static_addresses()))
        for port in ports:
            self._add_port(port, lb)
        return self.builder.build()

    def _static_addresses(self) -> dict[str, Any]:
        """Upstream's rules (buildLoadBalancerSubnetMappings): EIPs on an internet-facing load
        balancer only, private IPv4 addresses on an internal one, IPv6 addresses on a dualstack
        one; one per subnet. The count is checked here when the subnets are listed, else by
        the resolve stage once they are discovered. EIPs pair with listed subnets in the
        annotation's order, with discovered ones in the order of their IDs (upstream's subnet
        resolver). IPv6 source NAT: "on" and the prefixes on a dualstack NLB only, the
        prefixes only with it on, paired by position like the EIPs."""
        cfg = self.config
        place = cfg.placement
        found: dict[str, Any] = {}
        dualstack = cfg.ip_address_type == "dualstack"
        source_nat = place.enable_prefix_for_ipv6_source_nat
        if source_nat is not None:
            # Upstream (ValidateEnablePrefixForIpv6SourceNat): "on" on a dualstack NLB only.
            if source_nat == "on" and not dualstack:
                raise InvalidService(
                    f"service {self.stack_id}: annotation {PREFIX}{ENABLE_SOURCE_NAT_PREFIX}: "
                    '"on" needs a dualstack load balancer (its IP address type is ipv4)')
            found["enable_prefix_for_ipv6_source_nat"] = source_nat
        if place.source_nat_ipv6_prefixes is not None and source_nat != "on" and dualstack:
            raise InvalidService(
                f"service {self.stack_id}: annotation {PREFIX}{SOURCE_NAT_PREFIXES}: source NAT "
                f"IPv6 prefixes need annotation {PREFIX}{ENABLE_SOURCE_NAT_PREFIX}: \"on\"")
        for name, key, values, what, allowed, problem in (
                ("eip_allocations", EIP_ALLOCATIONS, place.eip_allocations, "EIP allocations",
                 cfg.scheme == "internet-facing",
                 "an internet-facing load balancer only (its scheme is internal)"),
                ("private_ipv4_addresses", PRIVATE_IPV4_ADDRESSES, place.private_ipv4_addresses,
                 "private IPv4 addresses", cfg.scheme == "internal",
                 "an internal load balancer only (its scheme is internet-facing)"),
                ("ipv6_addresses", IPV6_ADDRESSES, place.ipv6_addresses, "IPv6 addresses",
                 dualstack, "a dualstack load balancer only (its IP address type is ipv4)"),
                ("source_nat_ipv6_prefixes", SOURCE_NAT_PREFIXES,
                 place.source_nat_ipv6_prefixes, "source NAT IPv6 prefixes", dualstack,
                 "a dualstack load balancer only (its IP address type is ipv4)")):
            if values is None:
                continue
            where = f"service {self.stack_id}: annotation {PREFIX}{key}"
            if not allowed:
                raise InvalidService(f"{where}: {what} can be set for {problem}")
            if place.subnets is not None and len(values) != len(place.subnets):
                raise InvalidService(f"{where}: count of {what} ({len(values)}) and subnets "
                                     f"({len(place.subnets)}) must match")
            found[name] = values
        if place.subnets is not None and (
                "eip_allocations" in found or "source_nat_ipv6_prefixes" in found):
            found["subnet_order"] = place.subnets
        return found

    def _security_groups(self) -> LoadBalancerGroups:
        cfg = self.config
        backend = self.settings.backend_sg
        # The NLBSecurityGroup gate off is the disable annotation on every Service (upstream).
        if cfg.disable_security_groups or not gates.enabled(self.settings.gates,
                                                            "NLBSecurityGroup"):
            return LoadBalancerGroups((), None)
        manage = (backend.manage_rules_default if cfg.manage_backend_rules is None
                  else cfg.manage_backend_rules)
        managed = None
        if cfg.security_groups is None:
            listeners = [(str(p.get("protocol") or "TCP"), int(p["port"]))
                         for p in self.spec.get("ports") or []
                         if isinstance(p, Mapping) and type(p.get("port")) is int]
            rules = frontend_rules(listeners, cidrs=self._source_ranges(),
                                   prefix_lists=cfg.prefix_lists,
                                   icmp_path_mtu=cfg.icmp_path_mtu)
            try:
                managed = add_managed_groups(
                    self.builder, rules, name=service_security_group_name(
                        self.settings.cluster.name, self.namespace, self.name, uid=self.uid),
                    tags=cfg.tags, quota=backend.rules_per_group,
                    max_groups=managed_group_room(backend, security_groups_per_load_balancer=(
                        self.settings.quotas.security_groups_per_load_balancer)))
            except RuleQuotaExceeded as exc:
                raise InvalidService(f"service {self.stack_id}: {exc}") from None
        try:
            return load_balancer_groups(managed=managed, user_groups=cfg.security_groups or (),
                                        manage_backend_rules=manage, backend=backend,
                                        where=f"service {self.stack_id}")
        except ValueError as exc:
            raise InvalidService(str(exc)) from None

    def _source_ranges(self) -> list[str]:
        """Who the managed group admits: the spec's source ranges, else the annotation's,
        else everyone (IPv6 too when dualstack), unless prefix lists say who."""
        raw = self.spec.get("loadBalancerSourceRanges")
        cidrs: list[str] = []
        what = f"annotation {PREFIX}{SOURCE_RANGES}"
        if isinstance(raw, list) and raw:
            what = "spec.loadBalancerSourceRanges"
            for item in raw:
                try:
                    cidrs.extend(validators.cidrs("spec.loadBalancerSourceRanges", str(item)))
                except AnnotationError as exc:
                    raise InvalidService(f"service {self.stack_id}: {exc}") from None
        elif self.config.source_ranges is not None:
            cidrs = list(self.config.source_ranges)
        ip_type = self.config.ip_address_type
        unreachable = unreachable_cidrs(cidrs, ip_address_type=ip_type)
        if unreachable:
            # Upstream refuses these too ("unsupported v6 cidr ... when lb is not dualstack"):
            # dropping them would build an NLB that admits fewer clients than asked, or none.
            left = bool(set(cidrs) - set(unreachable) or self.config.prefix_lists)
            raise InvalidService(
                f"service {self.stack_id}: " + admits_no_one(
                    unreachable, what=what, ip_address_type=ip_type, left=left, refused=True)
                + "; refused: an IPv6 source range needs a dualstack load balancer")
        if cidrs or self.config.prefix_lists:
            return cidrs
        return ["0.0.0.0/0", "::/0"] if ip_type == "dualstack" else ["0.0.0.0/0"]

    def _networking_ports(self, port: _Port, tg_port: int | str) -> list[NetworkingPort]:
        """TCP or UDP on the target port (both for TCP_UDP; TCP too for UDP, whose health
        check is TCP on the traffic port), and TCP on a health-check port of its own."""
        ports: list[NetworkingPort] = []
        if port.protocol in ("TCP", "TCP_UDP"):
            ports.append(NetworkingPort(protocol="TCP", port=tg_port))
        if port.protocol in ("UDP", "TCP_UDP"):
            ports.append(NetworkingPort(protocol="UDP", port=tg_port))
        hc_port = self._health_check().port
        if port.protocol == "UDP" and hc_port in (TRAFFIC_PORT, tg_port):
            ports.append(NetworkingPort(protocol="TCP", port=tg_port))
        if isinstance(hc_port, int) and hc_port != tg_port:
            ports.append(NetworkingPort(protocol="TCP", port=hc_port))
        return ports

    def _ports(self) -> list[_Port]:
        raw = self.spec.get("ports")
        if not isinstance(raw, list) or not raw:
            raise InvalidService(f"service {self.stack_id} has no ports")
        by_number: dict[int, _Port] = {}
        for item in raw:
            if not isinstance(item, Mapping) or type(item.get("port")) is not int:
                raise InvalidService(f"service {self.stack_id} has a port without a number")
            number = int(item["port"])
            protocol = str(item.get("protocol") or "TCP").upper()
            if protocol not in ("TCP", "UDP"):
                raise InvalidService(f"service {self.stack_id} port {number}: protocol "
                                     f"{protocol} is not supported by a network load balancer")
            seen = by_number.get(number)
            if seen is None:
                by_number[number] = _Port(number, protocol, item)
            elif {seen.protocol, protocol} == {"TCP", "UDP"}:
                if not self._merge_tcp_udp():
                    # Upstream then keeps the first port's listener and drops the other
                    # without a word; here the Service is told, and nothing is deployed.
                    raise InvalidService(
                        f"service {self.stack_id} port {number}: TCP and UDP on one port need "
                        f"a TCP_UDP listener; set annotation {PREFIX}{ENABLE_TCP_UDP_LISTENER}"
                        ': "true" (or start the controller with '
                        "--feature-gates=EnableTCPUDPListener=true)")
                # One listener per port: TCP and UDP on one number become TCP_UDP (upstream).
                tcp = seen.spec if seen.protocol == "TCP" else item
                by_number[number] = _Port(number, "TCP_UDP", tcp)
            else:
                raise InvalidService(f"service {self.stack_id} uses port {number} twice")
        return [by_number[n] for n in sorted(by_number)]

    def _merge_tcp_udp(self) -> bool:
        """Upstream's shouldUseTCPUDP: the annotation, else the EnableTCPUDPListener gate."""
        if self.port_config.enable_tcp_udp_listener is not None:
            return self.port_config.enable_tcp_udp_listener
        return gates.enabled(self.settings.gates, "EnableTCPUDPListener")

    def _listener_protocol(self, port: _Port) -> ListenerProtocol:
        name = port.spec.get("name")
        tls = self.config.is_tls_port(port=port.port, name=name if isinstance(name, str) else None,
                                      protocol=port.protocol)
        if tls and port.protocol == "TCP_UDP":
            raise InvalidService(f"service {self.stack_id} port {port.port}: a TLS listener "
                                 "cannot also carry UDP")
        protocol: ListenerProtocol = "TLS" if tls else (
            "UDP" if port.protocol == "UDP" else
            "TCP_UDP" if port.protocol == "TCP_UDP" else "TCP")
        if not self.port_config.is_quic_port(port=port.port,
                                             name=name if isinstance(name, str) else None):
            return protocol
        # Upstream's upgrade (buildListenerSpec): UDP to QUIC, TCP_UDP to TCP_QUIC, else refused.
        if protocol not in ("UDP", "TCP_UDP"):
            raise InvalidService(
                f"service {self.stack_id} port {port.port}: annotation {PREFIX}"
                f"{QUIC_ENABLED_PORTS} names it, but QUIC upgrades UDP and TCP_UDP listeners "
                f"only, not {protocol}")
        if self.config.target_type != "ip":
            # AWS registers a QUIC target only with its server ID, which only a pod carries.
            raise InvalidService(
                f"service {self.stack_id} port {port.port}: QUIC needs ip targets (each "
                "target is registered with its pod's QUIC server ID), not instance")
        return "QUIC" if protocol == "UDP" else "TCP_QUIC"

    def _check_port_keys(self, ports: list[_Port]) -> None:
        # Upstream reads these for the Service's ports only and skips any other port without a
        # word; here a port the Service lacks is one message, as for the listener attributes.
        numbers = {p.port for p in ports}
        listed = ", ".join(str(n) for n in sorted(numbers))
        names = {str(p.get("name")) for p in self.spec.get("ports") or []
                 if isinstance(p, Mapping) and p.get("name")}
        for item in self.port_config.quic_ports:
            if item not in names and item not in {str(n) for n in numbers}:
                raise InvalidService(
                    f"service {self.stack_id}: annotation {PREFIX}{QUIC_ENABLED_PORTS} names "
                    f"port {item[:63]!r}, which is not one of its ports ({listed})")
        for number in sorted(set(self.port_config.port_attributes) - numbers):
            raise InvalidService(
                f"service {self.stack_id}: annotation {PREFIX}{PORT_TARGET_GROUP_ATTRIBUTES}"
                f"{number} names no port of it (its ports: {listed})")
        for number in sorted(set(self.port_config.proxy_protocol_ports or ()) - numbers):
            raise InvalidService(
                f"service {self.stack_id}: annotation {PREFIX}{PROXY_PROTOCOL_PER_TARGET_GROUP}"
                f" names port {number}, which is not one of its ports ({listed})")

    def _check_listener_attributes(self, ports: list[_Port]) -> None:
        # Upstream skips a key naming no listener without a word; here it is one message.
        names = {f"{self._listener_protocol(p)}-{p.port}" for p in ports}
        for name in sorted(set(self.listener_attributes) - names):
            raise InvalidService(
                f"service {self.stack_id}: annotation {PREFIX}{LISTENER_ATTRIBUTES}{name} "
                f"names no listener of it (its listeners: {', '.join(sorted(names))})")

    def _check_listener_actions(self, ports: list[_Port]) -> None:
        # Upstream reads the key naming each listener and skips any other without a word.
        names = {f"{self._listener_protocol(p)}-{p.port}" for p in ports}
        for name in sorted(set(self.listener_actions) - names):
            raise InvalidService(
                f"service {self.stack_id}: annotation {PREFIX}{ACTIONS}{name} names no "
                f"listener of it (its listeners: {', '.join(sorted(names))})")
        for name, action in sorted(self.listener_actions.items()):
            where = f"service {self.stack_id}: annotation {PREFIX}{ACTIONS}{name}"
            if action.stickiness and name.startswith("TLS-"):
                # AWS refuses it (CreateListener); said here before anything is created.
                raise InvalidService(f"{where}: target group stickiness is not supported on "
                                     "TLS listeners")

    def _default_actions(self, name: str, tg_ref: Ref,
                         listener_protocol: ListenerProtocol) -> list[ForwardAction]:
        """The listener's forward: to its own target group, or weighted as
        `actions.<PROTOCOL>-<port>` says (upstream's buildListenerDefaultActionsViaAnnotation:
        the Service's own group with `baseServiceWeight`, then the others, by ARN or as
        another Service's target group)."""
        action: ListenerAction | None = self.listener_actions.get(name)
        if action is None:
            return [ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tg_ref)])]
        forward = action.forward
        groups = [WeightedTargetGroup(target_group_arn=tg_ref,
                                      weight=1 if forward.base_service_weight is None
                                      else forward.base_service_weight)]
        where = f"service {self.stack_id}: annotation {PREFIX}{ACTIONS}{name}"
        for t in forward.target_groups:
            target: Ref | str = (str(t.target_group_arn) if t.service_name is None else
                                 self._backend_target_group(t, listener_protocol, where))
            groups.append(WeightedTargetGroup(target_group_arn=target,
                                              weight=1 if t.weight is None else t.weight))
        sticky = action.stickiness
        try:
            return [ForwardAction(target_groups=groups, stickiness=None if sticky is None
                                  else Stickiness(enabled=sticky))]
        except ValidationError as exc:
            raise InvalidService(f"service {self.stack_id}: annotation {PREFIX}{ACTIONS}{name}: "
                                 f"{describe_validation_error(exc)}") from None

    def _alpn_policy(self) -> AlpnPolicy | None:
        # With EnhancedDefaultBehavior a TLS listener without the annotation gets "None", so
        # removing it takes the policy off the listener (upstream's isRemoveALPN).
        if self.config.alpn_policy is None and enhanced_default_behavior(self.settings.gates):
            return "None"
        return self.config.alpn_policy

    def _add_port(self, port: _Port, lb: Ref) -> None:
        cfg = self.config
        listener_protocol = self._listener_protocol(port)
        tg_protocol: TargetGroupProtocol = listener_protocol
        if listener_protocol == "TLS":
            tg_protocol = "TLS" if cfg.backend_protocol == "ssl" else "TCP"
        target_type = cfg.target_type
        tg_port = self._target_port(port.spec)
        resource_id = f"{self.stack_id}:{port.port}"
        ip_type = self._target_ip_address_type()
        tg = TargetGroup(
            name=service_target_group_name(
                self.settings.cluster.name, namespace=self.namespace, name=self.name,
                uid=self.uid, target_port=tg_port, service_port=port.port,
                target_type=target_type, protocol=tg_protocol,
                health_check_protocol=cfg.health_check.protocol,
                health_check_interval=cfg.health_check.interval_seconds),
            protocol=tg_protocol, port=tg_port, target_type=target_type,
            ip_address_type=ip_type, health_check=self._health_check(),
            attributes=self.port_config.target_group_attributes(port.port),
            tags=dict(cfg.tags))
        tg_ref = self.builder.add_target_group(resource_id, tg)
        tls = listener_protocol == "TLS"
        self.builder.add_listener(str(port.port), Listener(
            load_balancer_arn=lb, port=port.port, protocol=listener_protocol,
            certificates=cfg.ssl_certificates if tls else (),
            ssl_policy=cfg.ssl_policy if tls else None,
            alpn_policy=self._alpn_policy() if tls else None,
            attributes=dict(self.listener_attributes.get(f"{listener_protocol}-{port.port}")
                            or {}),
            default_actions=self._default_actions(f"{listener_protocol}-{port.port}", tg_ref,
                                                  listener_protocol),
            tags=dict(cfg.tags)))
        self._add_binding(resource_id, tg, tg_ref, service=self.name, port=port,
                          tg_port=tg_port)

    def _backend_target_group(self, tuple_: TargetGroupTuple,
                              listener_protocol: ListenerProtocol, where: str) -> Ref:
        """A backend Service's target group and binding (upstream's buildTargetGroupTuples):
        built with this Service's annotations (the backend's own are not read), its target
        type and health check; TCP behind a TLS listener with `decrypt`, else the listener's
        protocol; named with both Services' UIDs. One per backend port, whichever listeners
        forward to it."""
        key = f"{self.namespace}/{tuple_.service_name}"
        backend = self.services(key) if self.services is not None else None
        if backend is None:
            raise MissingService(f"{where} forwards to Service {key}, which does not exist")
        spec = backend.get("spec") or {}
        wanted = tuple_.service_port
        port = next((p for p in spec.get("ports") or [] if isinstance(p, Mapping)
                     and type(p.get("port")) is int
                     and (p.get("port") == wanted or (isinstance(wanted, str) and wanted
                                                      in (p.get("name"), str(p.get("port")))))),
                    None)
        if port is None:
            raise InvalidService(f"{where} forwards to port {wanted!r} of Service {key}, "
                                 "which it does not have")
        resource_id = f"{key}:{port['port']}"
        found = self.backend_groups.get(resource_id)
        if found is not None:
            return found
        tg_protocol: TargetGroupProtocol = (
            "TCP" if listener_protocol == "TLS" and tuple_.decrypt else listener_protocol)
        meta = backend.get("metadata") or {}
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        cfg = self.config
        tg_port = self._target_port(port)
        ip_type = self._target_ip_address_type()
        tg = TargetGroup(
            name=service_target_group_name(
                self.settings.cluster.name, namespace=self.namespace, name=name, uid=uid,
                target_port=tg_port, service_port=int(port["port"]),
                target_type=cfg.target_type, protocol=tg_protocol,
                health_check_protocol=cfg.health_check.protocol,
                health_check_interval=cfg.health_check.interval_seconds, base_uid=self.uid),
            protocol=tg_protocol, port=tg_port, target_type=cfg.target_type,
            ip_address_type=ip_type, health_check=self._health_check(),
            attributes=self.port_config.target_group_attributes(int(port["port"])),
            tags=dict(cfg.tags))
        ref = self.builder.add_target_group(resource_id, tg)
        self.backend_groups[resource_id] = ref
        carried = ("UDP" if tg_protocol in ("UDP", "QUIC") else
                   "TCP_UDP" if tg_protocol in ("TCP_UDP", "TCP_QUIC") else "TCP")
        self._add_binding(resource_id, tg, ref, service=name,
                          port=_Port(int(port["port"]), carried, port), tg_port=tg_port)
        return ref

    def _add_binding(self, resource_id: str, tg: TargetGroup, ref: Ref, *, service: str,
                     port: _Port, tg_port: int) -> None:
        cfg = self.config
        self.builder.add(resource_id, TargetGroupBindingResource(
            name=tg.name, namespace=self.namespace, target_group_arn=ref,
            target_type=cfg.target_type, service_ref=ServiceReference(name=service,
                                                                      port=port.port),
            ip_address_type=tg.ip_address_type,
            multi_cluster_target_group=cfg.multi_cluster_target_group,
            node_selector=(dict(cfg.target_node_labels)
                           if cfg.target_type == "instance" and cfg.target_node_labels
                           else None),
            networking=binding_networking(
                self.groups.target_source, self._networking_ports(port, self._traffic_port(
                    port.spec, tg_port)),
                restricted=self.settings.backend_sg.restricted_rules,
                protocols=["TCP", *(["UDP"] if port.protocol != "TCP" else [])]),
            labels={SERVICE_STACK_NAME_LABEL: self.name,
                    SERVICE_STACK_NAMESPACE_LABEL: self.namespace,
                    **controller_labels(self.settings.cluster.controller_id)}))

    def _target_port(self, port: Mapping[str, Any]) -> int:
        # Upstream: the node port for instance targets; the numeric target port for ip targets,
        # else 1 (targets are registered with their own ports, so it is only a default).
        if self.config.target_type == "instance":
            node_port = port.get("nodePort")
            if type(node_port) is not int or not 1 <= node_port <= 65535:
                raise InvalidService(
                    f"service {self.stack_id} port {port.get('port')} has no nodePort, which "
                    "instance targets need (allocateLoadBalancerNodePorts is false?)")
            return node_port
        target = port.get("targetPort", port.get("port"))
        if type(target) is int and 1 <= target <= 65535:
            return target
        return 1

    def _traffic_port(self, port: Mapping[str, Any], tg_port: int) -> int | str:
        """The port targets are reached on, for their groups' rules: the target group's port,
        or a named target port, which the binding's controller resolves per target."""
        target = port.get("targetPort")
        if self.config.target_type == "ip" and isinstance(target, str) and target:
            return target
        return tg_port

    def _target_ip_address_type(self) -> TargetIpAddressType:
        families = self.spec.get("ipFamilies")
        first = families[0] if isinstance(families, list) and families else "IPv4"
        if (self.config.target_type == "ip" and self.config.ip_address_type == "dualstack"
                and first == "IPv6"):
            return "ipv6"
        return "ipv4"

    def _health_check(self) -> HealthCheck:
        hc = self.config.health_check
        http = hc.protocol != "TCP"
        return HealthCheck(
            protocol=hc.protocol, port=self._health_check_port(hc.port),
            path=hc.path if http else None, interval_seconds=hc.interval_seconds,
            timeout_seconds=hc.timeout_seconds, healthy_threshold=hc.healthy_threshold,
            unhealthy_threshold=hc.unhealthy_threshold,
            matcher=HealthCheckMatcher(http_code=hc.success_codes)
            if http and hc.success_codes else None)

    def _health_check_port(self, port: int | str) -> int | TrafficPort:
        if isinstance(port, int):
            return port
        if port == TRAFFIC_PORT:
            return TRAFFIC_PORT
        # A named Service port: its node port (instance) or its numeric target port (ip).
        for candidate in self.spec.get("ports") or []:
            if isinstance(candidate, Mapping) and candidate.get("name") == port:
                if self.config.target_type == "instance":
                    value = candidate.get("nodePort")
                else:
                    value = candidate.get("targetPort", candidate.get("port"))
                if type(value) is int:
                    return value
                raise InvalidService(
                    f"service {self.stack_id}: health check port {port!r} resolves to "
                    f"{value!r}, not a port number")
        raise InvalidService(f"service {self.stack_id}: health check port {port!r} is not one "
                             "of the Service's ports")


__all__ = [
    "LOAD_BALANCER_ID",
    "MODEL_VERSION",
    "InvalidService",
    "MissingService",
    "ModelSettings",
    "ServiceLookup",
    "admission_refusal",
    "build_stack",
    "checkpoint_input",
    "checkpoint_of",
    "stack_id",
]
