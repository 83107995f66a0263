"""What a paced verification (the LOW lane: a restart's, a takeover's or a resync's replay of
an unchanged binding) reads of AWS before it may stop, and what it trusts.

- **Targets.** The first verification of a binding in this process compares its registered
  targets with AWS (one DescribeTargetHealth per target group, shared through the target
  health cache), so that a target changed by hand while no controller was leading is repaired
  within the lane's pace after a restart or a takeover. Nothing stored on the binding can say
  AWS is unchanged: only this process's own reads count (upstream's deferred reconcile keeps
  the same kind of in-memory record, its processed-bindings cache). Later verifications in
  this process (the resync every sync period) trust a comparison of their own younger than
  `trusted_for`.
- **Rules and the rest of a full look.** A full look (the whole reconcile: `spec.networking`
  rules, the targets, the tracking record) is what the checkpoint-timestamp records; while it
  is younger than `trusted_for` a verification does not take one, unless the targets differ.

With `trusted_for` None every verification takes a full look. Target group facts (exists, the
same, ours to act on) are read by every verification before this: from the region snapshot,
in shared reads (targetgroups.py)."""

from __future__ import annotations

from collections.abc import Set

from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.targetgroups import TargetGroups
from controller.targetgroupbinding.targets import Target
from runtime.clock import Clock
from runtime.objects import Obj

# Seconds a checkpoint-timestamp may lie ahead of this clock (another replica's) and count.
CLOCK_SKEW = 60.0


class Verifications:
    def __init__(self, *, target_groups: TargetGroups, clock: Clock,
                 trusted_for: float | None) -> None:
        self._target_groups = target_groups
        self._clock = clock
        self.trusted_for = trusted_for
        # Binding key → (this process's monotonic time, target group ARN) of its last
        # comparison of registered targets with AWS.
        self._compared: dict[str, tuple[float, str]] = {}

    async def may_stop(self, key: str, tgb: Obj, arn: str, desired: Set[Target], *,
                       groups: TargetGroups | None = None) -> bool:
        """Whether a verification of the unchanged binding `tgb` (its checkpoint matches) may
        stop without a full look: its last full look is trusted, and its registered targets
        in `arn` are `desired` as this process last saw them or sees them now. Raises
        TargetGroupNotFound when the target group went since its facts were read. `groups`:
        the target groups as the binding's role sees them (the controller's own by default)."""
        if not self.full_look_trusted(tgb):
            return False
        if self.compared_lately(key, arn):
            return True
        current = await (groups or self._target_groups).current_targets(arn)
        if current != desired:
            return False  # drift, or targets others registered: the full look sorts it out
        self.compared(key, arn)
        return True

    def full_look_trusted(self, tgb: Obj) -> bool:
        """The binding's last full look (its checkpoint-timestamp) is within the trusted time.
        A timestamp that is not a number, or lies ahead by more than clock skew, does not
        count: whoever can write the annotation can only make this binding look again."""
        if self.trusted_for is None:
            return False
        written = checkpoint.written_at(tgb)
        if written is None:
            return False
        age = self._clock.wall() - written
        return -CLOCK_SKEW <= age < self.trusted_for

    def compared(self, key: str, arn: str) -> None:
        """This process compared the binding's registered targets in `arn` with AWS (a full
        pass read them, from AWS or the health cache it keeps)."""
        self._compared[key] = (self._clock.now(), arn)

    def forget(self, key: str) -> None:
        self._compared.pop(key, None)

    def compared_lately(self, key: str, arn: str) -> bool:
        """This process compared the binding's targets in `arn` within the trusted time."""
        if self.trusted_for is None:
            return False
        last = self._compared.get(key)
        return (last is not None and last[1] == arn
                and self._clock.now() - last[0] < self.trusted_for)


__all__ = ["CLOCK_SKEW", "Verifications"]
