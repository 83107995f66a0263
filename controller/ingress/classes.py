"""Which Ingresses this controller owns, and the IngressClassParams that apply to them.

Upstream's rules (`pkg/ingress/group_loader.go`, `class_loader.go`):
1. The legacy `kubernetes.io/ingress.class` annotation, when present, decides alone: it must
   equal `--ingress-class` (or be `alb` when that flag is empty). Unlike upstream, when an
   IngressClass of that name exists with our controller, its IngressClassParams apply just as
   through `spec.ingressClassName`: the annotation is no way around an administrator's
   namespaceSelector or enforced group.
2. Else `spec.ingressClassName` names an IngressClass whose `spec.controller` must be
   `ingress.k8s.aws/alb` (a controller with `--controller-id <id>`: `ingress.k8s.aws/alb-<id>`,
   so that several controllers of one cluster each serve their own classes, and the default
   one never another's); a class that does not exist (yet) means "not ours".
3. Else the IngressClass annotated `ingressclass.kubernetes.io/is-default-class: "true"`
   applies, if there is one with our controller.
4. Else (no class at all) the Ingress is ours only when `--ingress-class` is empty.
A class's `spec.parameters` must reference an existing cluster-scoped IngressClassParams; its
`namespaceSelector` must select the Ingress's namespace. Those are errors on the Ingress.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller import validators
from controller.annotations import AnnotationError, note_read, parse_int, quote
from controller.apis import (
    ALB_CONTROLLER,
    DEFAULT_CLASS_ANNOTATION,
    INGRESSCLASSPARAMS,
    LEGACY_CLASS_ANNOTATION,
    LabelSelector,
)
from controller.errors import InvalidInput, MissingReference
from controller.ingress.caches import Caches
from controller.model.addons import wafv2_arn_problem, wafv2_name_problem
from controller.model.loadbalancer import MAX_CAPACITY_UNITS
from runtime.objects import Obj, annotations_of, dig, labels_of, meta


class ClassError(InvalidInput):
    """The Ingress is ours but its class cannot be used; the message is shown as is."""

    condition_reason = "InvalidIngressClass"


class MissingParams(ClassError, MissingReference):
    """The IngressClassParams a class references does not exist (yet)."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class _KeyValue(_Spec):
    key: str
    value: str


class _Group(_Spec):
    name: str


class _Subnets(_Spec):
    ids: tuple[str, ...] = ()
    tags: dict[str, tuple[str, ...]] = Field(default_factory=dict)


class _Listener(_Spec):
    protocol: Literal["HTTP", "HTTPS"]
    port: int = Field(ge=1, le=65535)
    listener_attributes: tuple[_KeyValue, ...] = Field(default=(), alias="listenerAttributes")


class _Capacity(_Spec):
    # ModifyCapacityReservation's CapacityUnits (an int32); 0 resets the reservation.
    capacity_units: int = Field(alias="capacityUnits", ge=0, le=MAX_CAPACITY_UNITS)


class _Ipam(_Spec):
    ipv4_ipam_pool_id: str | None = Field(default=None, alias="ipv4IPAMPoolId")


# Upstream's spec fields ClassParams keeps only to report them (not acted on yet).
NOT_ACTED_ON_FIELDS: Final[frozenset[str]] = frozenset()


class ClassParams(_Spec):
    """IngressClassParams spec: values an administrator enforces; they override annotations."""

    name: str = ""
    namespace_selector: LabelSelector | None = Field(default=None, alias="namespaceSelector")
    group: _Group | None = None
    scheme: Literal["internal", "internet-facing"] | None = None
    inbound_cidrs: tuple[str, ...] | None = Field(default=None, alias="inboundCIDRs")
    prefix_lists_ids: tuple[str, ...] | None = Field(default=None, alias="prefixListsIDs")
    # Upstream's legacy spelling, read when the field above is not set (as upstream does).
    prefix_lists_ids_legacy: tuple[str, ...] | None = Field(default=None,
                                                            alias="PrefixListsIDs")
    ssl_policy: str | None = Field(default=None, alias="sslPolicy")
    subnets: _Subnets | None = None
    ip_address_type: Literal["ipv4", "dualstack", "dualstack-without-public-ipv4"] | None = (
        Field(default=None, alias="ipAddressType"))
    tags: tuple[_KeyValue, ...] = ()
    load_balancer_attributes: tuple[_KeyValue, ...] = Field(default=(),
                                                            alias="loadBalancerAttributes")
    certificate_arn: tuple[str, ...] = Field(default=(), alias="certificateArn")
    load_balancer_name: str | None = Field(default=None, alias="loadBalancerName")
    target_type: Literal["instance", "ip"] | None = Field(default=None, alias="targetType")
    ssl_redirect_port: str | None = Field(default=None, alias="sslRedirectPort")
    listeners: tuple[_Listener, ...] = ()
    # The capacity reservation of the class's load balancers, over the Ingresses' annotation.
    minimum_load_balancer_capacity: _Capacity | None = Field(
        default=None, alias="minimumLoadBalancerCapacity")
    # The IPv4 IPAM pool of the class's load balancers, over the Ingresses' annotation.
    ipam_configuration: _Ipam | None = Field(default=None, alias="ipamConfiguration")

    @property
    def prefix_lists(self) -> tuple[str, ...] | None:
        """prefixListsIDs, else upstream's legacy PrefixListsIDs (None: neither set)."""
        return (self.prefix_lists_ids if self.prefix_lists_ids is not None
                else self.prefix_lists_ids_legacy)

    def not_acted_on(self) -> list[str]:
        """One line per set field aiolbc does not act on."""
        found: list[tuple[str, str]] = []  # every upstream field is acted on today
        return [f"IngressClassParams {self.name}: spec.{f} is not acted on (aiolbc does not "
                f"support {what}); it is ignored" for f, what in found]

    @property
    def ssl_redirect(self) -> int | None:
        """sslRedirectPort as a port (parse_params refused anything else)."""
        return int(self.ssl_redirect_port) if self.ssl_redirect_port else None

    def listener_attributes(self, protocol: str, port: int) -> dict[str, str] | None:
        """The attributes `listeners[]` gives the listener on `port` (None: not listed)."""
        for listener in self.listeners:
            if listener.protocol == protocol and listener.port == port:
                return {kv.key: kv.value for kv in listener.listener_attributes}
        return None
    # Empty is not set (upstream compares with ""); `none` asks for no web ACL.
    wafv2_acl_arn: str = Field(default="", alias="wafv2AclArn")
    wafv2_acl_name: str = Field(default="", alias="wafv2AclName")

    @property
    def group_name(self) -> str | None:
        return self.group.name if self.group is not None and self.group.name else None

    def tag_map(self) -> dict[str, str]:
        return {kv.key: kv.value for kv in self.tags}

    def attribute_map(self) -> dict[str, str]:
        return {kv.key: kv.value for kv in self.load_balancer_attributes}


@dataclass(frozen=True, slots=True)
class IngressClassInfo:
    """Ours, through this IngressClass (None: legacy annotation or no class) and params."""

    class_name: str | None
    params: ClassParams | None


def parse_params(obj: Obj) -> ClassParams:
    name = str(meta(obj).get("name") or "")
    spec = obj.get("spec")
    try:
        params = ClassParams.model_validate({**(spec if isinstance(spec, dict) else {}),
                                             "name": name})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ClassError(f"IngressClassParams {name}: spec.{where}: {first.get('msg')}") from None
    # The same rule for an AWS field as the annotation carrying it.
    checks: list[tuple[str, str, Callable[[str, str], object]]] = []
    if params.load_balancer_name:
        checks.append(("loadBalancerName", params.load_balancer_name,
                       validators.load_balancer_name))
    if params.certificate_arn:
        checks.append(("certificateArn", ",".join(params.certificate_arn),
                       validators.certificate_arns))
    if params.inbound_cidrs is not None:
        checks.append(("inboundCIDRs", ",".join(params.inbound_cidrs), validators.cidrs))
    if params.prefix_lists_ids is not None and params.prefix_lists_ids_legacy is not None:
        raise ClassError(f"IngressClassParams {name}: cannot specify both 'prefixListsIDs' and "
                         "'PrefixListsIDs' fields")
    if params.prefix_lists is not None:
        checks.append(("prefixListsIDs" if params.prefix_lists_ids is not None
                       else "PrefixListsIDs", ",".join(params.prefix_lists),
                       validators.prefix_lists))
    pool = params.ipam_configuration.ipv4_ipam_pool_id if params.ipam_configuration else None
    if pool:
        checks.append(("ipamConfiguration.ipv4IPAMPoolId", pool, validators.ipam_pool))
    if params.subnets is not None and params.subnets.ids:
        checks.append(("subnets.ids", ",".join(params.subnets.ids), validators.subnets))
    if params.ssl_redirect_port:
        checks.append(("sslRedirectPort", params.ssl_redirect_port, _ssl_redirect_port))
    seen: set[tuple[str, int]] = set()
    for listener in params.listeners:
        if (listener.protocol, listener.port) in seen:
            raise ClassError(f"IngressClassParams {name}: spec.listeners: "
                             f"{listener.protocol}-{listener.port} is listed twice")
        seen.add((listener.protocol, listener.port))
    for field_name, raw, problem in (("wafv2AclArn", params.wafv2_acl_arn, wafv2_arn_problem),
                                     ("wafv2AclName", params.wafv2_acl_name, wafv2_name_problem)):
        reason = problem(raw) if raw and raw != "none" else None
        if reason is not None:
            raise ClassError(f"IngressClassParams {name}: spec.{field_name}: {quote(raw)} "
                             f"{reason}")
    for field_name, raw, check in checks:
        try:
            check(f"spec.{field_name}", raw)
        except AnnotationError as exc:
            raise ClassError(f"IngressClassParams {name}: spec.{field_name}: "
                             f"{quote(raw)} {exc.reason}") from None
    return params


def annotation_matches(value: str, ingress_class: str) -> bool:
    return value == (ingress_class or "alb")


def class_name_of(ing: Obj) -> str | None:
    """The class an Ingress names: the legacy annotation first, then spec.ingressClassName."""
    legacy = annotations_of(ing).get(LEGACY_CLASS_ANNOTATION)
    if isinstance(legacy, str):
        return legacy
    name = dig(ing, "spec", "ingressClassName")
    return name if isinstance(name, str) and name else None


def _default_class(classes: Sequence[Obj]) -> Obj | None:
    defaults = sorted(
        (c for c in classes
         if annotations_of(c).get(DEFAULT_CLASS_ANNOTATION) == "true"),
        key=lambda c: str(meta(c).get("name")))
    return defaults[0] if defaults else None


def served_controller(controller_id: str) -> str:
    """The IngressClass `spec.controller` of the classes a controller serves."""
    return f"{ALB_CONTROLLER}-{controller_id}" if controller_id else ALB_CONTROLLER


def served_elsewhere(ing: Obj, caches: Caches, *, controller: str = ALB_CONTROLLER) -> bool:
    """Whether the Ingress's class (its `spec.ingressClassName`, else its legacy annotation)
    is an IngressClass of another of the cluster's ALB controllers (`--controller-id`): what
    was made for it is that controller's to keep or delete, finalizer or not."""
    name = dig(ing, "spec", "ingressClassName")
    if not isinstance(name, str) or not name:
        name = annotations_of(ing).get(LEGACY_CLASS_ANNOTATION)
    if not isinstance(name, str) or not name:
        return False
    cls = caches.classes.get(name)
    other = dig(cls, "spec", "controller") if cls is not None else None
    return (isinstance(other, str) and other != controller
            and (other == ALB_CONTROLLER or other.startswith(f"{ALB_CONTROLLER}-")))


def classify(ing: Obj, caches: Caches, *, ingress_class: str,
             controller: str = ALB_CONTROLLER) -> IngressClassInfo | None:
    """None when another controller (or nobody) owns the Ingress; raises ClassError when it is
    ours but its class parameters cannot be used. `controller`: the `spec.controller` of the
    classes served (`served_controller`)."""

    def _is_ours(cls: Obj) -> bool:
        return bool(dig(cls, "spec", "controller") == controller)

    note_read(LEGACY_CLASS_ANNOTATION)
    legacy = annotations_of(ing).get(LEGACY_CLASS_ANNOTATION)
    if isinstance(legacy, str):
        if not annotation_matches(legacy, ingress_class):
            return None
        named = caches.classes.get(legacy)
        if named is None or not _is_ours(named):
            return IngressClassInfo(None, None)
        return IngressClassInfo(str(meta(named).get("name")), _params_of(named, ing, caches))
    name = dig(ing, "spec", "ingressClassName")
    if isinstance(name, str) and name:
        cls = caches.classes.get(name)
    else:
        cls = _default_class(caches.classes.list())
        if cls is None or not _is_ours(cls):
            return IngressClassInfo(None, None) if not ingress_class else None
    if cls is None or not _is_ours(cls):
        return None
    return IngressClassInfo(str(meta(cls).get("name")), _params_of(cls, ing, caches))


def _params_of(cls: Obj, ing: Obj, caches: Caches) -> ClassParams | None:
    ref: Any = dig(cls, "spec", "parameters")
    if not isinstance(ref, dict):
        return None
    class_name = meta(cls).get("name")
    wanted = (INGRESSCLASSPARAMS.group, INGRESSCLASSPARAMS.kind)
    if (ref.get("apiGroup"), ref.get("kind")) != wanted:
        raise ClassError(f"IngressClass {class_name}: parameters must reference an "
                         f"{INGRESSCLASSPARAMS.group} {INGRESSCLASSPARAMS.kind}")
    params_obj = caches.params.get(str(ref.get("name") or ""))
    if params_obj is None:
        raise MissingParams(f"IngressClass {class_name}: IngressClassParams {ref.get('name')} "
                            "not found")
    params = parse_params(params_obj)
    if params.namespace_selector is not None:
        namespace = str(meta(ing).get("namespace") or "")
        ns_obj = caches.namespaces.get(namespace)
        labels = labels_of(ns_obj) if ns_obj is not None else {}
        if not params.namespace_selector.matches(labels):
            raise ClassError(f"namespace {namespace} is not selected by the namespaceSelector "
                             f"of IngressClassParams {params.name}")
    return params


def _ssl_redirect_port(key: str, raw: str) -> int:
    # Upstream parses it with strconv.ParseInt and, when that fails, redirects nothing without
    # a word; here it is refused instead.
    return parse_int(key, raw, minimum=1, maximum=65535)
