"""Upstream's Helm chart, installed with its default values and a clusterName, starts
`aiolbc run`: the arguments its `templates/deployment.yaml` renders (aws-load-balancer-controller
v3.5.0) are written here as data. The chart gives no region and no VPC: the controller finds
them in the instance metadata service (the local IMDSv2 stand-in), as upstream does on EC2."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from controller.standins.imds import Instance, InstanceMetadataStandIn
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.waiting import eventually

CLUSTER_NAME = "{cluster}"
# `helm template aws-load-balancer-controller --set clusterName=...` at v3.5.0: every other
# argument of the template is behind a value that is empty, unset or its default by default
# (ingressClass: alb is the one set).
CHART_ARGS = (f"--cluster-name={CLUSTER_NAME}", "--ingress-class=alb")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        yield c


async def test_the_charts_default_arguments_start_the_controller(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = cluster.seed
    # The pod's environment on EC2: the metadata service (here the stand-in, at the address
    # the SDKs read from AWS_EC2_METADATA_SERVICE_ENDPOINT), the pod's namespace, no region.
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POD_NAMESPACE", cluster.namespace)
    async with InstanceMetadataStandIn(Instance(vpc_id=seed.vpc_id, region=seed.region)) as imds:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        args = [a.format(cluster=seed.cluster_name) for a in CHART_ARGS]
        # Outside a pod: where the API server and AWS are (`bare`), and the chart's ports
        # (:8080, :61779, 9443) on free loopback ports so that tests can run side by side.
        run = await cluster.run(
            *args, "--metrics-bind-addr=127.0.0.1:0", "--health-probe-bind-addr=127.0.0.1:0",
            "--webhook-bind-host=127.0.0.1", f"--webhook-bind-port={_free_port()}", bare=True)
        try:
            assert run.manager is not None
            assert ("GET", "/latest/meta-data/placement/region") in imds.requests
            await cluster.nlb_service("echo")

            async def deployed() -> bool:
                lbs = await cluster.aws.load_balancers()
                return any(lb.get("VpcId") == seed.vpc_id for lb in lbs)

            await eventually(deployed, timeout=60, message="no NLB for the Service")
            async with aiohttp.ClientSession() as http, http.get(
                    run.manager.metrics_server.url + "/metrics") as answer:
                assert answer.status == 200
                assert "controller_runtime_reconcile_total" in await answer.text()
        finally:
            await run.kill()
