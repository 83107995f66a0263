"""The Helm chart's output in a cluster: the real kubectl applies what the Helm engine renders
(the chart's CRDs, then its templates) to the local API server, and `aiolbc run` started with
the rendered Deployment's args leads and deploys a load balancer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from runtime.errors import NotFound
from runtime.objects import Obj
from runtime.resources import LEASES, SERVICES
from tests.support.chart import CHART, deployment_args, render
from tests.support.cluster import Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.kubectl import Kubectl
from tests.support.objects import hostname
from tests.support.waiting import eventually

NAMESPACE = "aiolbc-system"
POD_IP = "127.0.0.1"
LEASE = "aws-load-balancer-controller-leader"


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster()


async def test_the_rendered_chart_applies_and_its_args_run_the_controller(
        cluster: Cluster, tmp_path: Path) -> None:
    assert cluster.kubeconfig is not None
    home = tmp_path / "home"
    home.mkdir()
    kubectl = Kubectl(cluster.kubeconfig, home)
    docs = render({"clusterName": cluster.seed.cluster_name, "region": cluster.seed.region,
                   "vpcId": cluster.seed.vpc_id}, namespace=NAMESPACE)
    # As `helm install --create-namespace`: the namespace, the CRDs, then the templates.
    await kubectl("create", "namespace", NAMESPACE)
    await kubectl("apply", "-f", str(CHART / "crds"))
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    applied = await kubectl("apply", "-f", str(manifest))
    for what in ("deployment.apps/aiolbc created", "clusterrole.rbac.authorization.k8s.io/aiolbc "
                 "created", "ingressclass.networking.k8s.io/alb created",
                 "ingressclassparams.elbv2.k8s.aws/alb created",
                 "validatingwebhookconfiguration.admissionregistration.k8s.io/"
                 "aws-load-balancer-webhook created"):
        assert what in applied.stdout, applied.stdout
    shown = json.loads((await kubectl("get", "deployment", "aiolbc", "-n", NAMESPACE,
                                      "-o", "json")).stdout)
    assert shown["spec"]["replicas"] == 2

    # The container's command line, as the kubelet runs it in the pod; the pod's namespace
    # (POD_NAMESPACE from the downward API) is given as a flag here, and the servers go to
    # free ports (a pod has its own network namespace, this test does not).
    args = deployment_args(docs, {"POD_IP": POD_IP})
    assert args[0] == "run"
    run = await cluster.run(*args[1:], f"--leader-election-namespace={NAMESPACE}",
                            "--metrics-bind-addr=0", "--health-probe-bind-addr=0",
                            "--webhook-bind-port=0")
    try:
        assert run.manager is not None
        lease = await eventually(lambda: _lease(cluster),
                                 message="the chart's args did not take the Lease")
        assert lease["spec"]["holderIdentity"]
        await cluster.nlb_service("web")
        await eventually(lambda: _has_hostname(cluster, "web"), timeout=60,
                         message="no load balancer for the Service")
    finally:
        await run.kill()


async def _lease(cluster: Cluster) -> Obj | None:
    try:
        return await cluster.client.get(LEASES, LEASE, NAMESPACE)
    except NotFound:
        return None


async def _has_hostname(cluster: Cluster, name: str) -> bool:
    return hostname(await cluster.find(SERVICES, name)) is not None
