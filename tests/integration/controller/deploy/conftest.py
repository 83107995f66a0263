"""Deployer fixtures: a deployer on the shared pool, and a plain botocore client on moto for
changes "by hand" and for inspection (it bypasses the proxy, so its calls are not logged)."""

from __future__ import annotations

import pytest

from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer
from controller.standins import AwsSeed
from tests.integration.controller.deploy.stacks import CLUSTER


@pytest.fixture
def deployer_settings(aws_seed: AwsSeed) -> DeployerSettings:
    return DeployerSettings(cluster_name=CLUSTER, in_use_backoff=0.01,
                            security_group_backoff=0.01)


@pytest.fixture
def deployer(aws_pool: AWSClientPool, deployer_settings: DeployerSettings) -> StackDeployer:
    return StackDeployer(aws_pool, deployer_settings)
