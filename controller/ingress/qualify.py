"""The qualify step of an Ingress group: which members it admits, and its stack built once for
them (`exclusions.settle`: membership, the namespace policy, what builds).

`settle` is pure (cache reads only): the priority decisions use it at enqueue time. `qualify`,
the reconcile's, first checks every target group a member forwards to by ARN
(`controller.targetgroupaccess`: same VPC, not another cluster's or namespace's, not filled by
another namespace's binding), so that a member forwarding where it may not is left out (a
newcomer) or holds the group (an established member) before anything is built; the facts it
reads are cached (`TargetGroupLookup`), so a group without such forwards costs nothing and one
with them a lookup per target group every few minutes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller import targetgroupaccess
from controller.annotations import AnnotationError
from controller.errors import InvalidInput
from controller.ingress.annotations import parse_ingress
from controller.ingress.caches import Caches
from controller.ingress.exclusions import GroupNamespaces, Settled, settle
from controller.ingress.groups import Group, Member
from controller.ingress.model import BuilderSettings, BuiltGroup, build_group
from controller.ingress.vanished import VanishedMembers, recorded_unknown
from runtime.objects import Obj, namespace_of

Build = Callable[[Group], BuiltGroup]


class Qualifier:
    def __init__(self, *, caches: Caches, settings: BuilderSettings, policy: GroupNamespaces,
                 vanished: VanishedMembers, target_groups: targetgroupaccess.TargetGroupLookup,
                 bindings_by_index: Callable[[str, str], list[Obj]]) -> None:
        self._caches = caches
        self._settings = settings
        self._policy: GroupNamespaces = policy
        self._vanished = vanished
        self._target_groups = target_groups
        self._bindings_by_index = bindings_by_index

    def settle(self, group: Group, *, refused: Mapping[str, str] | None = None
               ) -> Settled[BuiltGroup]:
        """The group settled on the caches: its members, and their stack when it builds."""
        unknown = self._vanished.unknown(group.request, recorded_unknown(group, self._exists))
        return settle(group, caches=self._caches, policy=self._policy, build=self._build,
                      unknown=unknown, refused=refused)

    def _build(self, group: Group) -> BuiltGroup:
        return build_group(group, self._caches, self._settings)

    def _exists(self, key: str) -> bool:
        return self._caches.ingresses.get(key) is not None

    async def qualify(self, group: Group) -> Settled[BuiltGroup]:
        """`settle`, with the members forwarding where they may not left out first."""
        refused: dict[str, str] = {}
        for member in group.members:
            reason = await self._forward_refused(member)
            if reason is not None:
                refused[member.key] = reason
        return self.settle(group, refused=refused)

    async def _forward_refused(self, member: Member) -> str | None:
        namespace = namespace_of(member.ingress)
        settings = self._settings
        arns = [(arn, False) for arn in forwarded_arns(member.ingress)]
        for arn, by_name in [*arns, *((n, True) for n in forwarded_names(member.ingress))]:
            try:
                facts = await (self._target_groups.facts_by_name(arn) if by_name
                               else self._target_groups.facts(arn))
                targetgroupaccess.check_target_group(facts, namespace=namespace,
                                             vpc_id=settings.cluster.vpc_id,
                                             cluster_name=settings.cluster.name)
                targetgroupaccess.check_forward(
                    facts, namespace=namespace,
                    bindings=targetgroupaccess.bindings_of(self._bindings_by_index, facts))
            except InvalidInput as exc:
                return f"forward to {'target group named ' + repr(arn) if by_name else arn}: {exc}"
        return None


def forwarded_arns(ing: Obj) -> list[str]:
    """Target group ARNs the Ingress's `actions.*` annotations forward to."""
    try:
        actions = parse_ingress(ing).actions
    except AnnotationError:
        return []  # the build reports it
    found: list[str] = []
    for spec in actions.values():
        if spec.target_group_arn:
            found.append(spec.target_group_arn)
        if spec.forward_config is not None:
            found.extend(t.target_group_arn for t in spec.forward_config.target_groups
                         if t.target_group_arn)
    return sorted(set(found))


def forwarded_names(ing: Obj) -> list[str]:
    """Target group names (upstream's `targetGroupName`) the Ingress's actions forward to."""
    try:
        actions = parse_ingress(ing).actions
    except AnnotationError:
        return []
    return sorted({t.target_group_name for spec in actions.values() if spec.type == "forward"
                   for t in spec.forward_groups() if t.target_group_name})


__all__ = ["Qualifier", "forwarded_arns", "forwarded_names"]
