"""Deployer fixtures: a deployer on the shared pool, and a plain botocore client on moto for
changes "by hand" and for inspection (it bypasses the proxy, so its calls are not logged)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer
from controller.standins import AwsSeed, MotoStandIn, sync_client
from tests.integration.controller.deploy.stacks import CLUSTER


@pytest.fixture
def elbv2(moto_standin: MotoStandIn, aws_seed: AwsSeed) -> Iterator[Any]:
    client = sync_client("elbv2", moto_standin.url, region=aws_seed.region)
    yield client
    client.close()


@pytest.fixture
def deployer_settings(aws_seed: AwsSeed) -> DeployerSettings:
    return DeployerSettings(cluster_name=CLUSTER, in_use_backoff=0.01,
                            security_group_backoff=0.01)


@pytest.fixture
def deployer(aws_pool: AWSClientPool, deployer_settings: DeployerSettings) -> StackDeployer:
    return StackDeployer(aws_pool, deployer_settings)
