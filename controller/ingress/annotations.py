"""`alb.ingress.kubernetes.io/...` annotations of one Ingress (and, for target-group and auth
settings, of its backend Service) parsed into frozen values with upstream's defaults.

Every parser raises `controller.annotations.AnnotationError` (one line naming key and value)
for any unusable string and nothing else. Group merge rules are applied by `controller.ingress
.merge`; here each Ingress is read on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from controller import validators
from controller.annotations import (
    TRAFFIC_PORT,
    AnnotationError,
    AnnotationReader,
    annotations_of,
    note_found,
    note_read,
    parse_int,
    parse_json,
    parse_string_map,
    quote,
)
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.apis import catalogue
from controller.ingress.authschemas import CognitoConfig, JwtValidationConfig, OidcConfig
from controller.ingress.gojson import decode, ignored_fields_message
from controller.ingress.mutualtls import parse_mutual_authentication
from controller.ingress.schemas import (
    ActionSpec,
    ConditionSpec,
    ListenPort,
    Protocol,
    TransformSpec,
)
from controller.model import MutualAuthentication, SubnetSelector

Scheme = Literal["internal", "internet-facing"]
IpAddressType = Literal["ipv4", "dualstack", "dualstack-without-public-ipv4"]

DEFAULT_INBOUND_CIDRS: Final = ("0.0.0.0/0",)
DEFAULT_INBOUND_CIDRS_DUALSTACK: Final = ("0.0.0.0/0", "::/0")
GRPC_HEALTH_CHECK_PATH: Final = "/AWS.ALB/healthcheck"

# The keys the parsers below read, on the Ingress or on a backend Service (`actions.*` and
# `conditions.*` stand for their families): the catalogue's acted-on Ingress keys. A key read
# here and not marked there, or marked and not read, fails a test (`annotations.recording`).
INGRESS_ANNOTATION_KEYS: Final = catalogue.INGRESS_ANNOTATION_KEYS

ProtocolVersion = Literal["HTTP1", "HTTP2", "GRPC"]
_PROTOCOLS: tuple[Protocol, ...] = ("HTTP", "HTTPS")
_VERSIONS: tuple[ProtocolVersion, ...] = ("HTTP1", "HTTP2", "GRPC")



# ---- per-Ingress values ---------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class IngressAnnotations:
    """What one Ingress says; None means "not set" (so group merging can tell)."""

    scheme: Scheme | None = None
    load_balancer_name: str | None = None
    ip_address_type: IpAddressType | None = None
    subnets: tuple[str, ...] | SubnetSelector | None = None  # a selector only from params
    security_groups: tuple[str, ...] | None = None
    load_balancer_attributes: Mapping[str, str] | None = None
    ssl_redirect: int | None = None
    inbound_cidrs: tuple[str, ...] | None = None
    prefix_lists: tuple[str, ...] | None = None
    manage_backend_rules: bool | None = None
    ssl_policy: str | None = None
    listen_ports: tuple[ListenPort, ...] | None = None
    certificate_arns: tuple[str, ...] = ()
    # create-acm-cert / acm-pca-arn ("" = not set: --default-pca-arn applies).
    create_acm_cert: bool = False
    acm_pca_arn: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    actions: Mapping[str, ActionSpec] = field(default_factory=dict)
    conditions: Mapping[str, tuple[ConditionSpec, ...]] = field(default_factory=dict)
    # Read on the Ingress only, as upstream does; every rule of this Ingress validates JWTs.
    jwt_validation: JwtValidationConfig | None = None
    # Listen port → mutual TLS (None: the annotation is not set).
    mutual_authentication: Mapping[int, MutualAuthentication] | None = None
    # `<PROTOCOL>-<port>` (as the key names it) → listener attributes.
    listener_attributes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    transforms: Mapping[str, tuple[TransformSpec, ...]] = field(default_factory=dict)
    # ImplementationSpecific paths are regular expressions (upstream's default: wildcards).
    use_regex_path_match: bool = False
    # minimum-load-balancer-capacity as written: read for the group under the
    # LBCapacityReservation gate (`validators.minimum_capacity`), as upstream parses it only then.
    minimum_capacity: str | None = None
    # ipam-ipv4-pool-id (None: not set or empty) and customer-owned-ipv4-pool.
    ipam_pool: str | None = None
    customer_owned_pool: str | None = None
    # One line per JSON value with fields upstream's decoder ignores (so do we): a Warning.
    ignored_fields: tuple[tuple[str, str], ...] = ()  # (key, message)


# Exclusive: set on one member, or the same value on all (upstream's group merge rule).
EXCLUSIVE_FIELDS: Final = (
    ("scheme", "scheme"), ("load_balancer_name", "load-balancer-name"),
    ("ip_address_type", "ip-address-type"), ("subnets", "subnets"),
    ("security_groups", "security-groups"),
    ("load_balancer_attributes", "load-balancer-attributes"),
    ("ssl_redirect", "ssl-redirect"), ("inbound_cidrs", "inbound-cidrs"),
    ("prefix_lists", "security-group-prefix-lists"),
    ("manage_backend_rules", "manage-backend-security-group-rules"),
    ("ssl_policy", "ssl-policy"),
)












def _listen_ports(key: str, raw: str) -> tuple[ListenPort, ...]:
    entries = parse_json(key, raw, list[dict[str, int]])
    ports: list[ListenPort] = []
    for entry in entries:
        if len(entry) != 1:
            raise AnnotationError(key, raw, 'has an entry that is not one {"PROTOCOL": port}')
        ((protocol, port),) = entry.items()
        if protocol not in ("HTTP", "HTTPS"):
            raise AnnotationError(key, raw, f"has protocol {quote(protocol)}; want HTTP or HTTPS")
        if not 1 <= port <= 65535:
            raise AnnotationError(key, raw, f"has port {port}; want 1..65535")
        ports.append(ListenPort(protocol=protocol, port=port))  # type: ignore[arg-type]
    if not ports:
        raise AnnotationError(key, raw, "lists no port")
    return tuple(ports)


def _name_suffixed(annotations: Mapping[str, Any], stem: str) -> dict[str, tuple[str, str]]:
    """`<prefix><stem><name>` keys → {name: (full key, raw value)}."""
    start = PREFIX + stem
    note_read(start + "*")
    found: dict[str, tuple[str, str]] = {}
    for key, value in annotations.items():
        if isinstance(key, str) and key.startswith(start) and len(key) > len(start):
            if not isinstance(value, str):
                raise AnnotationError(key, None, f"is not a string (got {type(value).__name__})")
            found[key[len(start):]] = (key, value)
    return found


def parse_ingress(ing: Mapping[str, Any]) -> IngressAnnotations:
    reader = AnnotationReader.of(ing, PREFIX)
    raw = (ing.get("metadata") or {}).get("annotations") or {}
    if not isinstance(raw, Mapping):
        raw = {}
    ignored: list[tuple[str, str]] = []
    actions = _routing(raw, "actions.", ActionSpec, ignored)
    conditions = _routing(raw, "conditions.", tuple[ConditionSpec, ...], ignored)
    transforms = _routing(raw, "transforms.", tuple[TransformSpec, ...], ignored)
    listener_attributes = {
        name: parse_string_map(key, value)
        for name, (key, value) in sorted(_name_suffixed(raw, "listener-attributes.").items())}
    return IngressAnnotations(
        scheme=reader.get_enum("scheme", ("internal", "internet-facing")),
        load_balancer_name=reader.get("load-balancer-name", validators.load_balancer_name),
        ip_address_type=reader.get_enum("ip-address-type",
                                        ("ipv4", "dualstack", "dualstack-without-public-ipv4")),
        subnets=reader.get("subnets", validators.subnets),
        security_groups=reader.get("security-groups", validators.security_groups),
        load_balancer_attributes=reader.get_string_map("load-balancer-attributes"),
        ssl_redirect=reader.get_int("ssl-redirect", minimum=1, maximum=65535),
        inbound_cidrs=reader.get("inbound-cidrs", validators.cidrs),
        prefix_lists=reader.get("security-group-prefix-lists", validators.prefix_lists),
        manage_backend_rules=reader.get_bool("manage-backend-security-group-rules"),
        ssl_policy=reader.get_str("ssl-policy"),
        listen_ports=reader.get("listen-ports", _listen_ports),
        certificate_arns=reader.get("certificate-arn", validators.certificate_arns) or (),
        create_acm_cert=bool(reader.get_bool("create-acm-cert")),
        acm_pca_arn=reader.get("acm-pca-arn", validators.pca_arn) or "",
        tags=reader.get_string_map("tags") or {},
        actions=actions,
        conditions=conditions,
        jwt_validation=reader.get_json("jwt-validation", JwtValidationConfig),
        mutual_authentication=reader.get("mutual-authentication", parse_mutual_authentication),
        listener_attributes=listener_attributes,
        transforms=transforms,
        use_regex_path_match=bool(reader.get_bool("use-regex-path-match")),
        minimum_capacity=reader.get_str("minimum-load-balancer-capacity"),
        ipam_pool=reader.get("ipam-ipv4-pool-id", validators.ipam_pool),
        customer_owned_pool=reader.get("customer-owned-ipv4-pool",
                                       validators.customer_owned_pool),
        ignored_fields=tuple(ignored),
    )


def _routing(raw: Mapping[str, Any], stem: str, schema: Any,
             ignored: list[tuple[str, str]]) -> Any:
    """`<stem><name>` JSON values decoded as upstream's Go code decodes them."""
    out: dict[str, Any] = {}
    for name, (key, value) in sorted(_name_suffixed(raw, stem).items()):
        out[name], unknown = decode(key, value, schema)
        if unknown:
            ignored.append((key, f"annotation {key}: {ignored_fields_message(unknown)}"))
    return out


# ---- target group settings (backend Service first, then Ingress) ---------------------------

@dataclass(frozen=True, kw_only=True)
class TargetGroupSettings:
    target_type: Literal["instance", "ip"]
    protocol: Protocol = "HTTP"
    protocol_version: ProtocolVersion | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)
    hc_port: int | Literal["traffic-port"] = TRAFFIC_PORT
    hc_protocol: Protocol = "HTTP"
    hc_path: str = "/"
    hc_interval: int = 15
    hc_timeout: int = 5
    healthy_threshold: int = 2
    unhealthy_threshold: int = 2
    success_codes: str = "200"
    multi_cluster: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    # Instance targets: only nodes carrying these labels are registered (upstream).
    target_node_labels: Mapping[str, str] = field(default_factory=dict)






def parse_target_group(ing: Mapping[str, Any], service: Mapping[str, Any] | None, *,
                       default_target_type: Literal["instance", "ip"],
                       params_target_type: Literal["instance", "ip"] | None = None,
                       ) -> TargetGroupSettings:
    # Service annotations win over the Ingress's for target-group settings (upstream).
    reader = AnnotationReader.of(service, PREFIX, fallbacks=[ing])
    version = reader.get_enum("backend-protocol-version", _VERSIONS)
    grpc = version == "GRPC"
    protocol = reader.get_enum("backend-protocol", _PROTOCOLS) or "HTTP"
    target_type = (params_target_type or reader.get_enum("target-type", ("instance", "ip"))
                   or default_target_type)
    hc_interval = reader.get_int("healthcheck-interval-seconds", minimum=5, maximum=300)
    hc_timeout = reader.get_int("healthcheck-timeout-seconds", minimum=2, maximum=120)
    interval = 15 if hc_interval is None else hc_interval
    timeout = 5 if hc_timeout is None else hc_timeout
    if timeout >= interval:
        raise AnnotationError(PREFIX + "healthcheck-timeout-seconds", str(timeout),
                              f"must be shorter than the interval ({interval}s)")
    # multi-cluster-target-group: the Ingress first, then the Service (upstream's order).
    mc_reader = AnnotationReader.of(ing, PREFIX, fallbacks=[service])
    healthy = reader.get_int("healthy-threshold-count", minimum=2, maximum=10)
    unhealthy = reader.get_int("unhealthy-threshold-count", minimum=2, maximum=10)
    return TargetGroupSettings(
        target_type=target_type,
        protocol=protocol,
        protocol_version=version,
        attributes=reader.get_string_map("target-group-attributes") or {},
        hc_port=reader.get_int_or_traffic_port("healthcheck-port") or TRAFFIC_PORT,
        hc_protocol=reader.get_enum("healthcheck-protocol", _PROTOCOLS) or protocol,
        hc_path=reader.get("healthcheck-path", validators.health_check_path)
        or (GRPC_HEALTH_CHECK_PATH if grpc else "/"),
        hc_interval=interval,
        hc_timeout=timeout,
        healthy_threshold=2 if healthy is None else healthy,
        unhealthy_threshold=2 if unhealthy is None else unhealthy,
        success_codes=reader.get("success-codes", validators.success_codes(
            validators.ALB_GRPC_CODES if grpc else validators.ALB_HTTP_CODES))
        or ("12" if grpc else "200"),
        multi_cluster=bool(mc_reader.get_bool("multi-cluster-target-group")),
        target_node_labels=reader.get_string_map("target-node-labels") or {},
        # The backend Service's own `tags` (upstream reads them for its target groups).
        tags=AnnotationReader.of(service, PREFIX).get_string_map("tags") or {},
    )


def parse_target_control_port(ing: Mapping[str, Any], service: Mapping[str, Any] | None, *,
                              service_name: str, port: int | str) -> int | None:
    """`target-control-port.<service>.<port>` (the backend's port as the Ingress names it), the
    ALB Target Optimizer's agent port: the Service's key, else the Ingress's (upstream merges
    them so); None when neither sets it."""
    family = PREFIX + "target-control-port.*"
    note_read(family)
    key = f"{PREFIX}target-control-port.{service_name}.{port}"
    for source in (annotations_of(service), annotations_of(ing)):
        raw = source.get(key)
        if raw is None:
            continue
        note_found(source, family)
        if not isinstance(raw, str):
            raise AnnotationError(key, None, f"is not a string (got {type(raw).__name__})")
        return parse_int(key, raw, minimum=1, maximum=65535)
    return None


# ---- authentication (Service first, then Ingress) -------------------------------------------

@dataclass(frozen=True, kw_only=True)
class AuthSettings:
    """`auth-type` oidc (with `oidc`) or cognito (with `cognito`), and the shared settings."""

    oidc: OidcConfig | None = None
    cognito: CognitoConfig | None = None
    scope: str = "openid"
    session_cookie: str = "AWSELBAuthSessionCookie"
    session_timeout: int = 604800
    on_unauthenticated: Literal["authenticate", "allow", "deny"] = "authenticate"


def parse_auth(ing: Mapping[str, Any], service: Mapping[str, Any] | None) -> AuthSettings | None:
    # Each key on the Service first, then on the Ingress (upstream merges the two maps).
    reader = AnnotationReader.of(service, PREFIX, fallbacks=[ing])
    auth_type = reader.get_enum("auth-type", ("none", "oidc", "cognito"))
    if auth_type in (None, "none"):
        return None
    # Upstream parses both identity providers' annotations: a malformed one is an error
    # whichever the type names.
    oidc = reader.get_json("auth-idp-oidc", OidcConfig)
    cognito = reader.get_json("auth-idp-cognito", CognitoConfig)
    if auth_type == "oidc":
        if oidc is None:
            raise AnnotationError(PREFIX + "auth-idp-oidc", None,
                                  "is required when auth-type is oidc")
        cognito = None
    else:
        if cognito is None:
            raise AnnotationError(PREFIX + "auth-idp-cognito", None,
                                  "is required when auth-type is cognito")
        oidc = None
    timeout = reader.get_int("auth-session-timeout", minimum=1, maximum=604800)
    return AuthSettings(
        oidc=oidc,
        cognito=cognito,
        scope=reader.get_str("auth-scope") or "openid",
        session_cookie=reader.get_str("auth-session-cookie") or "AWSELBAuthSessionCookie",
        session_timeout=604800 if timeout is None else timeout,
        on_unauthenticated=reader.get_enum("auth-on-unauthenticated-request",
                                           ("authenticate", "allow", "deny")) or "authenticate",
    )


def oidc_secret_names(ing: Mapping[str, Any]) -> list[str]:
    """Secret names an Ingress's own auth-idp-oidc annotation references (never raises)."""
    try:
        oidc = AnnotationReader.of(ing, PREFIX).get_json("auth-idp-oidc", OidcConfig)
    except AnnotationError:
        return []
    return [oidc.secret_name] if oidc is not None else []
