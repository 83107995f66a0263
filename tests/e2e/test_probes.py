"""The real `aiolbc run` process as the kubelet and a scraper see it: `/readyz` turns false while
the API server refuses an informer's list and watch, and true again once it stops, with
`/healthz` true throughout and the process never exiting; with `--metrics-secure` and the
installation's own metrics roles, `/metrics` answers a bound scraper over HTTPS and nobody
else."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from runtime.client import KubeClient
from runtime.resources import Resource
from tests.e2e.processes import ControllerProcess, EnvTestProcess, controller_environment
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
CRDS = MANIFESTS / "crds"
UNREACHABLE = "http://127.0.0.1:9"
FOREVER = 1_000_000
RBAC = "rbac.authorization.k8s.io"
KINDS = {"ClusterRole": Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
         "ClusterRoleBinding": Resource(RBAC, "v1", "clusterrolebindings",
                                        "ClusterRoleBinding", namespaced=False)}


def _flags(kubeconfig: Path) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", "--cluster-name=e2e", "--aws-region=us-west-2",
            "--aws-vpc-id=vpc-0123456789abcdef0", f"--aws-endpoint-url={UNREACHABLE}",
            "--enable-leader-election=false"]


async def _status(http: aiohttp.ClientSession, url: str, **kwargs: Any) -> int:
    try:
        async with http.get(url, **kwargs) as resp:
            return resp.status
    except aiohttp.ClientError:
        return 0


@pytest.mark.slow
async def test_readiness_follows_the_api_server_and_liveness_does_not(tmp_path: Path) -> None:
    envtest = EnvTestProcess(tmp_path, crds=[CRDS])
    controller: ControllerProcess | None = None
    try:
        await envtest.start()
        controller = ControllerProcess("aiolbc", tmp_path, flags=_flags(envtest.kubeconfig),
                                       env=controller_environment())
        await controller.start()
        health = f"http://127.0.0.1:{controller.health_port}"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            async def ready() -> bool:
                assert controller is not None
                return await controller.ready(http)

            await eventually(ready, timeout=60, message="never ready")
            for verb in ("list", "watch"):
                async with http.post(f"{envtest.url}/_envtest/faults", json={
                        "n": FOREVER, "verb": verb, "resource": "services",
                        "status": 500}) as resp:
                    resp.raise_for_status()
            async with http.post(f"{envtest.url}/_envtest/close-watches") as resp:
                resp.raise_for_status()

            async def not_ready() -> bool:
                return not await ready()

            await eventually(not_ready, timeout=60, message="/readyz stayed true")
            assert await _status(http, f"{health}/healthz") == 200
            assert await controller.metric(http, "aiolbc_informer_healthy",
                                           {"resource": "services"}) == 0
            assert await controller.metric(http, "aiolbc_informer_healthy",
                                           {"resource": "nodes"}) == 1
            assert await controller.metric(
                http, "aiolbc_informer_list_watch_failures_total", {"resource": "services"}) > 0

            async with http.delete(f"{envtest.url}/_envtest/faults") as resp:
                resp.raise_for_status()
            await eventually(ready, timeout=90, message="/readyz did not recover")
            assert controller.running, controller.log_tail()
    finally:
        if controller is not None:
            await controller.close()
        await envtest.close()


async def test_secure_metrics_with_the_installations_roles(tmp_path: Path) -> None:
    accounts = {"aiolbc-system/aiolbc": "controller-token",
                "monitoring/prometheus": "scraper-token", "monitoring/other": "other-token"}
    envtest = EnvTestProcess(tmp_path, crds=[CRDS], service_accounts=accounts)
    controller: ControllerProcess | None = None
    try:
        await envtest.start()
        async with await KubeClient.from_kubeconfig(envtest.kubeconfig) as admin:
            # Only what secure metrics need: the controller may review, the scraper may read.
            for name in ("rbac/metrics-auth-role.yaml", "deployment/metrics-auth-rolebinding.yaml",
                         "rbac/metrics-reader-role.yaml"):
                doc = yaml.safe_load((MANIFESTS / name).read_text())
                await admin.create(KINDS[doc["kind"]], doc)
            await admin.create(KINDS["ClusterRoleBinding"], {
                "metadata": {"name": "scraper"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                            "name": "aiolbc-metrics-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus",
                              "namespace": "monitoring"}]})
        controller = ControllerProcess(
            "aiolbc", tmp_path, flags=[*_flags(envtest.kubeconfig_for("controller-token")),
                                       "--metrics-secure"], env=controller_environment())
        await controller.start()
        url = f"https://127.0.0.1:{controller.metrics_port}/metrics"
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # self-signed at start

        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            async def status(token: str | None) -> int:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                return await _status(http, url, headers=headers, ssl=insecure)

            await eventually(lambda: _serving(status), timeout=60, message="no metrics")
            assert await status(None) == 401
            assert await status("made-up") == 401
            assert await status("other-token") == 403
            assert await status("scraper-token") == 200
            # Plain HTTP on the secure port gets no metrics.
            assert await _status(http, url.replace("https:", "http:")) != 200
    finally:
        if controller is not None:
            await controller.close()
        await envtest.close()


async def _serving(status: Any) -> bool:
    return bool(await status(None) == 401)
