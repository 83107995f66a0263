"""Which members a group admits before its stack is built, and why it leaves any out.

One principle: a member the group was deployed with ("established": `groups.deployed_with`,
its finalizer and, for a named group, the status only the controller writes) is never dropped
by the controller on its own. A problem with it holds the group: nothing is deployed and
every member is told why, as upstream does for any problem. A newcomer with a problem is left
out with its own Warning, and the rest of the group deploys.
So an outsider cannot block a team's changes, and an edit cannot make the controller delete a
member's rules.

The problems, in order:
1. membership: class parameters that cannot be used, a namespace the class's
   namespaceSelector does not select, an invalid group name or order;
2. a group an IngressClassParams enforces (`spec.group.name`) admits only Ingresses whose class
   carries those parameters: naming it in `group.name` is no way in;
3. the namespace policy (`--ingress-group-namespaces`):
   - `any`: upstream's behaviour, any namespace may join any group it names;
   - `params` (the default): a group named in annotations stays within one namespace; only a
     group enforced by IngressClassParams, whose namespaceSelector an administrator controls,
     spans namespaces;
   - `single`: every group stays within one namespace.
   A group's namespace is that of its oldest established Ingress (leaving or vanished ones
   included), else of its oldest member;
4. forwards to target groups the member may not use (`qualify.py`): such a newcomer is left
   out (`refused`), an established member holds the group;
5. what cannot be built: the established members' stack must build (else the group is held);
   then newcomers join one by one, oldest first, and one that cannot — an Exclusive
   annotation that conflicts, a second default backend, a missing backend — is left out with
   the build's message;
6. AWS's quotas (rules per listener, target groups per load balancer, condition values per
   rule, certificates per listener: `IngressConfig`'s flags): a group past one is planned
   member by member, established members first, each in the group's order, and a member
   that would take it past a quota is left out alone, established or not (the quota, its
   value and the member named): one team's growth never holds the others' changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from controller.errors import InvalidInput
from controller.ingress.caches import Caches
from controller.ingress.groups import Group, Member, is_explicit
from controller.ingress.merge import GroupQuotaExceeded
from runtime.objects import Obj, key_of, meta, namespace_of

GroupNamespaces = Literal["single", "params", "any"]

T = TypeVar("T")


@dataclass(frozen=True)
class Settled(Generic[T]):
    """The settled group, and its build: `built` when it built, else `error` (held)."""

    group: Group
    built: T | None = None
    error: InvalidInput | None = None


def _created(obj: Obj) -> tuple[str, str]:
    return (str(meta(obj).get("creationTimestamp") or ""), key_of(obj))


def enforcing_params(caches: Caches, group_name: str) -> str | None:
    """The IngressClassParams that enforces group `group_name`, if any."""
    for params in sorted(caches.params.list(), key=lambda p: str(meta(p).get("name"))):
        spec = params.get("spec")
        group = spec.get("group") if isinstance(spec, dict) else None
        if isinstance(group, dict) and group.get("name") == group_name:
            return str(meta(params).get("name"))
    return None


def home_namespace(group: Group, candidates: Iterable[Obj]) -> str | None:
    objects = [*candidates, *group.leaving, *group.unknown]
    established = [o for o in objects if group.established(o)]
    chosen = sorted(established or objects, key=_created)
    return namespace_of(chosen[0]) if chosen else None


def _with_members(group: Group, members: Sequence[Member]) -> Group:
    keep = {m.key for m in members}
    return dataclasses.replace(group, members=tuple(m for m in group.members if m.key in keep))


def settle(group: Group, *, caches: Caches, policy: GroupNamespaces,
           build: Callable[[Group], T], unknown: Sequence[Obj] = (),
           refused: Mapping[str, str] | None = None) -> Settled[T]:
    """`build` raises `InvalidInput` for a group it cannot build. `refused`: member key → why
    it may not forward where it does (`qualify.py`), judged after the membership problems."""
    problems: dict[str, str] = {}
    for ing, message in group.errors:
        problems.setdefault(key_of(ing), message)
    group = dataclasses.replace(group, unknown=tuple(unknown), errors=())
    if is_explicit(group.request):
        for member, message in _policy(group, caches, policy):
            problems.setdefault(member.key, message)
    refusals = {k: v for k, v in (refused or {}).items() if k not in problems}
    problems.update(refusals)
    excluded: list[tuple[Obj, str]] = []
    forwarding: list[tuple[Obj, str]] = []
    for member in group.members:
        problem = problems.get(member.key)
        if problem is None:
            continue
        if group.established(member.ingress):
            return _held(group, member, problem)
        (forwarding if member.key in refusals else excluded).append((member.ingress, problem))
    members = [m for m in group.members if m.key not in problems]
    group = dataclasses.replace(group, members=tuple(members), excluded=tuple(excluded),
                                refused=tuple(forwarding))
    if not members:
        return Settled(group)
    try:
        return Settled(group, built=build(group))
    except InvalidInput as whole:
        failure = whole
    if isinstance(failure, GroupQuotaExceeded):
        return _plan_quotas(group, members, build, excluded)
    established = [m for m in members if group.established(m.ingress)]
    newcomers = sorted((m for m in members if not group.established(m.ingress)),
                       key=lambda m: _created(m.ingress))
    result: T | None = None
    if established:
        try:
            result = build(_with_members(group, established))
        except InvalidInput as exc:
            return Settled(dataclasses.replace(group, held=str(exc)), error=exc)
    elif len(newcomers) == 1:
        return Settled(dataclasses.replace(group, held=str(failure)), error=failure)
    admitted = list(established)
    for member in newcomers:
        try:
            result = build(_with_members(group, [*admitted, member]))
        except InvalidInput as exc:
            excluded.append((member.ingress, str(exc)))
            continue
        admitted.append(member)
    settled = dataclasses.replace(_with_members(group, admitted), excluded=tuple(excluded))
    return Settled(settled, built=result)


def _plan_quotas(group: Group, members: Sequence[Member], build: Callable[[Group], T],
                 excluded: list[tuple[Obj, str]]) -> Settled[T]:
    """The group past one of AWS's quotas: members admitted one by one, the established ones
    first, then the newcomers, each in the group's order (`group.order`, namespace, name), so
    the one left out is always the same and a newcomer never pushes out a member deployed
    before it; a member that would take the group past a quota is left out alone (its own
    rules go, the others' stay and converge). Another problem of an established member holds
    the group, as anywhere else."""
    established = [m for m in members if group.established(m.ingress)]
    newcomers = [m for m in members if not group.established(m.ingress)]
    admitted: list[Member] = []
    result: T | None = None
    for member in [*established, *newcomers]:
        try:
            result = build(_with_members(group, [*admitted, member]))
        except GroupQuotaExceeded as exc:
            excluded.append((member.ingress, past_quota(member, exc)))
            continue
        except InvalidInput as exc:
            if group.established(member.ingress):
                return _held(group, member, str(exc))
            excluded.append((member.ingress, str(exc)))
            continue
        admitted.append(member)
    settled = dataclasses.replace(_with_members(group, admitted), excluded=tuple(excluded))
    return Settled(settled, built=result)


def past_quota(member: Member, exc: GroupQuotaExceeded) -> str:
    """Why `member` is left out: the quota, its value, and the member."""
    return f"Ingress {member.key} would take the group past an AWS quota: {exc.exceeded}"


def _held(group: Group, member: Member, message: str) -> Settled[T]:
    text = (f"Ingress {member.key}: {message}; the group keeps what is deployed until this is "
            "fixed")
    return Settled(dataclasses.replace(group, held=text), error=GroupHeld(text))


class GroupHeld(InvalidInput):
    condition_reason = "GroupHeld"


def _policy(group: Group, caches: Caches, policy: GroupNamespaces
            ) -> list[tuple[Member, str]]:
    name = group.request.name
    found: list[tuple[Member, str]] = []
    members = list(group.members)
    enforced_by = enforcing_params(caches, name)
    if enforced_by is not None:
        for m in members:
            if not m.via_params:
                found.append((m, f"group {name} is enforced by IngressClassParams "
                                 f"{enforced_by}: only Ingresses of a class with those "
                                 "parameters join it"))
        members = [m for m in members if m.via_params]
        if policy != "single":
            return found
    if policy == "any":
        return found
    home = home_namespace(group, (m.ingress for m in members))
    how = "only through IngressClassParams" if policy == "params" else "not at all"
    for m in members:
        if namespace_of(m.ingress) != home:
            found.append((m, f"group {name} belongs to namespace {home}; Ingresses of other "
                             f"namespaces join it {how} (--ingress-group-namespaces={policy})"))
    return found


__all__ = ["GroupHeld", "GroupNamespaces", "Settled", "enforcing_params", "home_namespace",
           "past_quota", "settle"]
