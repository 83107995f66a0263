"""`--aws-api-throttle` parsing, the default table, rule matching and the limiter on fake time."""

from __future__ import annotations

import asyncio

import pytest

from controller.aws import (
    DEFAULT_THROTTLE,
    ELBV2,
    AWSConfigError,
    ThrottleConfig,
    Throttler,
    ThrottleRule,
    parse_throttle,
)
from runtime.clock import FakeClock


def rules_of(config: ThrottleConfig, service_id: str) -> list[tuple[str, float, int]]:
    return [(r.operation, r.rate, r.burst) for r in config.rules if r.service_id == service_id]


def test_default_table_is_upstream_v3_2() -> None:
    assert rules_of(DEFAULT_THROTTLE, ELBV2) == [
        ("^RegisterTargets|^DeregisterTargets", 4, 20),
        ("^Describe.*", 50, 200),
        ("^Modify.*", 3, 20),
    ]
    assert rules_of(DEFAULT_THROTTLE, "WAFV2") == [
        ("^AssociateWebACL|DisassociateWebACL", 0.5, 1),
        ("^GetWebACLForResource|ListResourcesForWebACL", 1, 1),
    ]
    assert rules_of(DEFAULT_THROTTLE, "WAF Regional") == rules_of(DEFAULT_THROTTLE, "WAFV2")


def test_empty_string_gives_defaults() -> None:
    assert parse_throttle("") == DEFAULT_THROTTLE
    assert parse_throttle("  ") == DEFAULT_THROTTLE


def test_single_rule_replaces_all_defaults_of_its_service_only() -> None:
    config = parse_throttle("Elastic Load Balancing v2:^Describe.*=10:40")
    assert rules_of(config, ELBV2) == [("^Describe.*", 10.0, 40)]
    assert rules_of(config, "WAFV2") == rules_of(DEFAULT_THROTTLE, "WAFV2")
    # The default Register/Deregister and Modify buckets are gone with the override.
    assert config.rule_for(ELBV2, "RegisterTargets") is None
    assert config.rule_for(ELBV2, "ModifyListener") is None


def test_several_rules_several_services_alternation_and_fractional_rates() -> None:
    config = parse_throttle(
        "Elastic Load Balancing v2:^RegisterTargets|^DeregisterTargets=2.5:10, "
        "Elastic Load Balancing v2:.*=0.25:3,EC2:Describe.*=100:200,ACM:ListCertificates=1:1")
    assert rules_of(config, ELBV2) == [
        ("^RegisterTargets|^DeregisterTargets", 2.5, 10), (".*", 0.25, 3)]
    assert rules_of(config, "EC2") == [("Describe.*", 100.0, 200)]
    assert rules_of(config, "ACM") == [("ListCertificates", 1.0, 1)]
    rule = config.rule_for(ELBV2, "DeregisterTargets")
    assert rule is not None
    assert rule.rate == 2.5
    assert str(rule) == "Elastic Load Balancing v2:^RegisterTargets|^DeregisterTargets=2.5:10"


def test_regex_may_contain_colon_and_equals() -> None:
    config = parse_throttle("EC2:(?:Describe|Get)[A-Z]\\w{0}.*=3:4", defaults=ThrottleConfig())
    assert rules_of(config, "EC2") == [("(?:Describe|Get)[A-Z]\\w{0}.*", 3.0, 4)]
    assert config.rule_for("EC2", "GetConsoleOutput") is not None


@pytest.mark.parametrize(("text", "message"), [
    ("Elastic Load Balancing v2:^Describe.*",
     "invalid --aws-api-throttle entry 'Elastic Load Balancing v2:^Describe.*': missing '='"),
    ("Elastic Load Balancing v2:^Describe.*=fast:40",
     "rate 'fast' is not a number"),
    ("Elastic Load Balancing v2:^Describe.*=0:40", "rate '0' must be greater than 0"),
    ("Elastic Load Balancing v2:^Describe.*=-1:40", "rate '-1' must be greater than 0"),
    ("Elastic Load Balancing v2:^Describe.*=inf:40", "rate 'inf' is not a number"),
    ("Elastic Load Balancing v2:^Describe.*=10:0", "burst '0' must be at least 1"),
    ("Elastic Load Balancing v2:^Describe.*=10:2.5", "burst '2.5' is not an integer"),
    ("Elastic Load Balancing v2:^Describe(=10:40",
     "operation regex '^Describe(' is invalid: missing ), unterminated subpattern"),
    ("Elastic Load Balancing v2=10:40", "missing ':' between serviceID and operation regex"),
    ("Elastic Load Balancing v2:^Describe.*=10", "limits '10' must be rate:burst"),
    ("Elastic Load Balancing v2:^Describe.*=10:40:5", "limits '10:40:5' must be rate:burst"),
    (":^Describe.*=10:40", "empty serviceID"),
    ("EC2:=10:40", "empty operation regex"),
    ("EC2:Describe.*=1:2,,ACM:.*=1:2", "empty entry (expected comma-separated "
                                       "serviceID:operationRegex=rate:burst)"),
])
def test_invalid_strings_name_the_bad_part(text: str, message: str) -> None:
    with pytest.raises(AWSConfigError) as excinfo:
        parse_throttle(text)
    assert message in str(excinfo.value)


def test_bad_rule_built_in_code_is_rejected_too() -> None:
    with pytest.raises(AWSConfigError, match="operation regex '\\[' is invalid"):
        ThrottleRule("EC2", "[", 1, 1)
    with pytest.raises(AWSConfigError, match="burst must be an integer >= 1"):
        ThrottleRule("EC2", ".*", 1, 0)


def test_matching_is_anchored_on_the_whole_operation_name() -> None:
    config = parse_throttle("Elastic Load Balancing v2:Describe.*=1:1,"
                            "Elastic Load Balancing v2:^RegisterTargets|^DeregisterTargets=1:1")
    assert config.rule_for(ELBV2, "DescribeLoadBalancers") is not None
    assert config.rule_for(ELBV2, "XDescribe") is None
    assert config.rule_for(ELBV2, "RegisterTargets") is not None
    assert config.rule_for(ELBV2, "RegisterTargetsLater") is None
    assert config.rule_for(ELBV2, "PreDeregisterTargets") is None
    # Service ids must match exactly too.
    assert config.rule_for("EC2", "DescribeLoadBalancers") is None


def test_first_matching_rule_wins_in_written_order() -> None:
    config = parse_throttle("Elastic Load Balancing v2:.*=1:1,"
                            "Elastic Load Balancing v2:^Describe.*=9:9")
    rule = config.rule_for(ELBV2, "DescribeRules")
    assert rule is not None
    assert rule.operation == ".*"


def test_register_targets_is_charged_to_exactly_one_bucket() -> None:
    clock = FakeClock()
    throttler = Throttler(parse_throttle(
        "Elastic Load Balancing v2:^RegisterTargets|^DeregisterTargets=4:20,"
        "Elastic Load Balancing v2:.*=10:40"), clock=clock)
    register = throttler.bucket_for(ELBV2, "RegisterTargets")
    everything = throttler.bucket_for(ELBV2, "DescribeTargetHealth")
    assert register is not None
    assert everything is not None
    assert register is not everything
    for _ in range(20):
        assert throttler.reserve(ELBV2, "RegisterTargets") == 0.0
    assert register.tokens() == pytest.approx(0.0)
    assert everything.tokens() == pytest.approx(40.0)
    # The 21st register waits for its own bucket's refill (1/4 s), not the catch-all's.
    assert throttler.reserve(ELBV2, "RegisterTargets") == pytest.approx(0.25)
    assert throttler.reserve(ELBV2, "DescribeTargetHealth") == 0.0
    assert everything.tokens() == pytest.approx(39.0)


def test_unmatched_operations_are_not_throttled() -> None:
    throttler = Throttler(DEFAULT_THROTTLE, clock=FakeClock())
    assert throttler.bucket_for(ELBV2, "CreateLoadBalancer") is None
    assert all(throttler.reserve(ELBV2, "CreateLoadBalancer") == 0.0 for _ in range(1000))


async def test_limiter_paces_a_burst_of_calls_on_fake_time() -> None:
    clock = FakeClock()
    throttler = Throttler(parse_throttle("Elastic Load Balancing v2:^Describe.*=20:5"),
                          clock=clock)
    done: list[float] = []

    async def call() -> None:
        await throttler.wait(ELBV2, "DescribeLoadBalancers")
        done.append(clock.now())

    start = clock.now()
    tasks = [asyncio.create_task(call()) for _ in range(60)]
    await clock.advance(0)
    assert len(done) == 5  # the burst goes at once
    await clock.advance(1.0)
    assert len(done) == 25  # then 20 per second
    await clock.advance(1.0)
    assert len(done) == 45
    await clock.advance(0.7)
    assert len(done) == 59
    await clock.advance(0.05)
    assert len(done) == 60
    await asyncio.gather(*tasks)
    assert max(done) - start == pytest.approx((60 - 5) / 20)


async def test_yielding_callers_never_delay_queueing_ones() -> None:
    # Verifications (yield_) compete with a real change (queues) for a 10/s Describe bucket.
    clock = FakeClock()
    throttler = Throttler(parse_throttle("Elastic Load Balancing v2:^Describe.*=10:1"),
                          clock=clock)
    low_done: list[float] = []
    normal_done: list[float] = []

    async def call(out: list[float], *, yield_: bool) -> None:
        await throttler.wait(ELBV2, "DescribeRules", yield_=yield_)
        out.append(clock.now())

    low = [asyncio.create_task(call(low_done, yield_=True)) for _ in range(40)]
    await clock.advance(0)
    await clock.advance(1.0)
    assert 9 <= len(low_done) <= 11  # the verifications use the bucket while no one else does
    start = clock.now()
    normal = [asyncio.create_task(call(normal_done, yield_=False)) for _ in range(5)]
    before = len(low_done)
    await clock.advance(0.55)
    # The real change's five calls took the next five tokens; the backlog of thirty yielding
    # calls ahead of them in time made no difference, and no verification slipped in between.
    assert len(normal_done) == 5
    assert max(normal_done) - start <= 0.5 + 1e-6
    assert len(low_done) - before <= 1
    await clock.advance(5.0)
    assert len(low_done) == 40
    await asyncio.gather(*low, *normal)


async def test_queueing_callers_delay_each_other_in_order() -> None:
    # The contrast: without yield_, callers that came first are served first (a backlog of
    # verifications would have delayed the real change by 3 s here).
    clock = FakeClock()
    throttler = Throttler(parse_throttle("Elastic Load Balancing v2:^Describe.*=10:1"),
                          clock=clock)
    done: list[str] = []

    async def call(name: str) -> None:
        await throttler.wait(ELBV2, "DescribeRules")
        done.append(name)

    tasks = [asyncio.create_task(call(f"low{i}")) for i in range(30)]
    await clock.advance(0)
    tasks.append(asyncio.create_task(call("normal")))
    await clock.advance(1.0)
    assert "normal" not in done
    await clock.advance(3.0)
    assert done[-1] == "normal"
    await asyncio.gather(*tasks)
