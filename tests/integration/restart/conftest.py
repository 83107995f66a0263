"""The restart tests' world: the local API server with the CRDs, moto freshly seeded, an
IngressClass, two Nodes on the seeded instances, a second certificate and a security group."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.standins import MotoStandIn
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from tests.integration.restart.world import CRDS, World


@pytest.fixture
async def world(moto_standin: MotoStandIn, tmp_path: Path) -> AsyncIterator[World]:
    moto_standin.reset()
    seed = moto_standin.seed(region="us-west-2")
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            w = World(server=server, client=client, moto=moto_standin, seed=seed,
                      kubeconfig=kubeconfig)
            await w.ingress_class("alb")
            await w.node("node-a", seed.instance_ids[0], {"pool": "a"})
            await w.node("node-b", seed.instance_ids[1], {"pool": "b"})
            acm, ec2 = w.aws("acm"), w.aws("ec2")
            try:
                w.extra["cert2"] = acm.request_certificate(
                    DomainName="*.other.example.com", ValidationMethod="DNS")["CertificateArn"]
                w.extra["security_group"] = ec2.create_security_group(
                    GroupName="by-hand", Description="made by hand", VpcId=seed.vpc_id
                )["GroupId"]
            finally:
                acm.close()
                ec2.close()
            yield w
