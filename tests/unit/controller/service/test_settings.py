"""The Service controller's settings from `aiolbc run`'s flags (the mapping lives in app.py)."""

from __future__ import annotations

import pytest

from controller.app import service_settings
from controller.config import ConfigError, parse_config


def test_settings_from_flags() -> None:
    config = parse_config([
        "--cluster-name", "prod", "--aws-vpc-id", "vpc-1", "--default-tags", "env=prod",
        "--default-load-balancer-scheme", "internet-facing", "--load-balancer-class", "x/nlb",
        "--service-max-concurrent-reconciles", "7", "--enable-checkpoints", "false",
        "--checkpoint-verify-qps", "3", "--checkpoint-verify-burst", "4",
        "--checkpoint-max-wait", "2m"])
    settings = service_settings(config, region="eu-west-1")
    assert settings.cluster.name == "prod"
    assert (settings.cluster.region, settings.cluster.vpc_id) == ("eu-west-1", "vpc-1")
    assert settings.deployer.cluster_name == "prod"
    assert settings.model.context.vpc_id == "vpc-1"
    assert settings.model.context.region == "eu-west-1"
    assert settings.config.load_balancer_class == "x/nlb"
    assert settings.defaults.scheme == "internet-facing"
    assert dict(settings.defaults.tags) == {"env": "prod"}
    assert (settings.config.max_concurrent_reconciles, settings.lanes.checkpoints) == (7, False)
    lanes = settings.lanes
    assert (lanes.verify_qps, lanes.verify_burst, lanes.verify_max_wait) == (3.0, 4, 120.0)
    assert settings.model.cluster.name == "prod"
    assert settings.model.defaults is settings.defaults


def test_vpc_is_required() -> None:
    with pytest.raises(ConfigError, match=r"^--aws-vpc-id: required by the Service controller$"):
        service_settings(parse_config(["--cluster-name", "prod"]), region="eu-west-1")


@pytest.mark.parametrize(("flags", "qps"), [
    ([], 5.0),  # the verification budget's default rate
    (["--checkpoint-verify-aws-qps", "8"], 8.0),
    (["--checkpoint-verify-aws-qps", "0"], 2.0),  # no budget: the lane keeps its own pace
    (["--checkpoint-verify-aws-qps", "8", "--checkpoint-verify-qps", "1.5"], 1.5),
])
def test_lane_pace_follows_the_verification_budget_unless_given(flags: list[str],
                                                                 qps: float) -> None:
    config = parse_config(["--cluster-name", "prod", "--aws-vpc-id", "vpc-1", *flags])
    assert service_settings(config, region="eu-west-1").lanes.verify_qps == qps


def test_an_empty_lane_pace_is_the_default() -> None:
    config = parse_config(["--cluster-name", "prod", "--aws-vpc-id", "vpc-1",
                           "--checkpoint-verify-qps", ""])
    assert service_settings(config, region="eu-west-1").lanes.verify_qps == 5.0
