"""Which Services get a Network Load Balancer, and their `service.beta.kubernetes.io/...`
annotations parsed into one frozen `ServiceLBConfig` with upstream's names and defaults.

Both functions are pure (a plain-dict Service in, a value out), so the event handler can compute
a checkpoint from the informer cache and the reconciler can build the model from the same value.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from controller import validators
from controller.annotationreview import UNSUPPORTED, Finding, check, review, summarized
from controller.annotations import (
    TRAFFIC_PORT,
    AnnotationError,
    AnnotationReader,
    annotations_of,
    note_read,
    parse_bool,
    parse_port,
    parse_string_map,
    quote,
    split_list,
)
from controller.apis import catalogue
from controller.model.listener import AlpnPolicy
from controller.model.loadbalancer import SOURCE_NAT_AUTO_ASSIGNED, Scheme
from controller.model.targetgroup import TargetType
from controller.settings import StackDefaults

PREFIX: Final = "service.beta.kubernetes.io/"

LOAD_BALANCER_TYPE: Final = "aws-load-balancer-type"
TARGET_TYPE: Final = "aws-load-balancer-nlb-target-type"
NAME: Final = "aws-load-balancer-name"
SCHEME: Final = "aws-load-balancer-scheme"
INTERNAL: Final = "aws-load-balancer-internal"  # deprecated in favour of SCHEME
IP_ADDRESS_TYPE: Final = "aws-load-balancer-ip-address-type"
SUBNETS: Final = "aws-load-balancer-subnets"
EIP_ALLOCATIONS: Final = "aws-load-balancer-eip-allocations"
PRIVATE_IPV4_ADDRESSES: Final = "aws-load-balancer-private-ipv4-addresses"
IPV6_ADDRESSES: Final = "aws-load-balancer-ipv6-addresses"
ENABLE_SOURCE_NAT_PREFIX: Final = "aws-load-balancer-enable-prefix-for-ipv6-source-nat"
SOURCE_NAT_PREFIXES: Final = "aws-load-balancer-source-nat-ipv6-prefixes"
SSL_CERT: Final = "aws-load-balancer-ssl-cert"
SSL_PORTS: Final = "aws-load-balancer-ssl-ports"
SSL_NEGOTIATION_POLICY: Final = "aws-load-balancer-ssl-negotiation-policy"
BACKEND_PROTOCOL: Final = "aws-load-balancer-backend-protocol"
ALPN_POLICY: Final = "aws-load-balancer-alpn-policy"
LISTENER_ATTRIBUTES: Final = "aws-load-balancer-listener-attributes."
HC_PROTOCOL: Final = "aws-load-balancer-healthcheck-protocol"
HC_PORT: Final = "aws-load-balancer-healthcheck-port"
HC_PATH: Final = "aws-load-balancer-healthcheck-path"
HC_HEALTHY_THRESHOLD: Final = "aws-load-balancer-healthcheck-healthy-threshold"
HC_UNHEALTHY_THRESHOLD: Final = "aws-load-balancer-healthcheck-unhealthy-threshold"
HC_TIMEOUT: Final = "aws-load-balancer-healthcheck-timeout"
HC_INTERVAL: Final = "aws-load-balancer-healthcheck-interval"
HC_SUCCESS_CODES: Final = "aws-load-balancer-healthcheck-success-codes"
TARGET_GROUP_ATTRIBUTES: Final = "aws-load-balancer-target-group-attributes"
TARGET_NODE_LABELS: Final = "aws-load-balancer-target-node-labels"
LOAD_BALANCER_ATTRIBUTES: Final = "aws-load-balancer-attributes"
ADDITIONAL_RESOURCE_TAGS: Final = "aws-load-balancer-additional-resource-tags"
PROXY_PROTOCOL: Final = "aws-load-balancer-proxy-protocol"
MULTI_CLUSTER_TARGET_GROUP: Final = "aws-load-balancer-multi-cluster-target-group"
# Deprecated since upstream v2.3 in favour of LOAD_BALANCER_ATTRIBUTES, still honoured there.
ACCESS_LOG_ENABLED: Final = "aws-load-balancer-access-log-enabled"
ACCESS_LOG_BUCKET: Final = "aws-load-balancer-access-log-s3-bucket-name"
ACCESS_LOG_PREFIX: Final = "aws-load-balancer-access-log-s3-bucket-prefix"
CROSS_ZONE: Final = "aws-load-balancer-cross-zone-load-balancing-enabled"
SECURITY_GROUPS: Final = "aws-load-balancer-security-groups"
SECURITY_GROUP_PREFIX_LISTS: Final = "aws-load-balancer-security-group-prefix-lists"
# Upstream's key (SvcLBSuffixSourceRanges), outside the aws-load-balancer- family.
SOURCE_RANGES: Final = "load-balancer-source-ranges"
MANAGE_BACKEND_RULES: Final = "aws-load-balancer-manage-backend-security-group-rules"
DISABLE_NLB_SG: Final = "aws-load-balancer-disable-nlb-sg"
ICMP_PATH_MTU: Final = "aws-load-balancer-enable-icmp-for-path-mtu-discovery"
PRIVATE_LINK_INBOUND_RULES: Final = "aws-load-balancer-inbound-sg-rules-on-private-link-traffic"
ENABLE_TCP_UDP_LISTENER: Final = "aws-load-balancer-enable-tcp-udp-listener"
MINIMUM_CAPACITY: Final = "aws-load-balancer-minimum-load-balancer-capacity"
PROXY_PROTOCOL_PER_TARGET_GROUP: Final = "aws-load-balancer-proxy-protocol-per-target-group"
QUIC_ENABLED_PORTS: Final = "aws-load-balancer-quic-enabled-ports"
# `aws-load-balancer-target-group-attributes.<port>`: one Service port's target group.
PORT_TARGET_GROUP_ATTRIBUTES: Final = TARGET_GROUP_ATTRIBUTES + "."

# Every key `parse_service_config` reads: the catalogue's acted-on Service keys. The checkpoint
# digests these and ignores the rest.
SERVICE_ANNOTATION_KEYS: Final = catalogue.SERVICE_ANNOTATION_KEYS

TYPE_EXTERNAL: Final = "external"
TYPE_NLB_IP: Final = "nlb-ip"  # deprecated: an NLB with IP targets

TARGET_TYPES: Final[tuple[TargetType, ...]] = ("instance", "ip")
SCHEMES: Final[tuple[Scheme, ...]] = ("internal", "internet-facing")
NlbIpAddressType = Literal["ipv4", "dualstack"]
IP_ADDRESS_TYPES: Final[tuple[NlbIpAddressType, ...]] = ("ipv4", "dualstack")
HealthCheckProtocol = Literal["TCP", "HTTP", "HTTPS"]
HC_PROTOCOLS: Final[tuple[HealthCheckProtocol, ...]] = ("TCP", "HTTP", "HTTPS")
BackendProtocol = Literal["tcp", "ssl"]
BACKEND_PROTOCOLS: Final[tuple[BackendProtocol, ...]] = ("tcp", "ssl")
ALPN_POLICIES: Final[tuple[AlpnPolicy, ...]] = (
    "HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred", "None")

ATTR_PROXY_PROTOCOL_V2: Final = "proxy_protocol_v2.enabled"
ATTR_PRESERVE_CLIENT_IP: Final = "preserve_client_ip.enabled"
ATTR_DELETION_PROTECTION: Final = "deletion_protection.enabled"
ATTR_ACCESS_LOGS_ENABLED: Final = "access_logs.s3.enabled"
ATTR_ACCESS_LOGS_BUCKET: Final = "access_logs.s3.bucket"
ATTR_ACCESS_LOGS_PREFIX: Final = "access_logs.s3.prefix"
ATTR_CROSS_ZONE: Final = "load_balancing.cross_zone.enabled"

DEFAULT_SUCCESS_CODES: Final = "200-399"
OnOff = Literal["on", "off"]
ON_OFF: Final[tuple[OnOff, ...]] = ("on", "off")

_INTEGER = re.compile(r"[+-]?[0-9]+")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HealthCheckSettings(_Frozen):
    protocol: HealthCheckProtocol
    # "traffic-port", a port number, or the name of one of the Service's ports (resolved to
    # its node port or target port by the model builder, as upstream does).
    port: int | str
    path: str | None  # HTTP(S) only
    success_codes: str | None  # HTTP(S) only
    interval_seconds: int
    timeout_seconds: int
    healthy_threshold: int
    unhealthy_threshold: int


class Placement(_Frozen):
    """Where the NLB sits: its subnets and what each subnet's mapping asks for."""

    subnets: tuple[str, ...] | None = None  # IDs or Name tags; None: discover by role tags
    # Static addresses, one per subnet (None: AWS picks): EIP allocation IDs in the order of
    # the subnets' IDs, private IPv4 and IPv6 addresses each within one subnet's CIDR.
    eip_allocations: tuple[str, ...] | None = None
    private_ipv4_addresses: tuple[str, ...] | None = None
    ipv6_addresses: tuple[str, ...] | None = None
    # IPv6 source NAT (UDP over IPv6 on a dualstack NLB): "on"/"off" (None: off, AWS's
    # default), and one /80 or `auto_assigned` per subnet, by position.
    enable_prefix_for_ipv6_source_nat: OnOff | None = None
    source_nat_ipv6_prefixes: tuple[str, ...] | None = None


class ServiceLBConfig(_Frozen):
    """Everything the NLB model builder takes from a Service's annotations, defaults applied."""

    load_balancer_type: str | None
    target_type: TargetType
    name: str | None  # None: the builder derives `k8s-<ns>-<name>-<hash>`
    scheme: Scheme
    # Neither scheme annotation is set: an existing load balancer keeps its scheme, and
    # `scheme` (the configured default) is for a new one.
    scheme_from_annotation: bool
    ip_address_type: NlbIpAddressType
    placement: Placement
    ssl_certificates: tuple[str, ...]  # the first is the listener's default certificate
    ssl_ports: tuple[str, ...]  # port names or numbers; empty: every port when certs are set
    ssl_policy: str
    backend_protocol: BackendProtocol
    alpn_policy: AlpnPolicy | None
    health_check: HealthCheckSettings
    target_group_attributes: dict[str, str]
    load_balancer_attributes: dict[str, str]
    tags: dict[str, str]
    target_node_labels: dict[str, str]
    multi_cluster_target_group: bool
    # Security groups: user-given IDs or names (None: a managed frontend group), who the
    # managed group admits, and whether the NLB gets security groups at all.
    security_groups: tuple[str, ...] | None = None
    prefix_lists: tuple[str, ...] = ()
    # `load-balancer-source-ranges`; `spec.loadBalancerSourceRanges` wins over it (upstream).
    source_ranges: tuple[str, ...] | None = None
    manage_backend_rules: bool | None = None  # None: the controller's default
    disable_security_groups: bool = False
    icmp_path_mtu: bool = False
    inbound_rules_on_private_link: Literal["on", "off"] | None = None

    def is_tls_port(self, *, port: int, name: str | None = None, protocol: str = "TCP") -> bool:
        """Whether a Service port gets a TLS listener. As upstream, `*` is an ordinary token
        and matches no port; UDP ports never do."""
        if not self.ssl_certificates or protocol.upper() == "UDP":
            return False
        if not self.ssl_ports:
            return True
        return str(port) in self.ssl_ports or (name is not None and name in self.ssl_ports)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def qualifies(service: Mapping[str, Any], *, load_balancer_class: str,
              load_balancer_only: bool = True, by_annotation: bool = True) -> bool:
    """Whether this controller provisions an NLB for `service`: a LoadBalancer Service whose
    `spec.loadBalancerClass` is ours, or, with no class, `aws-load-balancer-type: external`
    plus an `ip`/`instance` target type, or the deprecated `aws-load-balancer-type: nlb-ip`.
    `load_balancer_only` (upstream's ServiceTypeLoadBalancerOnly gate): false serves Services
    of any type that ask for it so, as upstream does by default. `by_annotation`: whether a
    Service without a class is served by its annotations (the cluster's default controller
    only: of several controllers, one with a `--controller-id` serves its class alone).

    Deletion is not considered: a deleted Service still qualifies, so that the reconciler
    cleans up what it provisioned (it decides by its finalizer)."""
    spec = _mapping(service.get("spec"))
    if load_balancer_only and spec.get("type") != "LoadBalancer":
        return False
    cls = spec.get("loadBalancerClass")
    if cls is not None:
        return bool(cls == load_balancer_class)
    if not by_annotation:
        return False
    annotations = annotations_of(service)
    lb_type = annotations.get(PREFIX + LOAD_BALANCER_TYPE)
    if lb_type == TYPE_NLB_IP:
        return True
    return lb_type == TYPE_EXTERNAL and annotations.get(PREFIX + TARGET_TYPE) in TARGET_TYPES


def served_by_upstream_only(service: Mapping[str, Any], *, load_balancer_class: str,
                            load_balancer_only: bool = True, by_annotation: bool = True) -> bool:
    """Whether upstream with its default gates would serve `service` and this controller does
    not: with the ServiceTypeLoadBalancerOnly gate on, a Service of another type than
    LoadBalancer asking for an NLB by annotation (pkg/service/service_utils.go)."""
    spec = _mapping(service.get("spec"))
    if not load_balancer_only or spec.get("type") == "LoadBalancer":
        return False
    as_load_balancer = {**service, "spec": {**spec, "type": "LoadBalancer"}}
    return qualifies(as_load_balancer, load_balancer_class=load_balancer_class,
                     by_annotation=by_annotation)


def relevant_annotations(service: Mapping[str, Any]) -> dict[str, str]:
    """The Service's annotations that `parse_service_config` reads, and only those."""
    return {key: value for key, value in annotations_of(service).items()
            if key in SERVICE_ANNOTATION_KEYS and isinstance(value, str)}


def reviewed_annotations(service: Mapping[str, Any]) -> dict[str, Any]:
    """Every annotation under the prefixes the catalogue speaks for: those read and those
    reported (a change to either must reach the reconciler)."""
    return catalogue.reviewed_annotations(annotations_of(service), "service")


def admission_warnings(service: Mapping[str, Any], *, load_balancer_class: str,
                       advanced_health_check: bool = True) -> list[str]:
    """What `kubectl apply` of a Service we would serve is told about its keys: every finding,
    refusals included (there is no validating webhook for Services to deny them; the
    reconciler refuses them without an AWS call)."""
    if not qualifies(service, load_balancer_class=load_balancer_class):
        return []
    found = review(annotations_of(service), where="service")
    if not advanced_health_check:
        found = (*found, *_gated_findings(service))
    return [f.message for f in summarized(found)]


def annotation_findings(service: Mapping[str, Any], *,
                        advanced_health_check: bool = True,
                        capacity_reservation: bool = True) -> tuple[Finding, ...]:
    """What the Service's owner is told about keys aiolbc does not act on (Warnings); raises
    `UnsupportedAnnotation` for one that narrows access and cannot be honoured.
    `advanced_health_check` off (NLBHealthCheckAdvancedConfig): the health check timeout and
    success codes are not read, which their keys are told. `capacity_reservation`: the
    LBCapacityReservation gate; off, the capacity key is one more finding (it is not read, as
    upstream)."""
    findings = check(annotations_of(service), where="service")
    if not advanced_health_check:
        findings = (*findings, *_gated_findings(service))
    key = PREFIX + MINIMUM_CAPACITY
    if not capacity_reservation and key in annotations_of(service):
        findings += (Finding(key, UNSUPPORTED, f"annotation {key} is not acted on "
                             "(--feature-gates LBCapacityReservation=false); it is ignored"),)
    return findings


def _gated_findings(service: Mapping[str, Any]) -> tuple[Finding, ...]:
    """Keys a gate in its current state leaves unread: NLBHealthCheckAdvancedConfig off."""
    return tuple(Finding(PREFIX + key, UNSUPPORTED, f"{PREFIX + key}: not acted on while the "
                         "NLBHealthCheckAdvancedConfig feature gate is off")
                 for key in (HC_TIMEOUT, HC_SUCCESS_CODES)
                 if PREFIX + key in annotations_of(service))








def _check_bool_attribute(key: str, raw: str, attributes: Mapping[str, str], name: str) -> None:
    value = attributes.get(name)
    if value is None:
        return
    try:
        parse_bool(key, value)
    except AnnotationError:
        raise AnnotationError(key, raw, f"sets {name}={quote(value)}, which is not true or "
                              "false") from None


def _distinct(key: str, raw: str, items: list[str], what: str) -> tuple[str, ...]:
    if not items:
        raise AnnotationError(key, raw, f"lists no {what}")
    for index, item in enumerate(items):
        if item in items[:index]:
            raise AnnotationError(key, raw, f"lists {quote(item)} twice; each subnet needs "
                                  f"{what} of its own")
    return tuple(items)


def _addresses(version: int) -> Callable[[str, str], tuple[str, ...]]:
    family = "IPv4" if version == 4 else "IPv6"

    def parse(key: str, raw: str) -> tuple[str, ...]:
        items: list[str] = []
        for item in split_list(raw):
            try:
                address = ipaddress.ip_address(item)
            except ValueError:
                # Upstream's words: "... must be valid IP address: <value>".
                raise AnnotationError(key, raw, f"has {quote(item)}, which is not an IP "
                                      "address") from None
            if address.version != version:
                raise AnnotationError(key, raw, f"has {quote(item)}, which is not an {family} "
                                      "address")
            items.append(str(address))
        return _distinct(key, raw, items, f"{family} address")

    return parse


def _source_nat_prefixes(key: str, raw: str) -> tuple[str, ...]:
    items: list[str] = []
    for item in split_list(raw):
        if item == SOURCE_NAT_AUTO_ASSIGNED:
            items.append(item)
            continue
        address, _, length = item.partition("/")
        try:
            network = ipaddress.ip_network(item, strict=True)
        except ValueError:
            network = None
        # Upstream's rule (ValidateSourceNatPrefixForSubnetPair): a /80 of an IPv6 address.
        if network is None or network.version != 6 or length != "80" or not address:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not "
                                  f"{SOURCE_NAT_AUTO_ASSIGNED} or an IPv6 prefix of length 80 "
                                  "(e.g. 2600:1f13:837:8501:1::/80)")
        items.append(str(network))
    if not items:
        raise AnnotationError(key, raw, "lists no prefix")
    return tuple(items)


def _placement(reader: AnnotationReader) -> Placement:
    return Placement(
        subnets=reader.get(SUBNETS, validators.subnets),
        eip_allocations=reader.get(EIP_ALLOCATIONS, validators.eip_allocations),
        private_ipv4_addresses=reader.get(PRIVATE_IPV4_ADDRESSES, _addresses(4)),
        ipv6_addresses=reader.get(IPV6_ADDRESSES, _addresses(6)),
        enable_prefix_for_ipv6_source_nat=reader.get_enum(ENABLE_SOURCE_NAT_PREFIX, ON_OFF),
        source_nat_ipv6_prefixes=reader.get(SOURCE_NAT_PREFIXES, _source_nat_prefixes),
    )


def _check_not_empty(key: str, raw: str) -> str:
    if not raw:
        raise AnnotationError(key, raw, "is empty")
    return raw


def _health_check_port(spec: Mapping[str, Any]) -> Callable[[str, str], int | str]:
    ports = spec.get("ports")
    names = {p["name"] for p in ports if isinstance(p, Mapping) and isinstance(p.get("name"), str)
             } if isinstance(ports, list) else set()

    def parse(key: str, raw: str) -> int | str:
        if raw == TRAFFIC_PORT or raw in names:
            return raw
        if _INTEGER.fullmatch(raw):
            return parse_port(key, raw)
        raise AnnotationError(key, raw, f'is not "{TRAFFIC_PORT}", a port number or the name '
                              "of one of the Service's ports")

    return parse


def _health_check(reader: AnnotationReader, spec: Mapping[str, Any],
                  target_type: TargetType, *, advanced: bool) -> HealthCheckSettings:
    """`advanced`: the NLBHealthCheckAdvancedConfig gate. Off, as upstream, the timeout and
    success-codes annotations are not read: the timeout is the default and there is no
    matcher."""
    # Instance targets with externalTrafficPolicy Local ask kube-proxy's health check node port
    # whether a node has a local endpoint; upstream uses different defaults for that case.
    local = (target_type == "instance" and spec.get("externalTrafficPolicy") == "Local"
             and spec.get("type") == "LoadBalancer")
    node_port = spec.get("healthCheckNodePort")
    default_port: int | str = TRAFFIC_PORT
    if local and type(node_port) is int and 1 <= node_port <= 65535:
        default_port = node_port
    protocol = reader.get_enum(HC_PROTOCOL, HC_PROTOCOLS, ignore_case=True) or (
        "HTTP" if local else "TCP")
    port = reader.get(HC_PORT, _health_check_port(spec))
    http = protocol != "TCP"
    path = reader.get(HC_PATH, validators.health_check_path) if http else None
    codes = reader.get(HC_SUCCESS_CODES, validators.success_codes(
        validators.NLB_HTTP_CODES)) if http and advanced else None
    # The ranges are AWS's for NLB target groups; upstream parses integers only and leaves the
    # ranges to CreateTargetGroup.
    interval = reader.get_int(HC_INTERVAL, minimum=5, maximum=300)
    timeout = reader.get_int(HC_TIMEOUT, minimum=2, maximum=120) if advanced else None
    healthy = reader.get_int(HC_HEALTHY_THRESHOLD, minimum=2, maximum=10)
    unhealthy = reader.get_int(HC_UNHEALTHY_THRESHOLD, minimum=2, maximum=10)
    return HealthCheckSettings(
        protocol=protocol,
        port=default_port if port is None else port,
        path=(path or ("/healthz" if local else "/")) if http else None,
        success_codes=(codes or DEFAULT_SUCCESS_CODES) if http and advanced else None,
        interval_seconds=10 if interval is None else interval,
        timeout_seconds=(6 if local else 10) if timeout is None else timeout,
        healthy_threshold=(2 if local else 3) if healthy is None else healthy,
        unhealthy_threshold=(2 if local else 3) if unhealthy is None else unhealthy,
    )


def _target_type(reader: AnnotationReader, spec: Mapping[str, Any], lb_type: str | None,
                 defaults: StackDefaults) -> TargetType:
    if lb_type == TYPE_NLB_IP:
        return "ip"  # upstream: nlb-ip wins over (and never reads) the target-type annotation
    explicit = reader.get_enum(TARGET_TYPE, TARGET_TYPES)
    if explicit is not None:
        return explicit
    if lb_type == TYPE_EXTERNAL and spec.get("loadBalancerClass") is None:
        raise AnnotationError(reader.key(TARGET_TYPE), None,
                              'is required with aws-load-balancer-type "external" '
                              "(use ip or instance)")
    return defaults.target_type


def _scheme(reader: AnnotationReader, defaults: StackDefaults) -> tuple[Scheme, bool]:
    """(scheme, whether an annotation chose it)."""
    explicit = reader.get_enum(SCHEME, SCHEMES)
    if explicit is not None:
        return explicit, True  # upstream then ignores the deprecated annotation entirely
    internal = reader.get_bool(INTERNAL)
    if internal is not None:
        return ("internal" if internal else "internet-facing"), True
    # Upstream then keeps an existing load balancer's scheme (an AWS lookup the pure stage
    # leaves to the deployer), and uses the default for a new one.
    return defaults.scheme, False


def _target_group_attributes(reader: AnnotationReader) -> dict[str, str]:
    attributes = {ATTR_PROXY_PROTOCOL_V2: "false"}
    found = reader.lookup(TARGET_GROUP_ATTRIBUTES)
    if found is not None:
        custom = reader.get_string_map(TARGET_GROUP_ATTRIBUTES) or {}
        _check_bool_attribute(*found, custom, ATTR_PRESERVE_CLIENT_IP)
        attributes.update(custom)
    if reader.get_enum(PROXY_PROTOCOL, ("*",)) is not None:
        attributes[ATTR_PROXY_PROTOCOL_V2] = "true"  # wins over the attributes annotation
    if attributes[ATTR_PROXY_PROTOCOL_V2] == "":
        del attributes[ATTR_PROXY_PROTOCOL_V2]  # upstream: an empty value means AWS's default
    return attributes


def _load_balancer_attributes(reader: AnnotationReader) -> dict[str, str]:
    attributes: dict[str, str] = {}
    found = reader.lookup(LOAD_BALANCER_ATTRIBUTES)
    if found is not None:
        attributes = reader.get_string_map(LOAD_BALANCER_ATTRIBUTES) or {}
        # Upstream parses it only when deleting; a bad value then blocks the deletion.
        _check_bool_attribute(*found, attributes, ATTR_DELETION_PROTECTION)
    # The deprecated single-attribute annotations win ties, as upstream documents.
    if reader.get_bool(ACCESS_LOG_ENABLED):
        attributes[ATTR_ACCESS_LOGS_ENABLED] = "true"
        bucket = reader.get_str(ACCESS_LOG_BUCKET)
        if bucket is not None:
            attributes[ATTR_ACCESS_LOGS_BUCKET] = bucket
        prefix = reader.get_str(ACCESS_LOG_PREFIX)
        if prefix is not None:
            attributes[ATTR_ACCESS_LOGS_PREFIX] = prefix
    cross_zone = reader.get_bool(CROSS_ZONE)
    if cross_zone is not None:
        attributes[ATTR_CROSS_ZONE] = "true" if cross_zone else "false"
    return attributes


def _tags(reader: AnnotationReader, defaults: StackDefaults, *,
          default_tags_low_priority: bool) -> dict[str, str]:
    found = reader.lookup(ADDITIONAL_RESOURCE_TAGS)
    tags = reader.get_string_map(ADDITIONAL_RESOURCE_TAGS) or {}
    if found is not None:
        for name in sorted(tags):
            if name in defaults.external_managed_tags:
                raise AnnotationError(*found, f"sets tag {quote(name)}, which is managed outside "
                                      "the controller (--external-managed-tags)")
    # --default-tags win over the annotation, as upstream documents, unless the
    # EnableDefaultTagsLowPriority gate is on.
    if default_tags_low_priority:
        return {**defaults.tags, **tags}
    return {**tags, **defaults.tags}






def parse_listener_attributes(service: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """`aws-load-balancer-listener-attributes.<PROTOCOL>-<port>` keys, by `<PROTOCOL>-<port>`
    (upstream reads the one naming each listener; values are `key=value` lists, as
    ModifyListenerAttributes takes them)."""
    start = PREFIX + LISTENER_ATTRIBUTES
    note_read(start + "*")
    found: dict[str, dict[str, str]] = {}
    for key, value in sorted(annotations_of(service).items()):
        if isinstance(key, str) and key.startswith(start) and len(key) > len(start):
            if not isinstance(value, str):
                raise AnnotationError(key, None, f"is not a string (got {type(value).__name__})")
            found[key[len(start):]] = parse_string_map(key, value)
    return found


def parse_capacity_units(service: Mapping[str, Any]) -> int | None:
    """`CapacityUnits=N` (0 resets the reservation); None: not asked for. Read only with the
    LBCapacityReservation gate on, as upstream."""
    return AnnotationReader.of(service, PREFIX).get(MINIMUM_CAPACITY,
                                                    validators.minimum_capacity)


def parse_service_config(service: Mapping[str, Any], *, defaults: StackDefaults,
                         default_tags_low_priority: bool = False,
                         advanced_health_check: bool = True) -> ServiceLBConfig:
    """Parse a Service's NLB annotations. Raises `UnsupportedAnnotation` for a key that narrows
    access and cannot be honoured, else the first AnnotationError met, in the order of
    `ServiceLBConfig`'s fields (one message per Service, the same one each time). The caller
    checks `qualifies` first; this only enforces what the annotations themselves require."""
    annotation_findings(service)  # fail closed first: nothing else matters then
    reader = AnnotationReader.of(service, PREFIX)
    spec = _mapping(service.get("spec"))
    lb_type = reader.get_str(LOAD_BALANCER_TYPE)
    target_type = _target_type(reader, spec, lb_type, defaults)
    name = reader.get(NAME, validators.load_balancer_name)
    scheme, scheme_from_annotation = _scheme(reader, defaults)
    return ServiceLBConfig(
        load_balancer_type=lb_type,
        target_type=target_type,
        name=name,
        scheme=scheme,
        scheme_from_annotation=scheme_from_annotation,
        ip_address_type=reader.get_enum(IP_ADDRESS_TYPE, IP_ADDRESS_TYPES) or "ipv4",
        placement=_placement(reader),
        ssl_certificates=reader.get(SSL_CERT, validators.certificate_arns) or (),
        ssl_ports=reader.get_string_list(SSL_PORTS) or (),
        ssl_policy=reader.get(SSL_NEGOTIATION_POLICY, _check_not_empty) or defaults.ssl_policy,
        backend_protocol=reader.get_enum(BACKEND_PROTOCOL, BACKEND_PROTOCOLS) or "tcp",
        alpn_policy=reader.get_enum(ALPN_POLICY, ALPN_POLICIES),
        health_check=_health_check(reader, spec, target_type, advanced=advanced_health_check),
        target_group_attributes=_target_group_attributes(reader),
        load_balancer_attributes=_load_balancer_attributes(reader),
        tags=_tags(reader, defaults, default_tags_low_priority=default_tags_low_priority),
        target_node_labels=reader.get_string_map(TARGET_NODE_LABELS) or {},
        multi_cluster_target_group=bool(reader.get_bool(MULTI_CLUSTER_TARGET_GROUP)),
        security_groups=reader.get(SECURITY_GROUPS, validators.security_groups),
        prefix_lists=reader.get(SECURITY_GROUP_PREFIX_LISTS, validators.prefix_lists) or (),
        source_ranges=reader.get(SOURCE_RANGES, validators.cidrs),
        manage_backend_rules=reader.get_bool(MANAGE_BACKEND_RULES),
        disable_security_groups=bool(reader.get_bool(DISABLE_NLB_SG)),
        icmp_path_mtu=reader.get_enum(ICMP_PATH_MTU, ON_OFF) == "on",
        inbound_rules_on_private_link=reader.get_enum(PRIVATE_LINK_INBOUND_RULES, ON_OFF),
    )


class ServicePortConfig(_Frozen):
    """How the Service's ports become listeners and target groups, read apart from
    `ServiceLBConfig` (as the listener attributes are): the model builder reads both."""

    # TCP and UDP on one port number merged into one TCP_UDP listener; None: the
    # EnableTCPUDPListener feature gate decides (upstream's shouldUseTCPUDP).
    enable_tcp_udp_listener: bool | None = None
    # The target group attributes as upstream composes them per port
    # (buildTargetGroupAttributes): `aws-load-balancer-target-group-attributes`, then its
    # `.<port>` key's non-empty values, then proxy protocol v2 on the ports of
    # `aws-load-balancer-proxy-protocol-per-target-group` (off on the others), then
    # `aws-load-balancer-proxy-protocol: "*"` on every port.
    base_attributes: dict[str, str] = {}
    port_attributes: dict[int, dict[str, str]] = {}
    proxy_protocol_ports: tuple[int, ...] | None = None
    proxy_protocol_all: bool = False
    # Service port names or numbers whose UDP listener becomes QUIC and TCP_UDP one TCP_QUIC.
    quic_ports: tuple[str, ...] = ()

    def is_quic_port(self, *, port: int, name: str | None) -> bool:
        return str(port) in self.quic_ports or (name is not None and name in self.quic_ports)

    def target_group_attributes(self, port: int) -> dict[str, str]:
        attributes = {ATTR_PROXY_PROTOCOL_V2: "false", **self.base_attributes}
        attributes.update({k: v for k, v in self.port_attributes.get(port, {}).items() if v})
        if self.proxy_protocol_ports is not None:
            attributes[ATTR_PROXY_PROTOCOL_V2] = (
                "true" if port in self.proxy_protocol_ports else "false")
        if self.proxy_protocol_all:
            attributes[ATTR_PROXY_PROTOCOL_V2] = "true"
        if attributes[ATTR_PROXY_PROTOCOL_V2] == "":
            del attributes[ATTR_PROXY_PROTOCOL_V2]  # upstream: empty means AWS's default
        return attributes


def _proxy_protocol_ports(key: str, raw: str) -> tuple[int, ...]:
    ports: list[int] = []
    for item in split_list(raw):
        if not _INTEGER.fullmatch(item):
            # Upstream's words: "invalid port number in proxy-protocol-per-target-group".
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not a port number")
        ports.append(parse_port(key, item))
    return tuple(sorted(set(ports)))


def _port_target_group_attributes(service: Mapping[str, Any]) -> dict[int, dict[str, str]]:
    """`aws-load-balancer-target-group-attributes.<port>` keys, by port."""
    start = PREFIX + PORT_TARGET_GROUP_ATTRIBUTES
    note_read(start + "*")
    found: dict[int, dict[str, str]] = {}
    for key, value in sorted(annotations_of(service).items()):
        if not (isinstance(key, str) and key.startswith(start) and len(key) > len(start)):
            continue
        if not isinstance(value, str):
            raise AnnotationError(key, None, f"is not a string (got {type(value).__name__})")
        suffix = key[len(start):]
        if not _INTEGER.fullmatch(suffix) or not 1 <= int(suffix) <= 65535:
            raise AnnotationError(key, value, "does not end in a port number (upstream reads "
                                  f"{start}<port> only)")
        attributes = parse_string_map(key, value)
        _check_bool_attribute(key, value, attributes, ATTR_PRESERVE_CLIENT_IP)
        found[int(suffix)] = attributes
    return found


def parse_port_config(service: Mapping[str, Any]) -> ServicePortConfig:
    """The per-port annotations; raises the first AnnotationError in field order."""
    reader = AnnotationReader.of(service, PREFIX)
    return ServicePortConfig(
        # Upstream falls back to the gate on a value that is not a boolean; here it is refused,
        # so that a typo never decides silently how a port is served.
        enable_tcp_udp_listener=reader.get_bool(ENABLE_TCP_UDP_LISTENER),
        base_attributes=reader.get_string_map(TARGET_GROUP_ATTRIBUTES) or {},
        port_attributes=_port_target_group_attributes(service),
        proxy_protocol_ports=reader.get(PROXY_PROTOCOL_PER_TARGET_GROUP, _proxy_protocol_ports),
        proxy_protocol_all=reader.get_enum(PROXY_PROTOCOL, ("*",)) is not None,
        quic_ports=reader.get_string_list(QUIC_ENABLED_PORTS) or (),
    )


__all__ = [
    "PREFIX",
    "SERVICE_ANNOTATION_KEYS",
    "HealthCheckSettings",
    "Placement",
    "ServiceLBConfig",
    "ServicePortConfig",
    "admission_warnings",
    "annotation_findings",
    "parse_capacity_units",
    "parse_listener_attributes",
    "parse_port_config",
    "parse_service_config",
    "qualifies",
    "relevant_annotations",
    "reviewed_annotations",
    "served_by_upstream_only",
]
