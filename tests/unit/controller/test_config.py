"""`aiolbc run` flags: upstream names and defaults, and one clear message per bad value."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.app import aws_settings
from controller.aws import DEFAULT_THROTTLE
from controller.config import ConfigError, parse_config, parse_duration


def test_defaults_match_upstream() -> None:
    cfg = parse_config(["--cluster-name", "prod"])
    assert cfg.cluster_name == "prod"
    assert cfg.ingress_class == "alb"
    assert cfg.load_balancer_class == "service.k8s.aws/nlb"
    assert cfg.leader_election_id == "aws-load-balancer-controller-leader"
    assert cfg.enable_leader_election is True
    assert cfg.metrics_bind_addr == ":8080"
    assert cfg.health_probe_bind_addr == ":61779"
    assert cfg.aws_api_throttle == DEFAULT_THROTTLE
    assert cfg.sync_period == 36000.0
    assert cfg.targetgroupbinding_max_exponential_backoff_delay == 1000.0
    assert cfg.ingress_max_concurrent_reconciles == 3
    assert cfg.aws_max_retries == 10
    assert cfg.default_ssl_policy == "ELBSecurityPolicy-2016-08"
    assert (cfg.leader_election_lease_duration, cfg.leader_election_renew_deadline,
            cfg.leader_election_retry_period) == (15.0, 10.0, 2.0)


def test_values_are_parsed() -> None:
    cfg = parse_config([
        "--cluster-name", "c", "--sync-period", "1h30m", "--metrics-bind-addr", "0",
        "--health-probe-bind-addr", "127.0.0.1:9000", "--default-tags", "team=a, env=prod",
        "--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*=5:10",
        "--enable-leader-election", "false", "--service-max-concurrent-reconciles", "7",
        "--aws-api-endpoints", "elbv2=http://127.0.0.1:5000",
    ])
    assert cfg.sync_period == 5400.0
    assert cfg.metrics_bind_addr == "0"
    assert cfg.health_probe_bind_addr == "127.0.0.1:9000"
    assert cfg.default_tags == {"team": "a", "env": "prod"}
    assert cfg.enable_leader_election is False
    assert cfg.service_max_concurrent_reconciles == 7
    assert cfg.aws_api_endpoints == {"elbv2": "http://127.0.0.1:5000"}
    assert cfg.aws_api_throttle != DEFAULT_THROTTLE


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sync-period", "ten hours"], "--sync-period: invalid duration"),
        (["--enable-leader-election", "maybe"], "--enable-leader-election: expected true or false"),
        (["--metrics-bind-addr", "localhost"], "--metrics-bind-addr: invalid bind address"),
        (["--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*=ten:40"],
         "invalid --aws-api-throttle entry"),
        (["--aws-api-endpoints", "elbv2"], "invalid --aws-api-endpoints entry 'elbv2'"),
        (["--default-tags", "novalue"], "--default-tags: expected key=value"),
        (["--ingress-max-concurrent-reconciles", "0"], "--ingress-max-concurrent-reconciles"),
        (["--default-target-type", "pod"], "--default-target-type"),
        (["--checkpoint-verify-qps", "-1"], "--checkpoint-verify-qps"),
        (["--checkpoint-verify-aws-qps", "-1"], "--checkpoint-verify-aws-qps"),
        (["--checkpoint-verify-aws-qps", "nan"], "--checkpoint-verify-aws-qps"),
        (["--checkpoint-verify-aws-burst", "0"], "--checkpoint-verify-aws-burst"),
    ],
)
def test_bad_values_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["--cluster-name", "c", *argv])
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_cluster_name_is_mandatory() -> None:
    with pytest.raises(SystemExit):
        parse_config([])


@pytest.mark.parametrize(("text", "seconds"), [
    ("15s", 15.0), ("16m40s", 1000.0), ("10h", 36000.0), ("300ms", 0.3), ("1.5s", 1.5),
    ("2", 2.0), ("1h0m0s", 3600.0),
])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@given(st.text(max_size=12))
def test_duration_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_duration(text) >= 0


def test_the_verification_budget_reaches_the_aws_pool_settings() -> None:
    base = ["--cluster-name", "c", "--aws-region", "us-west-2"]
    settings = aws_settings(parse_config(base))
    assert (settings.verify_calls_qps, settings.verify_calls_burst) == (5.0, 10)
    settings = aws_settings(parse_config([*base, "--checkpoint-verify-aws-qps", "2.5",
                                          "--checkpoint-verify-aws-burst", "3"]))
    assert (settings.verify_calls_qps, settings.verify_calls_burst) == (2.5, 3)
    # 0 turns the budget off; so do checkpoints off (no lane to pace).
    assert aws_settings(parse_config([*base, "--checkpoint-verify-aws-qps", "0"])
                        ).verify_calls_qps is None
    assert aws_settings(parse_config([*base, "--enable-checkpoints=false"])
                        ).verify_calls_qps is None
