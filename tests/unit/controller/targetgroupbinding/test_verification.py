"""What a paced verification of an unchanged binding trusts, without AWS: the last full look
(its checkpoint-timestamp, within the trusted time and no further ahead than clock skew) and
this process's own comparisons of its targets (per binding and target group, within the
trusted time). The reads a verification makes when it trusts neither are in the integration
tests (test_trusted_targets.py); the pool here never reaches AWS, so any read would fail."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool
from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.targetgroups import TargetGroups
from controller.targetgroupbinding.targets import Target
from controller.targetgroupbinding.verification import CLOCK_SKEW, Verifications
from runtime.clock import FakeClock
from runtime.objects import Obj
from tests.support.aws import unreachable_aws
from tests.support.objects import target_group_binding

TRUSTED = 3600.0
ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/web/0123456789abcdef"
DESIRED = frozenset({Target("10.0.0.1", 8080)})


def _stamped(clock: FakeClock, age: float) -> Obj:
    tgb = target_group_binding("web", service="web", arn=ARN)
    tgb["metadata"]["annotations"] = checkpoint.patch(
        "digest/spec", clock.wall() - age)["metadata"]["annotations"]
    return tgb


async def test_a_full_look_is_trusted_within_the_trusted_time_only() -> None:
    clock = FakeClock()
    async with AWSClientPool(unreachable_aws(), registry=CollectorRegistry()) as pool:
        verifications = Verifications(target_groups=TargetGroups(pool, clock=clock),
                                      clock=clock, trusted_for=TRUSTED)
        assert verifications.full_look_trusted(_stamped(clock, 10))
        assert not verifications.full_look_trusted(_stamped(clock, TRUSTED + 1))
        assert verifications.full_look_trusted(_stamped(clock, -CLOCK_SKEW / 2))
        assert not verifications.full_look_trusted(_stamped(clock, -2 * CLOCK_SKEW))
        assert not verifications.full_look_trusted(target_group_binding("web", service="web"))
        untrusting = Verifications(target_groups=TargetGroups(pool, clock=clock), clock=clock,
                                   trusted_for=None)
        assert not untrusting.full_look_trusted(_stamped(clock, 0))


async def test_only_this_process_s_own_comparisons_let_a_verification_stop_unread() -> None:
    clock = FakeClock()
    async with AWSClientPool(unreachable_aws(), registry=CollectorRegistry()) as pool:
        verifications = Verifications(target_groups=TargetGroups(pool, clock=clock),
                                      clock=clock, trusted_for=TRUSTED)
        recent = _stamped(clock, 10)
        # An old full look: a full look is due whatever was compared; nothing is read here.
        verifications.compared("default/web", ARN)
        assert not await verifications.may_stop("default/web", _stamped(clock, 2 * TRUSTED),
                                                ARN, DESIRED)
        # A recent one, and a comparison of this process's: it stops without a read.
        assert await verifications.may_stop("default/web", recent, ARN, DESIRED)
        # A comparison of another target group, one too old, or one forgotten (the binding
        # went) does not count.
        other = Verifications(target_groups=TargetGroups(pool, clock=clock), clock=clock,
                              trusted_for=TRUSTED)
        other.compared("default/web", "other-arn")
        assert not other.compared_lately("default/web", ARN)
        verifications.forget("default/web")
        assert not verifications.compared_lately("default/web", ARN)
        verifications.compared("default/web", ARN)
        await clock.advance(TRUSTED - 1)
        assert verifications.compared_lately("default/web", ARN)
        await clock.advance(2)
        assert not verifications.compared_lately("default/web", ARN)
