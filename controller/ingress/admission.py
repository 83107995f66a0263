"""Admission of one Ingress write: what a reconcile of its group would make of it, worked out
when the write arrives with the reconciler's own code (membership, `exclusions.settle`,
`build_group`), so that a denial says what the Warning Event would have said:

- a new use of the `kubernetes.io/ingress.class` or `group.name` annotation once
  `--disable-ingress-class-annotation` or `--disable-ingress-group-name-annotation` forbids it
  (upstream's rule: an Ingress that already had it keeps it; a group name cannot change): denied;
- not ours (another class, or being deleted): admitted without a look;
- an update that changes nothing the model reads (our own finalizer and checkpoint writes, a
  label): admitted, so that the controller can always finish what it started;
- objects it names that do not exist yet (a backend Service, the class's parameters) only
  warn: objects applied together arrive in any order, and the reconciler waits for them;
- a group that builds but whose inbound CIDRs admit no one (IPv6 ones on an IPv4 ALB) is
  admitted with the text of its `InboundCIDRsAdmitNoOne` Warning;
- left out of its group (a conflicting Exclusive annotation, a group it may not join, bad
  class parameters...): denied with the `ExcludedFromGroup` text;
- making its group impossible to build (on its own, or with the members it was deployed with):
  denied with the `FailedBuildModel` text; a group that was held already only warns, since
  refusing an unrelated edit would help nobody. A key that narrows who can reach the load
  balancer and cannot be honoured is such a failure (fail closed);
- admitted, it is told about the keys under our prefixes it (or a backend Service it uses)
  carries that are not acted on, as the reconciler's Warnings tell it
  (`controller/annotationreview.py`): kubectl prints each as a warning.

Secrets are not read here (the controller reads the ones it needs by name, while leading):
every referenced Secret is taken as present and well-formed, so a missing one is the
reconciler's to report.
"""

from __future__ import annotations

import base64

from controller.annotationreview import review, summarized
from controller.annotations import AnnotationError, annotations_of
from controller.apis.names import LEGACY_CLASS_ANNOTATION
from controller.errors import InvalidInput, MissingReference
from controller.ingress.addons import NONE, WAFV2_NAME
from controller.ingress.annotations import IngressAnnotations
from controller.ingress.caches import Caches
from controller.ingress.classes import (
    ClassError,
    annotation_matches,
    classify,
    parse_params,
    served_controller,
)
from controller.ingress.exclusions import GroupNamespaces, Settled, settle
from controller.ingress.groups import (
    GROUP_NAME_KEY,
    Group,
    GroupLoader,
    Member,
    group_order,
    membership,
)
from controller.ingress.merge import BuildError, apply_params
from controller.ingress.model import BuilderSettings, BuiltGroup, build_group
from controller.ingress.watches import ingress_view
from runtime.objects import Obj, is_deleting, key_of, name_of, namespace_of
from runtime.objects import annotations_of as object_annotations
from runtime.store import Store

_PRESUMED = base64.b64encode(b"presumed").decode()


class PresumedSecrets(Store):
    """A Secret store in which every Secret exists, with an OIDC client's keys."""

    def get(self, key: str) -> Obj | None:
        namespace, _, name = key.partition("/")
        return {"metadata": {"name": name, "namespace": namespace, "uid": "",
                             "resourceVersion": ""},
                "data": {"clientID": _PRESUMED, "clientSecret": _PRESUMED}}


def _sorted(members: list[Member]) -> tuple[Member, ...]:
    return tuple(sorted(members, key=lambda m: (m.order, namespace_of(m.ingress),
                                                name_of(m.ingress))))


class ForbiddenAnnotation(InvalidInput):
    """A new use of an annotation the controller's flags forbid."""

    condition_reason = "ForbiddenAnnotation"


def check_annotation_usage(ing: Obj, old: Obj | None, *, ingress_class: str,
                           disable_class_annotation: bool,
                           disable_group_name_annotation: bool) -> None:
    """Upstream's ingress validator: with `--disable-ingress-class-annotation`, an Ingress may
    not start naming this controller's class in `kubernetes.io/ingress.class`; with
    `--disable-ingress-group-name-annotation`, it may not start carrying `group.name` nor change
    it. What an Ingress already had stays allowed, so existing Ingresses can still be edited."""
    new_annotations = object_annotations(ing)
    old_annotations = object_annotations(old) if old is not None else {}
    if disable_class_annotation:
        def ours(annotations: dict[str, str]) -> bool:
            value = annotations.get(LEGACY_CLASS_ANNOTATION)
            return isinstance(value, str) and annotation_matches(value, ingress_class)
        if ours(new_annotations) and not ours(old_annotations):
            raise ForbiddenAnnotation(
                f"new usage of `{LEGACY_CLASS_ANNOTATION}` annotation is forbidden "
                "(--disable-ingress-class-annotation): use spec.ingressClassName")
    if (disable_group_name_annotation and GROUP_NAME_KEY in new_annotations
            and old_annotations.get(GROUP_NAME_KEY) != new_annotations[GROUP_NAME_KEY]):
        raise ForbiddenAnnotation(
            f"new usage of `{GROUP_NAME_KEY}` annotation is forbidden "
            "(--disable-ingress-group-name-annotation): use IngressClassParams' group.name")


def _controller(settings: BuilderSettings) -> str:
    return served_controller(settings.cluster.controller_id)


def admit(ing: Obj, old: Obj | None, caches: Caches, settings: BuilderSettings, *,
          policy: GroupNamespaces = "params", disable_class_annotation: bool = False,
          disable_group_name_annotation: bool = False) -> list[str]:
    """The warnings to answer with; raises `InvalidInput` (its text is the denial). Secrets in
    `caches` should be `PresumedSecrets` (`wiring.admission_caches`)."""
    if is_deleting(ing):
        return []
    if ((disable_class_annotation or disable_group_name_annotation)
            and membership(ing, caches, ingress_class=settings.ingress_class,
                                   controller=_controller(settings)) is not None):
        check_annotation_usage(ing, old, ingress_class=settings.ingress_class,
                               disable_class_annotation=disable_class_annotation,
                               disable_group_name_annotation=disable_group_name_annotation)
    if old is not None and ingress_view(old) == ingress_view(ing):
        return []
    told: list[str] = []
    warnings = _admit(ing, caches, settings, policy, told)
    return [*warnings, *told]


def _admit(ing: Obj, caches: Caches, settings: BuilderSettings, policy: GroupNamespaces,
           told: list[str]) -> list[str]:
    """`admit`'s decision; `told` gets what the Ingress is told about its keys."""
    key = key_of(ing)
    try:
        info = classify(ing, caches, ingress_class=settings.ingress_class,
                        controller=_controller(settings))
    except MissingReference as exc:
        return [f"Ingress {key}: {exc}"]
    except ClassError:
        info = None  # left out of its group for it: `settle` says so below
    member = membership(ing, caches, ingress_class=settings.ingress_class,
                                   controller=_controller(settings))
    if member is None:
        return []
    # Its own keys, until its build (which adds its backend Services') says more.
    told[:] = [f.message for f in summarized(
        [f for f in review(annotations_of(ing), where="ingress") if not f.refused])]
    errors: list[tuple[Obj, str]] = []
    if member.error is not None:
        errors.append((ing, member.error))
    try:
        order = group_order(ing)
    except AnnotationError as exc:
        errors.append((ing, str(exc)))
        order = 0
    this = Member(ing, info, order, member.via_params)
    if not errors:
        try:
            alone = build_group(Group(member.group, (this,)), caches, settings)
            told[:] = [f.message for f in summarized(alone.findings.get(key, ()))]
        except MissingReference as exc:
            return [str(exc)]
        except InvalidInput:
            pass  # whether it counts is the settled group's to say
    current = GroupLoader(caches, ingress_class=settings.ingress_class,
                          controller=_controller(settings)).load(member.group)
    written = Group(member.group,
                    _sorted([*(m for m in current.members if m.key != key), this]),
                    current.leaving, current.strays,
                    (*((o, m) for o, m in current.errors if key_of(o) != key), *errors))
    after = _settle(written, caches, settings, policy)
    for excluded, reason in after.group.excluded:
        if key_of(excluded) == key:
            raise BuildError(f"not part of group {member.group.key}: {reason}")
    if after.group.held is None:
        # What builds but admits no one: the Warning Event's text, said at apply time too.
        if after.built is None:
            return []
        unauthenticated = after.built.http_unauthenticated.get(key)
        unused = after.built.frontend_nlb_unused.get(key)
        return [*after.built.warnings, *([unauthenticated] if unauthenticated else []),
                *([unused] if unused else []),
                *after.built.missing.get(key, ())]
    before = _settle(current, caches, settings, policy) if current.members else None
    if before is not None and before.group.held == after.group.held:
        return [after.group.held]
    raise after.error or BuildError(after.group.held)


def _settle(group: Group, caches: Caches, settings: BuilderSettings,
            policy: GroupNamespaces) -> Settled[BuiltGroup]:
    return settle(group, caches=caches, policy=policy,
                  build=lambda g: build_group(g, caches, settings))


def web_acl_names(ing: Obj, caches: Caches, settings: BuilderSettings) -> tuple[str, ...]:
    """The WAFv2 web ACL names the Ingress brings (its class parameters' over its own
    annotation; `none` and empty name none), for the webhook to look up as the resolve stage
    will: a name that does not resolve is denied with the reconcile's words. Never raises."""
    try:
        info = classify(ing, caches, ingress_class=settings.ingress_class,
                        controller=_controller(settings))
    except InvalidInput:
        return ()
    params = info.params if info is not None else None
    if params is not None and params.wafv2_acl_name:
        name: object = params.wafv2_acl_name
    elif params is not None and params.wafv2_acl_arn:
        return ()  # the class's ARN: the member's own name is not read
    else:
        name = annotations_of(ing).get(WAFV2_NAME)
    return (name,) if isinstance(name, str) and name not in ("", NONE) else ()


def admit_params(obj: Obj) -> list[str]:
    """IngressClassParams: parsed and applied as an Ingress of the class would have them;
    raises `InvalidInput` (the text an Ingress of the class would be reported with, after its
    own name)."""
    if is_deleting(obj):
        return []
    apply_params(IngressAnnotations(), parse_params(obj))
    return []


__all__ = ["ForbiddenAnnotation", "PresumedSecrets", "admit", "admit_params",
           "check_annotation_usage"]
