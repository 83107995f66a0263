"""What aiolbc would make of each object it would serve, worked out with the controllers' own
pure stages and no AWS call: the annotation review (`controller/annotationreview.py`), the
Ingress group's settle and build as admission does them (`controller/ingress/admission.py`),
the Service's model, the IngressClassParams parser and the TargetGroupBinding spec parser and
namespace networking policy.

Every object's bytes are hostile: whatever one object makes a parser raise is that object's
line (`malformed`), and the scan goes on with the next."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

from controller.annotationreview import review
from controller.apis.names import (
    INGRESS_FINALIZER,
    INGRESS_GROUP_FINALIZER_PREFIX,
    LEGACY_CLASS_ANNOTATION,
    SERVICE_FINALIZER,
    TARGETGROUPBINDING_FINALIZER,
)
from controller.apis.targetgroupbinding import parse_spec
from controller.deploy.tags import CLUSTER_TAG
from controller.errors import InvalidInput
from controller.ingress.admission import PresumedSecrets
from controller.ingress.caches import Caches
from controller.ingress.classes import (
    NOT_ACTED_ON_FIELDS,
    ClassParams,
    IngressClassInfo,
    parse_params,
)
from controller.ingress.exclusions import GroupNamespaces, settle
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    index_keys,
    membership,
)
from controller.ingress.model import BuilderSettings, build_group
from controller.networking.backend import RESOURCE_TAG, RESOURCE_VALUE
from controller.networking.groupfacts import GroupFacts
from controller.networking.policy import BindingScope, NetworkingPolicy, group_sources, refusal
from controller.preflight.report import Category, Finding
from controller.service import build_stack, qualifies
from controller.service.annotations import served_by_upstream_only
from controller.service.model import ModelSettings
from controller.targetgroupbinding.checks import check_role_target_type, role_of
from runtime.objects import Obj, annotations_of, dig, finalizers, key_of, meta, name_of
from runtime.reconcile import Request
from runtime.store import Store

ADOPTED: Final = "adopted (by upstream's tags): its load balancer is taken over in place"
NEW: Final = "served: no load balancer deployed yet, aiolbc would create one"
# IngressClassParams fields aiolbc reads (by their name in the spec).
PARAMS_FIELDS: Final = frozenset(f.alias or name for name, f in ClassParams.model_fields.items()
                                 if name != "name") - NOT_ACTED_ON_FIELDS


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What decides which objects aiolbc would serve and how: the settings `aiolbc run` would
    have with the running upstream controller's flags."""

    ingress: BuilderSettings
    group_namespaces: GroupNamespaces
    service: ModelSettings
    networking: NetworkingPolicy


def _line(kind: str, obj: Obj | str, category: Category, message: str,
          subject: str = "") -> Finding:
    where = obj if isinstance(obj, str) else key_of(obj)
    return Finding(kind=kind, object=where, category=category, subject=subject, message=message)


def _guarded(kind: str, obj: Obj, check: Callable[[], Iterable[Finding]]) -> list[Finding]:
    """`check`'s findings, or the one line saying the object cannot be read."""
    try:
        return list(check())
    except Exception as exc:
        return [_line(kind, obj, "malformed", f"cannot be read: {type(exc).__name__}: {exc}")]


def _deployed(obj: Obj, *names: str, prefix: str = "") -> bool:
    found = finalizers(obj)
    return (any(n in found for n in names) or bool(prefix and any(f.startswith(prefix)
                                                               for f in found))
            or bool(dig(obj, "status", "loadBalancer", "ingress")))


# ---- Ingresses ----------------------------------------------------------------------------

def ingress_caches(ingresses: Sequence[Obj], services: Sequence[Obj], classes: Sequence[Obj],
                   params: Sequence[Obj], namespaces: Sequence[Obj]
                   ) -> tuple[Caches, list[Finding]]:
    """The caches the pure stage reads, and a line for each object they could not take."""
    caches = Caches(secrets=PresumedSecrets())
    caches.ingresses.add_indexer(GROUP_INDEX, index_keys)
    caches.ingresses.add_indexer(CLASS_INDEX, class_keys)
    lines: list[Finding] = []
    for kind, store, objects in (("Ingress", caches.ingresses, ingresses),
                                 ("Service", caches.services, services),
                                 ("IngressClass", caches.classes, classes),
                                 ("IngressClassParams", caches.params, params),
                                 ("Namespace", caches.namespaces, namespaces)):
        for obj in objects:
            lines.extend(_guarded(kind, obj, partial(_stored, store, obj)))
    return caches, lines


def _stored(store: Store, obj: Obj) -> list[Finding]:
    store.upsert(obj)
    return []


def ingresses(caches: Caches, scope: Scope) -> Iterator[Finding]:
    """Each Ingress aiolbc would serve: left out of its group or holding it (not honoured),
    the keys it or its backend Services carry that are not acted on, and whether its load
    balancer would be adopted."""
    settings = scope.ingress
    loader = GroupLoader(caches, ingress_class=settings.ingress_class)
    groups: dict[str, Request] = {}
    for ing in caches.ingresses.list():
        def group_of(ing: Obj = ing) -> list[Finding]:
            member = membership(ing, caches, ingress_class=settings.ingress_class)
            if member is not None:
                groups.setdefault(member.group.key, member.group)
            return []
        yield from _guarded("Ingress", ing, group_of)
    for request in groups.values():
        yield from _group(request, loader, caches, scope)


def _group(request: Request, loader: GroupLoader, caches: Caches,
           scope: Scope) -> list[Finding]:
    try:
        group = loader.load(request)
        settled = settle(group, caches=caches, policy=scope.group_namespaces,
                         build=lambda g: build_group(g, caches, scope.ingress))
    except Exception as exc:
        return [_line("IngressGroup", request.key, "malformed",
                      f"cannot be read: {type(exc).__name__}: {exc}")]
    excluded = {key_of(obj): why for obj, why in settled.group.excluded}
    lines: list[Finding] = []
    for member in group.members:
        ing, key = member.ingress, member.key
        if key in excluded:
            lines.append(_line("Ingress", ing, "not-honoured",
                               f"not served: not part of group {request.key}: {excluded[key]}"))
            continue
        if settled.group.held is not None:
            lines.append(_line("Ingress", ing, "not-honoured",
                               f"not served: group {request.key}: {settled.group.held}"))
            continue
        lines.extend(_legacy_class(member.ingress, member.info))
        built = settled.built
        for finding in built.findings.get(key, ()) if built is not None else ():
            lines.append(_line("Ingress", ing, "not-honoured", finding.message, finding.key))
        for warning in built.warnings if built is not None else ():
            lines.append(_line("Ingress", ing, "not-honoured", warning))
        deployed = _deployed(ing, INGRESS_FINALIZER, prefix=INGRESS_GROUP_FINALIZER_PREFIX)
        lines.append(_line("Ingress", ing, "adopted" if deployed else "served",
                           ADOPTED if deployed else NEW))
    return lines


def _legacy_class(ing: Obj, info: IngressClassInfo | None) -> list[Finding]:
    """Upstream applies no IngressClassParams to an Ingress chosen by the legacy class
    annotation; aiolbc applies those of the IngressClass of that name (`classes.py`)."""
    legacy = annotations_of(ing).get(LEGACY_CLASS_ANNOTATION)
    if not isinstance(legacy, str) or info is None or info.params is None:
        return []
    return [_line("Ingress", ing, "changes",
                  f"annotation {LEGACY_CLASS_ANNOTATION}: {legacy}: aiolbc applies "
                  f"IngressClassParams {info.params.name} of IngressClass {info.class_name} "
                  "to it, which upstream does not for an Ingress chosen by this annotation",
                  LEGACY_CLASS_ANNOTATION)]


def class_params(params: Sequence[Obj]) -> Iterator[Finding]:
    """Each IngressClassParams: refused by the parser (every Ingress of its classes with it),
    and the fields it sets that aiolbc does not read."""
    for obj in params:
        yield from _guarded("IngressClassParams", obj, partial(_params, obj))


def _params(obj: Obj) -> list[Finding]:
    lines = []
    try:
        parse_params(obj)
    except InvalidInput as exc:
        lines.append(_line("IngressClassParams", obj, "not-honoured",
                           f"refused, and so every Ingress of its classes: {exc}"))
    spec = obj.get("spec")
    for field in sorted(str(k) for k in (spec if isinstance(spec, dict) else {})):
        if field not in PARAMS_FIELDS:
            lines.append(_line("IngressClassParams", obj, "not-honoured",
                               f"spec.{field} is not acted on by aiolbc; it is ignored",
                               f"spec.{field}"))
    return lines


# ---- Services -----------------------------------------------------------------------------

def services(objects: Sequence[Obj], scope: Scope) -> Iterator[Finding]:
    # Weighted actions name backend Services by name: those listed are the cluster's.
    by_key = {f"{(o.get('metadata') or {}).get('namespace')}/"
              f"{(o.get('metadata') or {}).get('name')}": o for o in objects}
    for svc in objects:
        yield from _guarded("Service", svc, partial(_service, svc, scope.service, by_key.get))


def _service(svc: Obj, settings: ModelSettings,
             lookup: Callable[[str], Obj | None] | None = None) -> list[Finding]:
    if served_by_upstream_only(svc, load_balancer_class=settings.load_balancer_class,
                               load_balancer_only=settings.load_balancer_only):
        return [_line("Service", svc, "changes",
                      "upstream serves it, aiolbc would not: it is not of type LoadBalancer "
                      "and the ServiceTypeLoadBalancerOnly feature gate is on")]
    if not qualifies(svc, load_balancer_class=settings.load_balancer_class,
                     load_balancer_only=settings.load_balancer_only):
        return []
    try:
        build_stack(svc, settings=settings, services=lookup)
    except (InvalidInput, ValueError) as exc:
        return [_line("Service", svc, "not-honoured", f"not served: {exc}")]
    lines = [_line("Service", svc, "not-honoured", f.message, f.key)
             for f in review(annotations_of(svc), where="service")]
    deployed = _deployed(svc, SERVICE_FINALIZER)
    lines.append(_line("Service", svc, "adopted" if deployed else "served",
                       ADOPTED if deployed else NEW))
    return lines


# ---- Gateways ------------------------------------------------------------------------------

GATEWAY_CONTROLLERS: Final = frozenset({"gateway.k8s.aws/alb", "gateway.k8s.aws/nlb"})


def gateways(objects: Sequence[Obj], classes: Sequence[Obj]) -> Iterator[Finding]:
    """Gateways of upstream's GatewayClasses: aiolbc serves no Gateway API object."""
    upstreams = {name_of(c) for c in classes
                 if dig(c, "spec", "controllerName") in GATEWAY_CONTROLLERS}
    for gw in objects:
        if dig(gw, "spec", "gatewayClassName") in upstreams:
            yield _line("Gateway", gw, "not-honoured",
                        "not served: aiolbc does not serve the Gateway API; nothing would "
                        "reconcile it or its routes (its load balancer is left as it is)")


# ---- TargetGroupBindings ------------------------------------------------------------------

def bindings(objects: Sequence[Obj], scope: Scope) -> Iterator[Finding]:
    for tgb in objects:
        yield from _guarded("TargetGroupBinding", tgb,
                            partial(_binding, tgb, scope.networking))


def _binding(tgb: Obj, policy: NetworkingPolicy) -> list[Finding]:
    try:
        spec = parse_spec(tgb)
        role_of(spec)
        check_role_target_type(spec, spec.target_type)
    except InvalidInput as exc:
        return [_line("TargetGroupBinding", tgb, "not-honoured", f"not served: {exc}")]
    lines = []
    if spec.networking is not None:
        # Which security groups are the cluster's or its load balancers' needs AWS: taken as
        # allowed here, so only what the spec alone decides (CIDRs, ports) is reported.
        facts = {g: GroupFacts(g, policy.vpc_id, {CLUSTER_TAG: policy.cluster,
                                                   RESOURCE_TAG: RESOURCE_VALUE})
                 for g in group_sources(spec.networking)}
        why = refusal(spec.networking, scope=BindingScope(namespace=str(
            meta(tgb).get("namespace") or "")), policy=policy, facts=facts)
        if why is not None:
            lines.append(_line("TargetGroupBinding", tgb, "not-honoured",
                               f"spec.networking would be refused: {why}", "spec.networking"))
    deployed = TARGETGROUPBINDING_FINALIZER in finalizers(tgb)
    lines.append(_line("TargetGroupBinding", tgb, "adopted" if deployed else "served",
                       "adopted: the targets upstream registered are kept"
                       if deployed else f"served: targets registered in {name_of(tgb)}'s "
                       "target group"))
    return lines


__all__ = ["ADOPTED", "GATEWAY_CONTROLLERS", "NEW", "PARAMS_FIELDS", "Scope", "bindings",
           "class_params", "gateways",
           "ingress_caches", "ingresses", "services"]
