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
    assert settings.cluster_name == "prod"
    assert (settings.region, settings.vpc_id) == ("eu-west-1", "vpc-1")
    assert settings.deployer.cluster_name == "prod"
    assert settings.model.context.vpc_id == "vpc-1"
    assert settings.model.context.region == "eu-west-1"
    assert settings.load_balancer_class == "x/nlb"
    assert settings.defaults.scheme == "internet-facing"
    assert dict(settings.defaults.tags) == {"env": "prod"}
    assert (settings.max_concurrent_reconciles, settings.lanes.checkpoints) == (7, False)
    lanes = settings.lanes
    assert (lanes.verify_qps, lanes.verify_burst, lanes.verify_max_wait) == (3.0, 4, 120.0)
    assert settings.model.cluster_name == "prod"
    assert settings.model.defaults is settings.defaults


def test_vpc_is_required() -> None:
    with pytest.raises(ConfigError, match=r"^--aws-vpc-id: required by the Service controller$"):
        service_settings(parse_config(["--cluster-name", "prod"]), region="eu-west-1")
