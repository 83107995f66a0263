"""Admission of one Ingress write: the checks a reconcile of its group would make, made when
the write arrives, with the same code, so that a denial says what the Warning Event would have
said (the group's build error, word for word).

- Not ours (another class, or being deleted): admitted without a look.
- An update that changes nothing the model reads (our own finalizer and checkpoint writes, a
  label): admitted, so that the controller can always finish what it started.
- The Ingress on its own (class, parameters, group name and order, every annotation, the spec,
  its backends' target-group and auth settings): an error denies. Objects it names that do not
  exist yet (a backend Service, an OIDC Secret, the class's parameters) only warn: objects
  applied together arrive in any order, and the reconciler waits for them.
- The group with this Ingress in it (Exclusive annotations that must agree across members):
  denied only when the write introduces the conflict; a group that was already broken is a
  warning, since refusing an unrelated member's edit would help nobody.
"""

from __future__ import annotations

from controller.annotations import AnnotationError
from controller.errors import InvalidInput, MissingReference
from controller.ingress.annotations import IngressAnnotations
from controller.ingress.caches import Caches
from controller.ingress.classes import ClassError, classify, parse_params
from controller.ingress.groups import Group, GroupLoader, Member, group_order, membership
from controller.ingress.merge import BuildError, apply_params
from controller.ingress.model import BuilderSettings, build_group
from controller.ingress.watches import ingress_view
from runtime.objects import Obj, is_deleting, key_of, name_of, namespace_of
from runtime.reconcile import Request


def _built(group: Group, caches: Caches, settings: BuilderSettings) -> InvalidInput | None:
    try:
        build_group(group, caches, settings)
    except InvalidInput as exc:
        return exc
    return None


def admit(ing: Obj, old: Obj | None, caches: Caches, settings: BuilderSettings) -> list[str]:
    """The warnings to answer with; raises `InvalidInput` (its text is the denial)."""
    if is_deleting(ing):
        return []
    if old is not None and ingress_view(old) == ingress_view(ing):
        return []
    key = key_of(ing)
    try:
        info = classify(ing, caches, ingress_class=settings.ingress_class)
    except MissingReference as exc:
        return [f"Ingress {key}: {exc}"]
    except ClassError as exc:
        raise BuildError(f"Ingress {key}: {exc}") from None
    if info is None:
        return []
    member = membership(ing, caches, ingress_class=settings.ingress_class)
    if member is None:
        return []
    if member.error is not None:
        raise BuildError(f"Ingress {key}: {member.error}")
    try:
        order = group_order(ing)
    except AnnotationError as exc:
        raise BuildError(f"Ingress {key}: {exc}") from None
    this = Member(ing, info, order)
    problem = _built(Group(member.group, (this,)), caches, settings)
    if isinstance(problem, MissingReference):
        return [str(problem)]
    if problem is not None:
        raise problem
    return _group_warnings(this, member.group, caches, settings)


def _group_warnings(this: Member, request: Request, caches: Caches,
                    settings: BuilderSettings) -> list[str]:
    current = GroupLoader(caches, ingress_class=settings.ingress_class).load(request)
    members = sorted([*(m for m in current.members if m.key != this.key), this],
                     key=lambda m: (m.order, namespace_of(m.ingress), name_of(m.ingress)))
    errors = tuple((obj, message) for obj, message in current.errors
                   if key_of(obj) != this.key)
    problem = _built(Group(request, tuple(members), (), errors), caches, settings)
    if problem is None:
        return []
    if isinstance(problem, MissingReference):
        return [str(problem)]
    already = _built(current, caches, settings) if current.members else None
    if already is not None and str(already) == str(problem):
        return [str(problem)]
    raise problem


def admit_params(obj: Obj) -> list[str]:
    """IngressClassParams: parsed and applied as an Ingress of the class would have them;
    raises `InvalidInput` (the text an Ingress of the class would be reported with, after its
    own name)."""
    if is_deleting(obj):
        return []
    apply_params(IngressAnnotations(), parse_params(obj))
    return []


__all__ = ["admit", "admit_params"]
