"""The webhook server as anyone who can reach its port uses it: the whole controller, set up
from `aiolbc run` flags, its webhook server on loopback, and a client that sends it reviews
without the API server (nothing authenticates a caller of a webhook). What the reviews cost in
AWS is read in the fault proxy's log, with ELBv2's own request limits on."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from runtime.webhook.certs import issue_ca, issue_serving
from runtime.webhook.certwatcher import write_key_pair
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

MUTATE = "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
NAME = "aws-load-balancer-webhook-service.aiolbc-system.svc"
REVIEWS = 600
TARGET_GROUPS = 5


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serving_files(directory: Path) -> ssl.SSLContext:
    """A serving certificate in `directory` (`--webhook-tls-mode=files`); a client context
    that trusts it."""
    ca = issue_ca("abuse-test", now=time.time(), validity=3600)
    write_key_pair(directory, "tls.crt", "tls.key",
                   issue_serving(ca, (NAME,), now=time.time(), validity=3600))
    return ssl.create_default_context(cadata=ca.cert_pem.decode())


def mutate_review(arn: str) -> dict[str, Any]:
    """A new binding to default, as the API server would send it, but from anyone."""
    tgb = objects.target_group_binding(f"tgb-{uuid.uuid4().hex[:8]}", service="web", arn=arn,
                                       target_type=None, namespace="default")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "elbv2.k8s.aws", "version": "v1beta1", "kind": "TargetGroupBinding"},
        "resource": {"group": "elbv2.k8s.aws", "version": "v1beta1",
                     "resource": "targetgroupbindings"},
        "operation": "CREATE", "namespace": "default", "name": tgb["metadata"]["name"],
        "object": tgb}}


async def start_with_webhooks(cluster: Cluster, tmp_path: Path) -> tuple[int, ssl.SSLContext]:
    certs = tmp_path / "serving-certs"
    trust = serving_files(certs)
    port = free_port()
    manager = await cluster.start_app(
        "--webhook-bind-host", "127.0.0.1", "--webhook-bind-port", str(port),
        "--webhook-tls-mode", "files", "--webhook-cert-dir", str(certs))
    server = manager.webhook_server
    assert server is not None
    await eventually(server.ready)
    return port, trust


async def test_a_flood_of_reviews_costs_a_few_aws_calls_and_no_load_balancer_waits(
        cluster: Cluster, aws_proxy: AWSFaultProxy, tmp_path: Path) -> None:
    arns = [await cluster.target_group(f"flood-{i}") for i in range(TARGET_GROUPS)]
    port, trust = await start_with_webhooks(cluster, tmp_path)
    await cluster.settled()
    aws_proxy.enable_server_limits()  # ELBv2's Describe bucket: 40, then 10 a second
    aws_proxy.clear_log()

    answers: list[dict[str, Any]] = []

    async def flood() -> None:
        connector = aiohttp.TCPConnector(limit=100, ssl=trust)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def review(i: int) -> None:
                body = json.dumps(mutate_review(arns[i % TARGET_GROUPS])).encode()
                async with session.post(f"https://127.0.0.1:{port}{MUTATE}", data=body,
                                        headers={"Content-Type": "application/json"},
                                        server_hostname=NAME) as resp:
                    answers.append(await resp.json())
            await asyncio.gather(*(review(i) for i in range(REVIEWS)))

    attack = asyncio.create_task(flood())
    # A new NLB while the reviews pour in.
    started = time.monotonic()
    await cluster.nlb_service("web", {"aws-load-balancer-scheme": "internet-facing"})
    await eventually(lambda: _hostname(cluster, "web"), timeout=60)
    converged = time.monotonic() - started
    await attack

    assert len(answers) == REVIEWS
    defaulted = [a for a in answers if a["response"].get("patchType") == "JSONPatch"]
    assert len(defaulted) == REVIEWS  # every review answered in full, from the cache
    flooded = set(arns)
    reads = [r for r in aws_proxy.log
             if flooded & {*r.params.get("TargetGroupArns", ()), *r.params.get("ResourceArns", ())}
             and r.operation in ("DescribeTargetGroups", "DescribeTags")]
    # One DescribeTargetGroups and one DescribeTags per target group, however many reviews.
    assert len(reads) <= 2 * TARGET_GROUPS, [(r.operation, r.params) for r in reads]
    assert not [r for r in aws_proxy.log if r.outcome == "Throttling"]
    assert converged < 8.0, f"the NLB took {converged:.1f}s"


async def _hostname(cluster: Cluster, name: str) -> str | None:
    return objects.hostname(await cluster.find(SERVICES, name))
