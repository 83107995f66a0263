"""ServiceSettings from `aiolbc run`'s flags."""

from __future__ import annotations

import pytest

from controller.config import ConfigError, parse_config
from controller.service.controller import ServiceSettings


def test_settings_from_flags() -> None:
    config = parse_config([
        "--cluster-name", "prod", "--aws-vpc-id", "vpc-1", "--default-tags", "env=prod",
        "--default-load-balancer-scheme", "internet-facing", "--load-balancer-class", "x/nlb",
        "--service-max-concurrent-reconciles", "7", "--enable-checkpoints", "false",
        "--checkpoint-verify-qps", "3", "--checkpoint-verify-burst", "4",
        "--checkpoint-max-wait", "2m"])
    settings = ServiceSettings.from_config(config, region="eu-west-1")
    assert settings.cluster_name == "prod"
    assert (settings.region, settings.vpc_id) == ("eu-west-1", "vpc-1")
    assert settings.deployer.cluster_name == "prod"
    assert settings.model.context.vpc_id == "vpc-1"
    assert settings.model.context.region == "eu-west-1"
    assert settings.load_balancer_class == "x/nlb"
    assert settings.defaults.scheme == "internet-facing"
    assert dict(settings.defaults.tags) == {"env": "prod"}
    assert (settings.max_concurrent_reconciles, settings.checkpoints) == (7, False)
    assert (settings.verify_qps, settings.verify_burst, settings.verify_max_wait) == (
        3.0, 4, 120.0)
    assert settings.model.cluster_name == "prod"
    assert settings.model.defaults is settings.defaults


def test_vpc_is_required() -> None:
    with pytest.raises(ConfigError, match=r"^--aws-vpc-id: required by the Service controller$"):
        ServiceSettings.from_config(parse_config(["--cluster-name", "prod"]), region="eu-west-1")
