"""Keep the inbound rules of one security group to what is wanted, touching only rules that are
ours: on a group we own, every rule; on someone else's group (a node or pod group), the rules
whose description says they are ours (`ruleowners.py`).

A rule is granted when no rule of the group is the same rule (AWS refuses a duplicate, whoever
owns it), and revoked when it is ours and not wanted. A wanted rule that is present with
another description we may take over (upstream's) is re-described in place
(UpdateSecurityGroupRuleDescriptionsIngress): revoking and granting it again would drop traffic
in between. Grants go first, then descriptions, then revocations, so a rule moving to a wider
port range never leaves a moment with neither; a crash between the calls leaves an extra rule
the next run revokes. `InvalidPermission.Duplicate` (someone granted it meanwhile) and
`InvalidPermission.NotFound` (someone revoked it meanwhile) are the outcome wanted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from controller.aws import AWSError, Caller
from controller.networking.permissions import Permission, to_api

Owned = Callable[[Permission], bool]


def everything(_: Permission) -> bool:
    return True


@dataclass(frozen=True)
class RuleChanges:
    grant: tuple[Permission, ...] = ()
    revoke: tuple[Permission, ...] = ()
    # Present rules to keep under a new description (the desired rule's).
    describe: tuple[Permission, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.grant or self.revoke or self.describe)


@dataclass
class GroupRules:
    """A group's inbound rules as DescribeSecurityGroups returned them, expanded."""

    group_id: str
    rules: list[Permission] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)


def nothing(_: Permission) -> bool:
    return False


def plan(current: Iterable[Permission], desired: Iterable[Permission], *,
         owned: Owned = everything, revoke: bool = True, relabel: Owned = nothing
         ) -> RuleChanges:
    """`relabel`: present rules that may be given the desired rule's description."""
    have = list(current)
    want = {p.rule: p for p in desired}
    present = {p.rule for p in have}
    grant = tuple(sorted(p for r, p in want.items() if r not in present
                         and (revoke or not any(_covers(h, p) for h in have))))
    extra = tuple(sorted({p.rule: p for p in have
                          if p.rule not in want and owned(p)}.values())) if revoke else ()
    describe = tuple(sorted({h.rule: want[h.rule] for h in have
                             if h.rule in want and h.description != want[h.rule].description
                             and relabel(h)}.values()))
    return RuleChanges(grant, extra, describe)


def _covers(have: Permission, want: Permission) -> bool:
    """`have` already admits what `want` would: while only granting (revocation waits for the
    whole picture), a rule that a wider one covers is not added, to be revoked again once the
    picture is complete."""
    return (have.protocol == want.protocol and have.source_kind == want.source_kind
            and have.source == want.source
            and have.from_port <= want.from_port and want.to_port <= have.to_port)


async def apply(calls: Caller, group_id: str, changes: RuleChanges) -> int:
    """Grant, then revoke; the number of mutating calls made."""
    made = 0
    if changes.grant:
        made += await _grant(calls, group_id, list(changes.grant))
    if changes.describe:
        made += await _describe(calls, group_id, list(changes.describe))
    if changes.revoke:
        made += await _revoke(calls, group_id, list(changes.revoke))
    return made


async def _grant(calls: Caller, group_id: str, rules: list[Permission]) -> int:
    try:
        await calls.call("AuthorizeSecurityGroupIngress", service="ec2", GroupId=group_id,
                         IpPermissions=to_api(rules))
    except AWSError as exc:
        if exc.code != "InvalidPermission.Duplicate":
            raise
        if len(rules) > 1:
            # One of them exists already (granted meanwhile) and the call granted none.
            return 1 + sum([await _grant(calls, group_id, [rule]) for rule in rules])
    return 1


async def _describe(calls: Caller, group_id: str, rules: list[Permission]) -> int:
    try:
        await calls.call("UpdateSecurityGroupRuleDescriptionsIngress", service="ec2",
                         GroupId=group_id, IpPermissions=to_api(rules))
    except AWSError as exc:
        if exc.code != "InvalidPermission.NotFound":
            raise
        if len(rules) > 1:
            # One of them is gone (revoked meanwhile) and the call changed none; the next
            # pass grants it, with our description.
            return 1 + sum([await _describe(calls, group_id, [rule]) for rule in rules])
    return 1


async def _revoke(calls: Caller, group_id: str, rules: list[Permission]) -> int:
    try:
        await calls.call("RevokeSecurityGroupIngress", service="ec2", GroupId=group_id,
                         IpPermissions=to_api(rules, with_descriptions=False))
    except AWSError as exc:
        if exc.code != "InvalidPermission.NotFound":
            raise
        if len(rules) > 1:
            # One of them is gone already (revoked meanwhile) and the call revoked none.
            return 1 + sum([await _revoke(calls, group_id, [rule]) for rule in rules])
    return 1


__all__ = ["GroupRules", "Owned", "RuleChanges", "apply", "everything", "nothing", "plan"]
