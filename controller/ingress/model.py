"""The pure stage: an Ingress group (from the caches) → the desired ELBv2 Stack.

No AWS calls: subnets and certificates not named explicitly become `SubnetDiscovery` and
`CertificateDiscovery` placeholders for the deployer's resolve stage; security group names stay
names and the shared backend group a placeholder (the deployer resolves both). So the result,
and its checkpoint, can be computed from the informer caches at enqueue time.

Security groups (upstream's default path): without `security-groups` the group gets a managed
frontend group admitting its inbound CIDRs and prefix lists on every listen port, and the
load balancer carries it with the shared backend group; the managed bindings ask their
targets' groups to admit the backend group on the target (and health-check) ports. With
`security-groups`, the user's groups, and the backend group only when backend rules are
managed.

Rule order (upstream): members by (group.order, namespace, name); within an Ingress its rules
in order; within a rule its paths with Exact first, then Prefix by length (longest first), then
ImplementationSpecific in their written order. Redirect rules that would loop, and rules a
redirect rule before them covers, are left out (`rules.optimize`, upstream's rule optimizer).
Priorities count from 1 per listener.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import ValidationError

from controller import gates, validators
from controller.annotationreview import (
    UNKNOWN,
    UNSUPPORTED,
    Finding,
    UnsupportedAnnotation,
    check,
)
from controller.annotations import AnnotationError, annotations_of, note_read, quote
from controller.apis import INGRESS_ANNOTATION_PREFIX, controller_labels
from controller.defaults import (
    DEFAULT_INGRESS_CLASS,
    DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_ACTION,
    DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_SERVICE,
)
from controller.errors import first_line
from controller.ingress.acmcerts import RequestedCertificates
from controller.ingress.addons import AddonSettings, build_addons
from controller.ingress.annotations import IngressAnnotations, parse_ingress
from controller.ingress.backends import Backends, jwt_action, secured
from controller.ingress.caches import Caches
from controller.ingress.frontendnlb import (
    FrontendMember,
    FrontendSettings,
    build_frontend_nlb,
)
from controller.ingress.frontendnlb import enabled as frontend_nlb_enabled
from controller.ingress.frontendnlb import without_effect as frontend_nlb_without_effect
from controller.ingress.groups import Group, Member, is_explicit, stack_labels
from controller.ingress.listenersettings import listener_settings
from controller.ingress.merge import (
    BuildError,
    GroupQuotaExceeded,
    LoadBalancerConfig,
    apply_params,
    merge_load_balancer,
)
from controller.ingress.plan import DRY_RUN_PLAN
from controller.ingress.rules import optimize
from controller.ingress.schemas import ListenPort
from controller.ingress.spec import check_spec
from controller.ingress.tlssecrets import read_certificate, secret_name_problem
from controller.model import (
    Action,
    CertificateDiscovery,
    Condition,
    FixedResponseAction,
    HostHeaderCondition,
    HttpHeaderCondition,
    HttpRequestMethodCondition,
    InvalidStack,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    QueryStringCondition,
    QueryStringKeyValue,
    Quotas,
    RedirectAction,
    Ref,
    Rewrite,
    RuleTransform,
    SourceIpCondition,
    Stack,
    StackBuilder,
    StackContext,
    StackQuotaExceeded,
    SubnetDiscovery,
    check_quotas,
    describe_validation_error,
    ingress_security_group_name,
    load_balancer_name,
)
from controller.networking.frontend import (
    LoadBalancerGroups,
    add_managed_groups,
    admits_no_one,
    frontend_rules,
    load_balancer_groups,
    managed_group_room,
    unreachable_cidrs,
)
from controller.networking.settings import BackendSettings
from controller.settings import ClusterScope, StackDefaults, enhanced_default_behavior
from runtime.featuregates import FeatureGates
from runtime.objects import Obj, meta, namespace_of

# Bump when the same inputs would build a different stack (every stored checkpoint of a group
# then stops matching). 2: the deploy context and the default tags are in the stack, and OIDC
# credentials are covered by their Secret's version instead of a digest of the secret.
# 3: target group names hash upstream's default protocol version; the default action's
# fixed response is text/plain, as upstream's. 4: managed security groups and the bindings'
# networking.
BUILDER_VERSION: Final = 4
LOAD_BALANCER_ID: Final = "LoadBalancer"


@dataclass(frozen=True, kw_only=True)
class BuilderSettings:
    """Every controller setting that shapes a group's stack, and so its checkpoint."""

    cluster: ClusterScope
    ingress_class: str = DEFAULT_INGRESS_CLASS
    # --default-tags: on every resource, winning over the tags annotation (as upstream).
    defaults: StackDefaults = field(default_factory=StackDefaults)
    quotas: Quotas = field(default_factory=Quotas)
    backend_sg: BackendSettings = field(default_factory=BackendSettings)
    gates: FeatureGates = field(default_factory=FeatureGates)
    addons: AddonSettings = field(default_factory=AddonSettings)
    # --tolerate-non-existent-backend-service / -action: a missing one answers 503.
    tolerate_missing_service: bool = DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_SERVICE
    tolerate_missing_action: bool = DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_ACTION
    # --allowed-certificate-authority-arns: in the discovery placeholder, so in the checkpoint.
    allowed_certificate_authorities: frozenset[str] = frozenset()
    # --enable-secret-certificates: spec.tls[].secretName's certificates imported into ACM.
    secret_certificates: bool = False
    # EnableCertificateManagement: create-acm-cert requests certificates (--default-pca-arn:
    # the issuer when acm-pca-arn names none). Both shape the stack, so the checkpoint.
    certificate_management: bool = False
    default_pca_arn: str = ""

    @property
    def context(self) -> StackContext:
        return StackContext(cluster_name=self.cluster.name, region=self.cluster.region,
                            vpc_id=self.cluster.vpc_id,
                            external_managed_tags=tuple(self.defaults.external_managed_tags),
                            **gates.stack_context(self.gates))


@dataclass(frozen=True)
class BuiltGroup:
    stack: Stack
    load_balancer: LoadBalancerConfig
    services: frozenset[str]  # namespace/name of every backend Service read
    secrets: frozenset[str]  # namespace/name of every OIDC Secret read
    # Per member (namespace/name): the keys under our prefixes it (or a backend Service it
    # uses) carries that are not acted on, for the reconciler's Warnings and admission's.
    findings: Mapping[str, tuple[Finding, ...]] = field(default_factory=dict)
    # What builds but does not do what it says (inbound CIDRs that admit no one): a Warning
    # Event on every member when deployed, and a warning at admission.
    warnings: tuple[str, ...] = ()
    # Per member: its authentication or JWT validation that an HTTP listener forwards without
    # (upstream's HTTPS-only rule), for a Warning `AuthenticationOnHTTPSOnly` and admission.
    http_unauthenticated: Mapping[str, str] = field(default_factory=dict)
    # Per member: backends that do not exist, tolerated with a 503 rule (a Warning Event on
    # that member when deployed, and a warning at admission).
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Per member: its frontend-nlb-* keys, which do nothing while the group does not enable
    # the frontend NLB (a Warning `FrontendNLBNotEnabled`, and a warning at admission).
    frontend_nlb_unused: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _Rule:
    conditions: list[Condition]
    actions: list[Action]
    auth: Action | None
    jwt: Action | None = None
    owner: str = ""  # namespace/name of the Ingress it comes from
    transforms: list[RuleTransform] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)


def build_group(group: Group, caches: Caches, settings: BuilderSettings) -> BuiltGroup:
    """Raises BuildError (one line) for anything a user must fix."""
    try:
        return _build_group(group, caches, settings)
    except ValidationError as exc:
        # A model refused on construction (a value longer than AWS allows, say) wherever it
        # was built: one line, never a traceback.
        raise BuildError(f"group {group.request.key}: {describe_validation_error(exc)}"
                         ) from None


def _build_group(group: Group, caches: Caches, settings: BuilderSettings) -> BuiltGroup:
    if not group.members:
        raise BuildError(f"group {group.request.key} has no members")
    if group.errors:
        ing, message = group.errors[0]
        raise BuildError(f"Ingress {meta(ing).get('namespace')}/{meta(ing).get('name')}: "
                         f"{message}")
    parsed: list[tuple[Member, IngressAnnotations]] = []
    findings: dict[str, tuple[Finding, ...]] = {}
    for member in group.members:
        problem = check_spec(member.ingress)
        if problem is not None:
            raise BuildError(f"Ingress {member.key}: {problem}")
        try:
            # A key that narrows access and cannot be honoured stops the member first.
            findings[member.key] = check(annotations_of(member.ingress), where="ingress")
            note_read(DRY_RUN_PLAN)  # an output: the reconciler writes or removes it (plan.py)
            ann = parse_ingress(member.ingress)
        except (AnnotationError, UnsupportedAnnotation) as exc:
            raise BuildError(f"Ingress {member.key}: {exc}") from None
        findings[member.key] += tuple(Finding(key, UNKNOWN, message)
                                      for key, message in ann.ignored_fields)
        parsed.append((member, apply_params(ann, member.info.params if member.info else None)))
    addons = build_addons(group.members, settings.addons)
    for key, extra in addons.findings.items():
        findings[key] += extra
    lb = merge_load_balancer(parsed, default_scheme=settings.defaults.scheme,
                             default_ssl_policy=settings.defaults.ssl_policy,
                             default_tags=settings.defaults.tags,
                             external_managed_tags=settings.defaults.external_managed_tags,
                             default_tags_low_priority=gates.enabled(
                                 settings.gates, "EnableDefaultTagsLowPriority"))
    request = group.request
    builder = StackBuilder(group.stack_id, kind="ingress", context=settings.context)
    ports = _listen_ports(parsed)
    warnings: list[str] = []
    for said in dict.fromkeys(line for m in group.members if m.info and m.info.params
                              for line in m.info.params.not_acted_on()):
        warnings.append(said)
    capacity_units = _capacity_units(parsed, gates.enabled(settings.gates,
                                                           "LBCapacityReservation"),
                                     findings, warnings)
    ipam_pool = _ipam_pool(parsed)
    customer_owned_pool = _customer_owned_pool(parsed)
    groups = _security_groups(group, lb, ports, builder, settings, warnings)
    backends = Backends(builder=builder, caches=caches, cluster_name=settings.cluster.name,
                        stack_id=group.stack_id,
                        labels={**stack_labels(request),
                                **controller_labels(settings.cluster.controller_id)},
                        default_target_type=settings.defaults.target_type,
                        default_tags=settings.defaults.tags,
                        external_managed_tags=settings.defaults.external_managed_tags,
                        target_source=groups.target_source,
                        restricted_rules=settings.backend_sg.restricted_rules,
                        tolerate_missing_service=settings.tolerate_missing_service,
                        tolerate_missing_action=settings.tolerate_missing_action,
                        ip_targets=gates.enabled(settings.gates, "EnableIPTargetType"),
                        weighted_target_groups=gates.enabled(settings.gates,
                                                             "WeightedTargetGroups"))
    # Listeners carry the group's tags (members' and class parameters', `--default-tags`
    # winning), each rule its own Ingress's (upstream, with its ListenerRulesTagging gate on).
    listener_tags = dict(lb.tags)
    for member, ann in parsed:
        backends.ingress_tags[member.key] = dict(ann.tags)
    imported = _ImportedCertificates(builder, caches, listener_tags)
    requested = (RequestedCertificates(builder, default_pca_arn=settings.default_pca_arn,
                                       tags=listener_tags,
                                       authorities=settings.allowed_certificate_authorities)
                 if settings.certificate_management else None)
    first = group.members[0].ingress
    name = lb.name or load_balancer_name(
        settings.cluster.name, str(meta(first).get("namespace")), str(meta(first).get("name")),
        lb.scheme, group=request.name if is_explicit(request) else None)
    try:
        alb = LoadBalancer(
            name=name, type="application", scheme=lb.scheme, ip_address_type=lb.ip_address_type,
            subnets=lb.subnets if lb.subnets else SubnetDiscovery(
                role="elb" if lb.scheme == "internet-facing" else "internal-elb"),
            security_groups=groups.security_groups, attributes=dict(lb.attributes),
            tags=dict(lb.tags), wafv2=addons.wafv2, waf_regional=addons.waf_regional,
            shield=addons.shield, capacity_units=capacity_units, ipv4_ipam_pool=ipam_pool,
            customer_owned_ipv4_pool=customer_owned_pool)
        lb_ref = builder.add_load_balancer(LOAD_BALANCER_ID, alb)
    except ValueError as exc:
        raise BuildError(f"group {request.key}: {first_line(exc)}") from None

    per_listener = listener_settings(
        [(m, a, _ports_of(a, m.ingress)) for m, a in parsed], ports,
        enhanced_defaults=enhanced_default_behavior(settings.gates))
    warnings.extend(per_listener.warnings)
    if lb.ssl_redirect is not None and ports.get(lb.ssl_redirect) != "HTTPS":
        raise BuildError(f"group {request.key}: ssl-redirect port {lb.ssl_redirect} is not an "
                         "HTTPS listen port")
    rules: dict[int, list[_Rule]] = {port: [] for port in ports}
    default_rule: _Rule | None = None
    for member, ann in parsed:
        ing = member.ingress
        params = member.info.params if member.info else None
        spec = ing.get("spec") or {}
        if spec.get("defaultBackend"):
            if default_rule is not None:
                raise BuildError(f"group {request.key}: both {default_rule.owner} and "
                                 f"{member.key} set a default backend")
            actions, svc_name = backends.backend_actions(ing, spec["defaultBackend"],
                                                         ann.actions, params)
            # Upstream authenticates the default backend as it does a rule's.
            default_rule = _Rule([], actions, backends.auth(ing, svc_name),
                                 jwt_action(ann.jwt_validation), member.key)
        member_rules = _member_rules(member, ann, backends,
                                     {**ann.tags, **settings.defaults.tags})
        for lp in _ports_of(ann, ing):
            rules[lp.port].extend(member_rules)
    http_unauthenticated = _unsecured_http(ports, rules, lb.ssl_redirect)

    for port, protocol in sorted(ports.items()):
        redirect = protocol == "HTTP" and lb.ssl_redirect is not None
        if redirect:
            defaults: list[Action] = [RedirectAction(protocol="HTTPS", port=str(lb.ssl_redirect),
                                                     status_code="HTTP_301")]
        else:
            # Upstream's answer when no default backend is set
            # (pkg/ingress/model_build_listener.go).
            defaults = [FixedResponseAction(status_code="404", content_type="text/plain")]
            if default_rule is not None:
                defaults = default_rule.actions if protocol != "HTTPS" else secured(
                    default_rule.actions, default_rule.auth, default_rule.jwt,
                    owner=default_rule.owner)
        certificates: Sequence[str | Ref] | CertificateDiscovery = ()
        if protocol == "HTTPS":
            certificates = _certificates(
                port, parsed, authorities=settings.allowed_certificate_authorities,
                imported=imported if settings.secret_certificates else None,
                requested=requested)
        try:
            listener_ref = builder.add_listener(str(port), Listener(
                load_balancer_arn=lb_ref, port=port, protocol=protocol,
                certificates=certificates,
                ssl_policy=lb.ssl_policy if protocol == "HTTPS" else None,
                mutual_authentication=per_listener.mutual_authentication.get(port),
                attributes=dict(per_listener.attributes.get(port) or {}),
                default_actions=defaults, tags=listener_tags))
        except ValueError as exc:
            raise BuildError(f"group {request.key}: listener {port}: {first_line(exc)}") from None
        if redirect:
            continue  # every HTTP request is redirected: rules there would never match
        for priority, rule in enumerate(optimize(port, protocol, rules[port]), start=1):
            actions = rule.actions
            if protocol == "HTTPS":
                actions = secured(actions, rule.auth, rule.jwt, owner=rule.owner)
            try:
                builder.add_rule(f"{port}:{priority}", ListenerRule(
                    listener_arn=listener_ref, priority=priority, conditions=rule.conditions,
                    actions=actions, transforms=rule.transforms, tags=rule.tags))
            except ValueError as exc:
                raise BuildError(f"group {request.key}: rule {priority} on port {port}: "
                                 f"{first_line(exc)}") from None
    keyed = [(m.key, m.ingress) for m in group.members]
    frontend_unused: dict[str, str] = {}
    if not frontend_nlb_enabled(keyed):
        frontend_unused = frontend_nlb_without_effect(keyed)
    else:
        build_frontend_nlb(
            builder, [FrontendMember(key=m.key, ingress=m.ingress,
                                     alb_ports=tuple(lp.port for lp in _ports_of(a, m.ingress)))
                      for m, a in parsed],
            alb_id=LOAD_BALANCER_ID, alb=alb, settings=FrontendSettings(
                cluster_name=settings.cluster.name, group_id=group.stack_id,
                explicit=is_explicit(request), default_scheme=settings.defaults.scheme,
                default_tags=settings.defaults.tags))
    for member in group.members:
        findings[member.key] += _backend_findings(member, backends, caches)
    try:
        stack = builder.build()
        check_quotas(stack, settings.quotas)
    except StackQuotaExceeded as exc:
        raise GroupQuotaExceeded(f"group {request.key}: {exc}", exc.exceeded) from None
    except InvalidStack as exc:
        raise BuildError(f"group {request.key}: {exc}") from None
    return BuiltGroup(stack, lb, frozenset(backends.services),
                      frozenset(backends.secrets | imported.secrets),
                      findings, tuple(warnings), http_unauthenticated,
                      {k: tuple(v) for k, v in sorted(backends.missing.items())},
                      frontend_unused)


CAPACITY_KEY: Final = INGRESS_ANNOTATION_PREFIX + "minimum-load-balancer-capacity"
_CAPACITY_GATE_OFF: Final = "is not acted on (--feature-gates LBCapacityReservation=false)"


def _capacity_units(parsed: Sequence[tuple[Member, IngressAnnotations]], enabled: bool,
                    findings: dict[str, tuple[Finding, ...]], warnings: list[str]
                    ) -> int | None:
    """The group's capacity reservation (upstream's rule): the first member's
    IngressClassParams `minimumLoadBalancerCapacity` wins; else the members' annotation,
    which must agree. None: nobody asks (what AWS has stays). With the LBCapacityReservation
    gate off neither is read, as upstream, and each is reported instead."""
    params = parsed[0][0].info.params if parsed and parsed[0][0].info else None
    from_params = params.minimum_load_balancer_capacity if params is not None else None
    if not enabled:
        if from_params is not None and params is not None:
            warnings.append(f"IngressClassParams {params.name}: spec.minimumLoadBalancerCapacity "
                            f"{_CAPACITY_GATE_OFF}; it is ignored")
        for member, ann in parsed:
            if ann.minimum_capacity is not None:
                findings[member.key] += (Finding(
                    CAPACITY_KEY, UNSUPPORTED,
                    f"annotation {CAPACITY_KEY} {_CAPACITY_GATE_OFF}; it is ignored"),)
        return None
    if from_params is not None:
        return from_params.capacity_units
    chosen: int | None = None
    owner = ""
    for member, ann in parsed:
        if ann.minimum_capacity is None:
            continue
        try:
            units = validators.minimum_capacity(CAPACITY_KEY, ann.minimum_capacity)
        except AnnotationError as exc:
            raise BuildError(f"Ingress {member.key}: {exc}") from None
        if units is None:
            continue
        if chosen is not None and units != chosen:
            raise BuildError(
                f"annotation {CAPACITY_KEY} conflicts within the group: {owner} has "
                f"{quote(f'CapacityUnits={chosen}')}, {member.key} has "
                f"{quote(f'CapacityUnits={units}')}")
        chosen, owner = units, owner or member.key
    return chosen


def _ipam_pool(parsed: Sequence[tuple[Member, IngressAnnotations]]) -> str | None:
    """The group's IPv4 IPAM pool (upstream's rule): the first member's IngressClassParams
    `ipamConfiguration.ipv4IPAMPoolId` wins; else the members' `ipam-ipv4-pool-id`, which must
    agree. None: no pool (one the ALB has is removed)."""
    params = parsed[0][0].info.params if parsed and parsed[0][0].info else None
    if params is not None and params.ipam_configuration is not None \
            and params.ipam_configuration.ipv4_ipam_pool_id:
        return params.ipam_configuration.ipv4_ipam_pool_id
    return _agreed(parsed, "ipam_pool", "ipam-ipv4-pool-id")


def _customer_owned_pool(parsed: Sequence[tuple[Member, IngressAnnotations]]) -> str | None:
    """`customer-owned-ipv4-pool`, set once or the same on every member (upstream)."""
    return _agreed(parsed, "customer_owned_pool", "customer-owned-ipv4-pool")


def _agreed(parsed: Sequence[tuple[Member, IngressAnnotations]], attr: str,
            suffix: str) -> str | None:
    chosen: str | None = None
    owner = ""
    for member, ann in parsed:
        value = getattr(ann, attr)
        if value is None:
            continue
        if chosen is not None and value != chosen:
            raise BuildError(f"annotation {INGRESS_ANNOTATION_PREFIX}{suffix} conflicts within "
                             f"the group: {owner} has {quote(chosen)}, {member.key} has "
                             f"{quote(value)}")
        chosen, owner = value, owner or member.key
    return chosen


def _backend_findings(member: Member, backends: Backends, caches: Caches
                      ) -> tuple[Finding, ...]:
    """The `alb.ingress.kubernetes.io/` keys of the Services a member's rules read, as
    upstream reads them there (target-group and authentication settings)."""
    found: list[Finding] = []
    for key in sorted(backends.used.get(member.key, ())):
        svc = caches.services.get(key)
        try:
            found.extend(Finding(f.key, f.reason, f"backend Service {key}: {f.message}")
                         for f in check(annotations_of(svc), where="backend"))
        except UnsupportedAnnotation as exc:
            raise BuildError(f"Ingress {member.key}: backend Service {key}: {exc}") from None
    return tuple(found)


def _security_groups(group: Group, lb: LoadBalancerConfig,
                     ports: Mapping[int, Literal["HTTP", "HTTPS"]], builder: StackBuilder,
                     settings: BuilderSettings, warnings: list[str]) -> LoadBalancerGroups:
    """The managed frontend group (when no groups are given), and the groups the load
    balancer carries; inbound CIDRs that admit no one are named in `warnings`."""
    request = group.request
    manage = (settings.backend_sg.manage_rules_default if lb.manage_backend_rules is None
              else lb.manage_backend_rules)
    managed = None
    if not lb.security_groups:
        first = group.members[0].ingress
        # IPv6 sources only reach a dualstack load balancer (upstream drops them otherwise,
        # silently; here a Warning names them).
        unreachable = unreachable_cidrs(lb.inbound_cidrs, ip_address_type=lb.ip_address_type)
        cidrs = [c for c in lb.inbound_cidrs if c not in unreachable]
        if unreachable:
            warnings.append(f"group {request.key}: " + admits_no_one(
                unreachable, what="inbound CIDRs (inbound-cidrs or IngressClassParams "
                "inboundCIDRs)", ip_address_type=lb.ip_address_type,
                left=bool(cidrs or lb.prefix_lists)))
        try:
            managed = add_managed_groups(
                builder, frontend_rules(((p, port) for port, p in sorted(ports.items())),
                                        cidrs=cidrs, prefix_lists=lb.prefix_lists),
                name=ingress_security_group_name(
                    settings.cluster.name, str(meta(first).get("namespace")),
                    str(meta(first).get("name")),
                    group=request.name if is_explicit(request) else None),
                tags=lb.tags, quota=settings.backend_sg.rules_per_group,
                max_groups=managed_group_room(
                    settings.backend_sg, security_groups_per_load_balancer=(
                        settings.quotas.security_groups_per_load_balancer)))
        except ValueError as exc:
            raise BuildError(f"group {request.key}: {first_line(exc)}") from None
    try:
        return load_balancer_groups(managed=managed, user_groups=lb.security_groups,
                                    manage_backend_rules=manage, backend=settings.backend_sg,
                                    where=f"group {request.key}")
    except ValueError as exc:
        raise BuildError(str(exc)) from None


def _has_tls(ing: Obj) -> bool:
    return bool((ing.get("spec") or {}).get("tls"))


def _ports_of(ann: IngressAnnotations, ing: Obj) -> tuple[ListenPort, ...]:
    if ann.listen_ports is not None:
        return ann.listen_ports
    if ann.certificate_arns or _has_tls(ing):
        return (ListenPort(protocol="HTTPS", port=443),)
    return (ListenPort(protocol="HTTP", port=80),)


def _listen_ports(parsed: Sequence[tuple[Member, IngressAnnotations]]
                  ) -> dict[int, Literal["HTTP", "HTTPS"]]:
    ports: dict[int, Literal["HTTP", "HTTPS"]] = {}
    owners: dict[int, str] = {}
    for member, ann in parsed:
        for lp in _ports_of(ann, member.ingress):
            if lp.port in ports and ports[lp.port] != lp.protocol:
                raise BuildError(f"listen port {lp.port} is {ports[lp.port]} on "
                                 f"{owners[lp.port]} but {lp.protocol} on {member.key}")
            ports[lp.port] = lp.protocol
            owners.setdefault(lp.port, member.key)
    return ports


class _ImportedCertificates:
    """The certificates of `spec.tls[].secretName` Secrets a group's listeners use, each added
    to the stack once (resource id: the Secret's namespace/name)."""

    def __init__(self, builder: StackBuilder, caches: Caches, tags: dict[str, str]) -> None:
        self._builder = builder
        self._caches = caches
        self._tags = tags
        self._refs: dict[str, Ref] = {}
        self.secrets: set[str] = set()

    def ref(self, member: Member, secret_name: str) -> Ref:
        key = f"{namespace_of(member.ingress)}/{secret_name}"
        if key not in self._refs:
            secret_name_problem(secret_name, where=f"Ingress {member.key}")
            self.secrets.add(key)
            cert = read_certificate(self._caches.secrets.get(key), key,
                                    where=f"Ingress {member.key}")
            self._refs[key] = self._builder.add_certificate(
                key, cert.model_copy(update={"tags": dict(self._tags)}))
        return self._refs[key]


def _certificates(port: int, parsed: Sequence[tuple[Member, IngressAnnotations]], *,
                  authorities: frozenset[str] = frozenset(),
                  imported: _ImportedCertificates | None = None,
                  requested: RequestedCertificates | None = None
                  ) -> Sequence[str | Ref] | CertificateDiscovery:
    arns: list[str | Ref] = []
    hosts: list[str] = []
    secrets: list[tuple[Member, str]] = []
    for member, ann in parsed:
        if not any(lp.port == port for lp in _ports_of(ann, member.ingress)):
            continue
        arns.extend(a for a in ann.certificate_arns if a not in arns)
        if requested is not None and ann.create_acm_cert and not ann.certificate_arns:
            # Upstream: the member's own certificate, unless it names one (certificate-arn or
            # the class's certificateArn win).
            arns.append(requested.ref(member, ann))
            continue
        spec = member.ingress.get("spec") or {}
        for tls in spec.get("tls") or []:
            name = (tls or {}).get("secretName") if imported is not None else None
            if isinstance(name, str) and name:
                secrets.append((member, name))
                continue
            hosts.extend(h for h in (tls or {}).get("hosts") or [] if isinstance(h, str))
        if not spec.get("tls"):
            hosts.extend(str(r["host"]) for r in spec.get("rules") or []
                         if isinstance(r, dict) and r.get("host"))
    if arns:
        # Named (and requested) certificates win, as upstream's certificate-arn wins over
        # everything else.
        return arns
    if secrets and imported is not None:
        if hosts:
            raise BuildError(
                f"HTTPS listener on port {port}: some TLS sections name a secretName and "
                f"others do not (hosts {', '.join(sorted(set(hosts)))}); give every TLS "
                "section of the listener's members a secretName, or set certificate-arn")
        return [imported.ref(member, name) for member, name in secrets]
    if hosts:
        return CertificateDiscovery(hosts=hosts, authorities=sorted(authorities),
                                    skip_imported_from_secrets=(imported is not None
                                                                or requested is not None))
    raise BuildError(f"HTTPS listener on port {port} has no certificate: set the "
                     "certificate-arn annotation or TLS hosts")


_PATH_RANK = {"Exact": 0, "Prefix": 1}


def sort_paths(paths: Sequence[Any]) -> list[Any]:
    """Exact first, then Prefix longest first, then the rest in written order (stable)."""
    def key(item: tuple[int, Any]) -> tuple[int, int, int]:
        index, path = item
        kind = path.get("pathType") if isinstance(path, dict) else None
        rank = _PATH_RANK.get(str(kind), 2)
        length = -len(str(path.get("path") or "")) if rank == 1 else 0
        return rank, length, index

    return [p for _, p in sorted(enumerate(paths), key=key)]


def path_values(path: str, path_type: str | None) -> list[str]:
    if not path:
        return []
    if path_type == "Exact":
        return [path]
    if path_type == "Prefix":
        trimmed = path.rstrip("/")
        return ["/*"] if not trimmed else [trimmed, trimmed + "/*"]
    return [path]


def _member_rules(member: Member, ann: IngressAnnotations, backends: Backends,
                  tags: Mapping[str, str]) -> list[_Rule]:
    ing = member.ingress
    params = member.info.params if member.info else None
    result: list[_Rule] = []
    for rule in (ing.get("spec") or {}).get("rules") or []:
        if not isinstance(rule, dict):
            continue
        host = rule.get("host")
        paths = ((rule.get("http") or {}).get("paths")) or []
        for path in sort_paths(paths):
            actions, svc_name = backends.backend_actions(ing, path.get("backend"), ann.actions,
                                                         params)
            conditions = _rule_conditions(member, ann, str(host or ""), path, svc_name)
            result.append(_Rule(conditions, actions, backends.auth(ing, svc_name),
                                jwt_action(ann.jwt_validation), member.key,
                                _transforms(member, ann, svc_name), dict(tags)))
    return result


def _unsecured_http(ports: Mapping[int, str], rules: Mapping[int, list[_Rule]],
                    ssl_redirect: int | None) -> dict[str, str]:
    """Upstream authenticates and validates JWTs on HTTPS listeners only: the same rule on an
    HTTP listener (not redirected to HTTPS) forwards without either. Said, not refused."""
    if ssl_redirect is not None:
        return {}
    found: dict[str, list[int]] = {}
    for port, protocol in sorted(ports.items()):
        if protocol != "HTTP":
            continue
        for rule in rules[port]:
            secured_rule = rule.auth is not None or rule.jwt is not None
            ports_of = found.setdefault(rule.owner, []) if secured_rule else None
            if ports_of is not None and port not in ports_of:
                ports_of.append(port)
    return {owner: f"Ingress {owner}: authentication and JWT validation apply on HTTPS "
                   f"listeners only; HTTP port {', '.join(map(str, found[owner]))} forwards "
                   "without them (set ssl-redirect)" for owner in sorted(found)}


def _transforms(member: Member, ann: IngressAnnotations,
                svc_name: str | None) -> list[RuleTransform]:
    """`transforms.<service>`, as upstream reads it for the path's backend."""
    specs = ann.transforms.get(svc_name or "", ()) if svc_name is not None else ()
    out: list[RuleTransform] = []
    for spec in specs:
        config = spec.url_rewrite if spec.type == "url-rewrite" else spec.host_header_rewrite
        assert config is not None  # TransformSpec checked it
        out.append(RuleTransform(type=spec.type, rewrites=[
            Rewrite(regex=r.regex, replace=r.replace) for r in config.rewrites]))
    if len({t.type for t in out}) != len(out):
        raise BuildError(f"Ingress {member.key}: transforms.{svc_name}: a rule takes one "
                         "host-header-rewrite and one url-rewrite transform at most")
    return out


def _rule_conditions(member: Member, ann: IngressAnnotations, host: str, path: Any,
                     svc_name: str | None) -> list[Condition]:
    """Upstream's `buildRuleConditions`: the rule's host and the path's patterns joined with
    the `conditions.<service>` annotation's host-header and path-pattern values into one
    condition each (wildcards or regular expressions, never both), the other fields as
    given, `/*` when nothing else matches."""
    hosts: list[str] = [host] if host else []
    host_regexes: list[str] = []
    paths: list[str] = []
    path_regexes: list[str] = []
    raw_path = str(path.get("path") or "")
    path_type = path.get("pathType")
    if path_type not in (None, "Exact", "Prefix", "ImplementationSpecific"):
        raise BuildError(f"Ingress {member.key}: unknown pathType {path_type!r} for path "
                         f"{raw_path[:200]!r}")
    if path_type in ("Exact", "Prefix") and raw_path != "/" and any(c in raw_path for c in "*?"):
        # AWS would read them as wildcards, which Exact and Prefix paths are not (upstream).
        raise BuildError(f"Ingress {member.key}: {str(path_type).lower()} path "
                         f"{raw_path[:200]!r} must not contain the wildcards * or ?")
    if raw_path:
        if path_type in (None, "ImplementationSpecific") and ann.use_regex_path_match:
            # Kubernetes wants paths to start with `/`, a regular expression does not.
            path_regexes.append(raw_path[1:])
        else:
            paths.extend(path_values(raw_path, path.get("pathType")))
    out: list[Condition] = []
    where = f"Ingress {member.key}" + (
        f": conditions.{svc_name}" if svc_name is not None and svc_name in ann.conditions
        else "")
    try:
        for spec in ann.conditions.get(svc_name or "", ()) if svc_name is not None else ():
            if spec.field == "host-header":
                config = spec.host_header
                hosts.extend(config.values if config else spec.values or ())
                host_regexes.extend(config.regex_values if config else ())
            elif spec.field == "path-pattern":
                config = spec.path_pattern
                paths.extend(config.values if config else spec.values or ())
                path_regexes.extend(config.regex_values if config else ())
            elif spec.field == "http-header" and spec.http_header is not None:
                out.append(HttpHeaderCondition(header_name=spec.http_header.http_header_name,
                                               values=spec.http_header.values,
                                               regex_values=spec.http_header.regex_values))
            elif spec.field == "query-string" and spec.query_string is not None:
                out.append(QueryStringCondition(values=[
                    QueryStringKeyValue(key=kv.key, value=kv.value)
                    for kv in spec.query_string.values]))
            elif spec.field == "source-ip" and spec.source_ip is not None:
                out.append(SourceIpCondition(values=spec.source_ip.values))
            elif spec.field == "http-request-method" and spec.http_request_method is not None:
                out.append(HttpRequestMethodCondition(values=spec.http_request_method.values))
        # Upstream checks this before AWS would refuse it with a message hard to trace back.
        if hosts and host_regexes:
            raise BuildError(f"Ingress {member.key}: the host condition must use exactly one "
                             "of values and regexValues, got both")
        if paths and path_regexes:
            raise BuildError(f"Ingress {member.key}: the path condition must use exactly one "
                             "of values and regexValues, got both (use-regex-path-match "
                             "makes ImplementationSpecific paths regular expressions)")
        if hosts or host_regexes:
            out.append(HostHeaderCondition(values=hosts, regex_values=host_regexes))
        if paths or path_regexes:
            out.append(PathPatternCondition(values=paths, regex_values=path_regexes))
    except ValueError as exc:
        raise BuildError(f"{where}: {first_line(exc)}") from None
    if not out:
        out.append(PathPatternCondition(values=["/*"]))
    return out
