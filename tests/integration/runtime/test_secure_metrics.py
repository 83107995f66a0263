"""Secure metrics against the local API server with authorization on: HTTPS, each caller's token
reviewed (TokenReview) and its access to `get /metrics` checked (SubjectAccessReview) by the
controller's own identity; answers cached as controller-runtime caches them (tokens 1 min,
allowed 5 min, denied 30 s), on an injected clock."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from runtime import metrics
from runtime.client import KubeClient
from runtime.clock import FakeClock
from runtime.delegatedauth import DelegatedAuth
from runtime.envtest import EnvTestServer
from runtime.envtest.tls import self_signed
from runtime.httpserver import MetricsServer
from runtime.manager import Manager, ManagerOptions
from runtime.resources import Resource
from runtime.servingcerts import (
    CERT_FILE,
    KEY_FILE,
    CertificateError,
    load_server_context,
    self_signed_server_context,
)

RBAC = "rbac.authorization.k8s.io"
CLUSTERROLES = Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTERROLEBINDINGS = Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding",
                               namespaced=False)
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE  # the server's certificate is self-signed


def _binding(name: str, role: str, account: str) -> dict[str, Any]:
    namespace, _, sa = account.partition("/")
    return {"metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]}


@dataclass
class Cluster:
    server: EnvTestServer
    admin: KubeClient
    controller: KubeClient  # the controller's identity, allowed to review
    scraper: str  # a token allowed to get /metrics
    stranger: str  # a token of an account without that grant

    def reviews(self) -> int:
        return sum(1 for r in self.server.request_log
                   if r.path.endswith(("/tokenreviews", "/subjectaccessreviews")))

    async def grant(self, name: str, account: str) -> None:
        await self.admin.create(CLUSTERROLEBINDINGS, _binding(name, "metrics-reader", account))

    async def revoke(self, name: str) -> None:
        await self.admin.delete(CLUSTERROLEBINDINGS, name)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with EnvTestServer(rbac=True) as server:
        admin_kc = server.write_kubeconfig(tmp_path / "admin")
        controller_kc = server.write_kubeconfig(
            tmp_path / "controller", token=server.add_service_account("aiolbc-system", "aiolbc"))
        async with await KubeClient.from_kubeconfig(admin_kc) as admin, \
                await KubeClient.from_kubeconfig(controller_kc) as controller:
            # The grants a delegating server binds its identity to, from the bootstrap policy.
            await admin.create(CLUSTERROLEBINDINGS, _binding(
                "aiolbc-auth", "system:auth-delegator", "aiolbc-system/aiolbc"))
            await admin.create(CLUSTERROLES, {
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
            cluster = Cluster(server, admin, controller,
                              scraper=server.add_service_account("monitoring", "prometheus"),
                              stranger=server.add_service_account("monitoring", "stranger"))
            await cluster.grant("scraper", "monitoring/prometheus")
            yield cluster


@pytest.fixture
async def served(cluster: Cluster) -> AsyncIterator[tuple[MetricsServer, FakeClock]]:
    registry = metrics.new_registry()
    metrics.gauge(registry, "leader_election_master_status", "leader", ["name"]).labels(
        name="x").set(1)
    clock = FakeClock()
    server = MetricsServer(registry, bind_address="127.0.0.1:0",
                           tls=self_signed_server_context(),
                           request_filter=DelegatedAuth(cluster.controller, clock=clock))
    async with server:
        yield server, clock


async def scrape(url: str, token: str | None = None, *, scheme: str = "Bearer",
                 context: ssl.SSLContext = INSECURE) -> tuple[int, str]:
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as http, \
            http.get(f"{url}/metrics", headers=headers, ssl=context) as resp:
        return resp.status, await resp.text()


async def test_who_gets_the_metrics(cluster: Cluster,
                                    served: tuple[MetricsServer, FakeClock]) -> None:
    server, _ = served
    assert server.url.startswith("https://127.0.0.1:")
    assert await scrape(server.url) == (401, "Unauthorized\n")
    assert await scrape(server.url, "not-a-token") == (401, "Unauthorized\n")
    assert (await scrape(server.url, cluster.scraper, scheme="Basic"))[0] == 401
    assert await scrape(server.url, cluster.stranger) == (
        403, "Authorization denied for user system:serviceaccount:monitoring:stranger\n")
    status, body = await scrape(server.url, cluster.scraper)
    assert status == 200
    assert 'leader_election_master_status{name="x"} 1.0' in body
    # Plain HTTP gets nothing from a TLS listener.
    with pytest.raises(aiohttp.ClientError):
        async with aiohttp.ClientSession() as http, \
                http.get(server.url.replace("https:", "http:") + "/metrics") as resp:
            await resp.read()


async def test_answers_are_cached_and_expire(cluster: Cluster,
                                             served: tuple[MetricsServer, FakeClock]) -> None:
    server, clock = served
    assert (await scrape(server.url, cluster.scraper))[0] == 200
    reviews = cluster.reviews()
    assert reviews == 2  # one TokenReview, one SubjectAccessReview
    assert (await scrape(server.url, cluster.scraper))[0] == 200
    assert cluster.reviews() == reviews  # both answers cached

    await cluster.revoke("scraper")
    assert (await scrape(server.url, cluster.scraper))[0] == 200  # allowed for 5 minutes
    await clock.advance(301)
    assert (await scrape(server.url, cluster.scraper))[0] == 403

    assert (await scrape(server.url, cluster.stranger))[0] == 403
    await cluster.grant("stranger", "monitoring/stranger")
    assert (await scrape(server.url, cluster.stranger))[0] == 403  # denied for 30 seconds
    await clock.advance(31)
    assert (await scrape(server.url, cluster.stranger))[0] == 200


async def test_a_review_that_cannot_be_made_is_a_server_error(cluster: Cluster) -> None:
    """Without its grants the controller cannot ask: 500, so that scrapers see an outage and
    not a refusal."""
    await cluster.admin.delete(CLUSTERROLEBINDINGS, "aiolbc-auth")
    server = MetricsServer(CollectorRegistry(), bind_address="127.0.0.1:0",
                           tls=self_signed_server_context(),
                           request_filter=DelegatedAuth(cluster.controller))
    async with server:
        assert await scrape(server.url, cluster.scraper) == (500, "Authentication failed\n")
    assert any(d.resource == "tokenreviews" for d in cluster.server.denials)


async def test_a_certificate_directory_is_served_and_verifiable(tmp_path: Path) -> None:
    certificate = self_signed(host="127.0.0.1")
    (tmp_path / CERT_FILE).write_bytes(certificate.cert_pem)
    (tmp_path / KEY_FILE).write_bytes(certificate.key_pem)
    server = MetricsServer(CollectorRegistry(), bind_address="127.0.0.1:0",
                           tls=load_server_context(tmp_path))
    async with server:
        status, _ = await scrape(server.url, context=certificate.client_context())
        assert status == 200  # verified against the directory's certificate, no filter


def test_an_unusable_certificate_directory_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match=r"tls\.crt does not exist"):
        load_server_context(tmp_path)
    (tmp_path / CERT_FILE).write_text("not a certificate")
    (tmp_path / KEY_FILE).write_text("not a key")
    with pytest.raises(CertificateError, match="are not a usable certificate and key"):
        load_server_context(tmp_path)


async def test_the_manager_serves_secure_metrics(cluster: Cluster) -> None:
    manager = Manager(cluster.controller, registry=CollectorRegistry(), options=ManagerOptions(
        metrics_bind_address="127.0.0.1:0", metrics_secure=True))
    await manager.serve()
    try:
        url = manager.metrics_server.url
        assert url.startswith("https://")
        assert (await scrape(url))[0] == 401
        status, body = await scrape(url, cluster.scraper)
        assert status == 200
        assert "aiolbc_informer_synced" in body
    finally:
        await manager.metrics_server.stop()
        await manager.probes.stop()
