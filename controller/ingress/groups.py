"""Ingress groups: which group an Ingress belongs to, the group's queue key, finalizer and
labels, and loading a group's members from the cache.

Queue keys: an explicit group (`group.name` annotation or IngressClassParams `group.name`) is
`Request("", <group name>)`; an Ingress on its own is `Request(<namespace>, <name>)`. An Ingress
always has a namespace and a group name cannot contain "/", so the two never collide; the same
holds for `Request.key`, which is what the group index stores.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.annotations import AnnotationError, AnnotationReader
from controller.apis import (
    ALB_CONTROLLER,
    INGRESS_FINALIZER,
    INGRESS_GROUP_FINALIZER_PREFIX,
    INGRESS_STACK_LABEL,
    INGRESS_STACK_NAME_LABEL,
    INGRESS_STACK_NAMESPACE_LABEL,
)
from controller.apis import (
    INGRESS_ANNOTATION_PREFIX as PREFIX,
)
from controller.ingress.caches import Caches
from controller.ingress.classes import (
    ClassError,
    IngressClassInfo,
    class_name_of,
    classify,
    served_elsewhere,
)
from runtime.objects import Obj, as_dict, dig, finalizers, key_of, meta
from runtime.reconcile import Request

# Ingress → Request.key of every group it may belong to or have belonged to, from the Ingress
# alone (its own key, its group.name annotation, its finalizers). Class and params lookups are
# left out on purpose: the index is computed when the Ingress changes, and would go stale when
# an IngressClass or its params change; membership is decided at load time instead.
GROUP_INDEX = "ingress-group"
CLASS_INDEX = "ingress-class"  # Ingress → the class it names ("" for none)

# Upstream's rule (pkg/ingress/group_loader.go), looser than a DNS subdomain: `a..b` and
# `team.-web` are groups there, so they are here (rejecting one would read as its members
# leaving it, and delete its load balancer). Every name it allows is also a valid label value
# and finalizer name part, the two places the name goes into Kubernetes.
_GROUP_NAME = re.compile(r"^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$")
GROUP_NAME_KEY = PREFIX + "group.name"
GROUP_ORDER_KEY = PREFIX + "group.order"


def is_explicit(request: Request) -> bool:
    return request.namespace == ""


def stack_id(request: Request) -> str:
    """Upstream's stack id: the group name, or `namespace/name`."""
    return request.key


def finalizer_of(request: Request) -> str:
    if is_explicit(request):
        return INGRESS_GROUP_FINALIZER_PREFIX + request.name
    return INGRESS_FINALIZER


def stack_labels(request: Request) -> dict[str, str]:
    if is_explicit(request):
        return {INGRESS_STACK_LABEL: request.name}
    return {INGRESS_STACK_NAMESPACE_LABEL: request.namespace,
            INGRESS_STACK_NAME_LABEL: request.name}


def request_of_key(key: str) -> Request:
    namespace, sep, name = key.partition("/")
    return Request(namespace, name) if sep else Request("", key)


def implicit(ing: Obj) -> Request:
    m = meta(ing)
    return Request(str(m.get("namespace") or ""), str(m.get("name") or ""))


def check_group_name(key: str, raw: str) -> str:
    if len(raw) > 63 or not _GROUP_NAME.match(raw):
        raise AnnotationError(key, raw, "is not a valid group name (lowercase letters, digits, "
                                        "'-' and '.', starting and ending with a letter or "
                                        "digit, at most 63 characters)")
    return raw


def group_order(ing: Obj) -> int:
    reader = AnnotationReader.of(ing, PREFIX)
    order = reader.get_int("group.order", minimum=-1000, maximum=1000)
    return 0 if order is None else order


def former_groups(ing: Obj) -> list[Request]:
    """Groups whose finalizer the Ingress still carries: it may still have rules there."""
    found: list[Request] = []
    for fin in finalizers(ing):
        if fin == INGRESS_FINALIZER:
            found.append(implicit(ing))
        elif isinstance(fin, str) and fin.startswith(INGRESS_GROUP_FINALIZER_PREFIX):
            name = fin.removeprefix(INGRESS_GROUP_FINALIZER_PREFIX)
            if name:
                found.append(Request("", name))
    return found


def has_hostname(ing: Obj) -> bool:
    """The Ingress's status names a load balancer (only the controller writes it)."""
    items = dig(ing, "status", "loadBalancer", "ingress")
    return isinstance(items, list) and any(
        isinstance(item, dict) and isinstance(item.get("hostname"), str) and item["hostname"]
        for item in items)


def deployed_with(ing: Obj, request: Request) -> bool:
    """The group was deployed with this Ingress: it carries the group's finalizer and, for a
    group named in annotations or class parameters, the load balancer's hostname in its
    status. Whoever may edit an Ingress may add any finalizer to it, so for a group other
    namespaces can name the finalizer alone proves nothing; the status is written by the
    controller through the status subresource, which namespace users' roles (Kubernetes' edit
    and admin) do not grant. An Ingress's own group cannot be named from elsewhere."""
    if finalizer_of(request) not in finalizers(ing):
        return False
    return not is_explicit(request) or has_hostname(ing)


@dataclass(frozen=True, slots=True)
class Membership:
    """An Ingress this controller owns: its group, class info, the first problem found (the
    member is left out of its group for it), and whether the group is the one its class
    parameters enforce (`via_params`) rather than one it names itself."""

    group: Request
    info: IngressClassInfo | None
    error: str | None = None
    via_params: bool = False


def membership(ing: Obj, caches: Caches, *, ingress_class: str,
               controller: str = ALB_CONTROLLER) -> Membership | None:
    """None when the Ingress is not ours or is being deleted."""
    if meta(ing).get("deletionTimestamp"):
        return None
    try:
        info = classify(ing, caches, ingress_class=ingress_class, controller=controller)
    except ClassError as exc:
        return Membership(_annotated_group(ing), None, str(exc))
    if info is None:
        return None
    if info.params is not None and info.params.group_name:
        return Membership(Request("", info.params.group_name), info, via_params=True)
    try:
        name = AnnotationReader.of(ing, PREFIX).get("group.name", check_group_name)
    except AnnotationError as exc:
        return Membership(implicit(ing), info, str(exc))
    return Membership(Request("", name) if name else implicit(ing), info)


def _annotated_group(ing: Obj) -> Request:
    try:
        name = AnnotationReader.of(ing, PREFIX).get("group.name", check_group_name)
    except AnnotationError:
        name = None
    return Request("", name) if name else implicit(ing)


def index_keys(ing: Obj) -> list[str]:
    """GROUP_INDEX values (never raises)."""
    keys: dict[str, None] = {implicit(ing).key: None}
    with contextlib.suppress(Exception):  # an index function must never raise
        keys[_annotated_group(ing).key] = None
    for request in former_groups(ing):
        keys[request.key] = None
    return list(keys)


def group_keys(ing: Obj, caches: Caches, *, ingress_class: str,
               controller: str = ALB_CONTROLLER) -> list[str]:
    """The current group (live lookup) and every former one (by finalizer)."""
    keys: dict[str, None] = {}
    try:
        member = membership(ing, caches, ingress_class=ingress_class, controller=controller)
        if member is None and served_elsewhere(ing, caches, controller=controller):
            return []  # its groups, current and former, are another controller's
    except Exception:  # an index function must never raise into the informer
        member = None
    if member is not None:
        keys[member.group.key] = None
    for request in former_groups(ing):
        keys[request.key] = None
    return list(keys)


def class_keys(ing: Obj) -> list[str]:
    return [class_name_of(ing) or ""]


@dataclass(frozen=True, slots=True)
class Member:
    ingress: Obj
    info: IngressClassInfo | None
    order: int
    via_params: bool = False

    @property
    def key(self) -> str:
        return key_of(self.ingress)


@dataclass(frozen=True)
class Group:
    """A group as the cache shows it: active members sorted by (order, namespace, name), the
    Ingresses leaving it (deployed with it, they still carry its finalizer), `strays` (they
    carry its finalizer but the group was never deployed with them: their finalizer is only
    released, nothing of the group is deleted for them), and the problems found (`errors`:
    members whose class or group annotations cannot be used).

    Once settled (`controller.ingress.exclusions`): `excluded` are the members left out, each
    with its reason (`refused`: those left out for forwarding to a target group they may not
    use), `held` says why the group must not be deployed at all, and `unknown` are
    members that vanished while carrying its finalizer."""

    request: Request
    members: tuple[Member, ...] = ()
    leaving: tuple[Obj, ...] = ()
    strays: tuple[Obj, ...] = ()
    errors: tuple[tuple[Obj, str], ...] = field(default=())
    excluded: tuple[tuple[Obj, str], ...] = field(default=())
    held: str | None = None
    unknown: tuple[Obj, ...] = field(default=())
    refused: tuple[tuple[Obj, str], ...] = field(default=())

    @property
    def stack_id(self) -> str:
        return stack_id(self.request)

    @property
    def finalizer(self) -> str:
        return finalizer_of(self.request)

    def established(self, ing: Obj) -> bool:
        """The group was deployed with the Ingress (`deployed_with`)."""
        return deployed_with(ing, self.request)


class GroupLoader:
    def __init__(self, caches: Caches, *, ingress_class: str,
                 controller: str = ALB_CONTROLLER) -> None:
        self.caches = caches
        self.ingress_class = ingress_class
        self.controller = controller

    def groups_of(self, ing: Obj) -> list[Request]:
        """Every group an Ingress event may concern: the one it belongs to now and the ones
        whose finalizer it still carries."""
        keys = group_keys(ing, self.caches, ingress_class=self.ingress_class,
                          controller=self.controller)
        return [request_of_key(k) for k in keys]

    def _candidates(self, request: Request) -> Iterable[Obj]:
        store = self.caches.ingresses
        found = {key_of(i): i for i in store.by_index(GROUP_INDEX, request.key)}
        if is_explicit(request):
            # Members through IngressClassParams: the index may predate a params change.
            for params in self.caches.params.list():
                if dig(params, "spec", "group", "name") != request.name:
                    continue
                for cls in self.caches.classes.list():
                    ref = as_dict(dig(cls, "spec", "parameters"))
                    if isinstance(ref, dict) and ref.get("name") == meta(params).get("name"):
                        for ing in store.by_index(CLASS_INDEX, str(meta(cls).get("name"))):
                            found[key_of(ing)] = ing
        return [found[k] for k in sorted(found)]

    def versions(self, request: Request) -> tuple[tuple[str, str], ...]:
        """(key, resourceVersion) of every Ingress that may be a member: what a decision
        about the group's members can be remembered by (any change among them shows here),
        for much less than `load`."""
        return tuple((key_of(i), str(meta(i).get("resourceVersion")))
                     for i in self._candidates(request))

    def load(self, request: Request) -> Group:
        members: list[Member] = []
        leaving: list[Obj] = []
        strays: list[Obj] = []
        errors: list[tuple[Obj, str]] = []
        finalizer = finalizer_of(request)
        for ing in self._candidates(request):
            member = membership(ing, self.caches, ingress_class=self.ingress_class,
                                controller=self.controller)
            if member is not None and member.group == request:
                if member.error is not None:
                    errors.append((ing, member.error))
                try:
                    order = group_order(ing)
                except AnnotationError as exc:
                    errors.append((ing, str(exc)))
                    order = 0
                members.append(Member(ing, member.info, order, member.via_params))
            elif member is None and served_elsewhere(ing, self.caches,
                                                     controller=self.controller):
                continue  # another controller's: neither a member nor leaving
            elif deployed_with(ing, request):
                leaving.append(ing)
            elif finalizer in finalizers(ing):
                strays.append(ing)
        members.sort(key=lambda m: (m.order, str(meta(m.ingress).get("namespace")),
                                    str(meta(m.ingress).get("name"))))
        return Group(request, tuple(members), tuple(leaving), tuple(strays), tuple(errors))
