"""The checkpoints section: whether unchanged objects are told apart after a restart, the pace
of their verifications in the LOW lane, and the AWS budget they share."""

from __future__ import annotations

from dataclasses import dataclass

from controller.reconcilers import LaneSettings
from runtime import flagvalues
from runtime.flags import flag

# The lane's own pace when there is no verification budget to follow.
UNBUDGETED_VERIFY_QPS = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointConfig:
    enabled: bool = flag(
        "--enable-checkpoints", default=True, parse=flagvalues.parse_bool,
        help="skip unchanged objects after a restart, verifying them in a paced low-priority "
        "lane")
    # None: follow the verification budget (its rate; 2 when there is no budget).
    verify_qps: float | None = flag(
        "--checkpoint-verify-qps", default=None, parse=flagvalues.parse_float,
        check=flagvalues.greater_than(0),
        help="most verification reconciles per second per controller for checkpoint-matched "
        "objects (default: --checkpoint-verify-aws-qps, which paces them by their AWS calls; "
        "2 when that is 0)")
    verify_burst: int = flag(
        "--checkpoint-verify-burst", default=5, parse=flagvalues.parse_int,
        check=flagvalues.at_least(1),
        help="verification reconciles that may start at once")
    max_wait: float = flag(
        "--checkpoint-max-wait", default=600.0, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0),
        help="a deferred verification waits at most this long behind real changes")
    # 0 = no budget: verifications are paced by reconciles only.
    verify_aws_qps: float = flag(
        "--checkpoint-verify-aws-qps", default=5.0, parse=flagvalues.parse_float,
        check=flagvalues.at_least(0),
        help="AWS calls per second all verifications together may make (0: no limit)")
    verify_aws_burst: int = flag(
        "--checkpoint-verify-aws-burst", default=10, parse=flagvalues.parse_int,
        check=flagvalues.at_least(1), help="AWS calls verifications may make at once")

    @property
    def budget_qps(self) -> float | None:
        """The verification budget's rate; None when there is none (checkpoints off: no lane
        to pace, or a rate of 0)."""
        return self.verify_aws_qps if self.enabled and self.verify_aws_qps > 0 else None

    def lanes(self) -> LaneSettings:
        """By default a lane's pace is the verification budget's rate: every verification
        costs at least one AWS call, so the budget (which lets a verification start only once
        the calls of those before it are paid for) is what paces them, and a fixed count of
        reconciles per second would only hold back cheap ones (a TargetGroupBinding's
        verification costs about one call: at 2/s, 1,000 bindings took 500 s whatever the
        budget allowed)."""
        qps = self.verify_qps
        if qps is None:
            qps = self.verify_aws_qps or UNBUDGETED_VERIFY_QPS
        return LaneSettings(checkpoints=self.enabled, verify_qps=qps,
                            verify_burst=self.verify_burst, verify_max_wait=self.max_wait)


__all__ = ["UNBUDGETED_VERIFY_QPS", "CheckpointConfig"]
