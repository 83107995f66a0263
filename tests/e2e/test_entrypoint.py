"""The image's command line, without docker: the Dockerfile's ENTRYPOINT (its virtualenv's
`aiolbc`, here this one's) with the args the installation's Deployment gives it (rendered from
the Helm chart, which the kustomize tree's equal), as a real process against the local API
server. Its first log line names the version, its probes answer, and SIGTERM ends it with 0;
and every metric the chart's PrometheusRule queries is one such a process serves."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runtime.client import KubeClient
from runtime.resources import NAMESPACES
from runtime.webhook.certs import issue_ca, issue_serving
from tests.e2e.processes import EnvTestProcess, Process, controller_environment, free_port
from tests.support.chart import deployment_args, render
from tests.support.paths import CRDS, REPO
from tests.support.waiting import eventually

IMAGE_VENV = "/opt/aiolbc"  # where the Dockerfile installs aiolbc
NAMESPACE = "aiolbc-system"


def _exec_form(keyword: str) -> list[str]:
    """The last `keyword` instruction of the Dockerfile, in exec form."""
    found = re.findall(rf"^{keyword}\s+(\[.*\])\s*$", (REPO / "Dockerfile").read_text(),
                       re.MULTILINE)
    assert found, f"no {keyword} in exec form"
    value: list[str] = json.loads(found[-1])
    return value


def _image_env() -> dict[str, str]:
    """The final stage's ENV (PYTHONUNBUFFERED, ...), PATH left to this machine."""
    text = (REPO / "Dockerfile").read_text()
    final = text[text.rindex("\nFROM "):]
    block = re.search(r"^ENV (.*?)(?<!\\)$", final, re.MULTILINE | re.DOTALL)
    assert block is not None
    pairs = re.findall(r"([A-Z_]+)=(\S+)", block.group(1).replace("\\\n", " "))
    return {k: v for k, v in pairs if k != "PATH"}


async def _version_line(process: Process) -> str | None:
    lines = process.log_path.read_text(errors="replace").splitlines()
    return lines[0] if lines else None


@contextlib.asynccontextmanager
async def _running(tmp_path: Path, values: dict[str, Any], *local: str
                   ) -> AsyncIterator[tuple[Process, int, int]]:
    """The image's command line with the args the chart renders from `values`, against a
    local API server; the process, its probe port and its metrics port."""
    entrypoint = _exec_form("ENTRYPOINT")
    assert entrypoint[0].startswith(f"{IMAGE_VENV}/")
    here = str(Path(sys.executable).parent.parent)
    command = [here + entrypoint[0].removeprefix(IMAGE_VENV), *entrypoint[1:]]
    assert _exec_form("CMD") == ["run"]
    envtest = EnvTestProcess(tmp_path, crds=[CRDS])
    await envtest.start()
    controller: Process | None = None
    try:
        async with await KubeClient.from_kubeconfig(envtest.kubeconfig) as client:
            await client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        args = deployment_args(render({"clusterName": "e2e", "region": "us-west-2",
                                       "vpcId": "vpc-0123456789abcdef0", **values},
                                      namespace=NAMESPACE), {"POD_IP": "127.0.0.1"})
        assert args[0] == "run"  # the Deployment's args replace CMD, as in the image
        health, metrics = free_port(), free_port()
        # What the pod has and this machine does not: its own network (free ports here), the
        # API server's address and the AWS endpoint; the rest is the Deployment's.
        env = controller_environment(POD_NAMESPACE=NAMESPACE, **_image_env())
        controller = Process("aiolbc", [
            *command, *args, f"--kubeconfig={envtest.kubeconfig}",
            "--aws-endpoint-url=http://127.0.0.1:9", f"--metrics-bind-addr=127.0.0.1:{metrics}",
            f"--health-probe-bind-addr=127.0.0.1:{health}", *local],
            log_path=tmp_path / "aiolbc.log", env=env)
        await controller.start()
        yield controller, health, metrics
    finally:
        if controller is not None:
            await controller.close()
        await envtest.close()


async def _answers(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(url) as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


@pytest.mark.slow
async def test_the_images_entrypoint_starts_with_the_installations_args(
        tmp_path: Path) -> None:
    async with _running(tmp_path, {}, "--webhook-bind-port=0") as (controller, health, _), \
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        first = await eventually(lambda: _version_line(controller), timeout=30,
                                 message="no log line")
        assert json.loads(first)["version"] == metadata.version("aiolbc")
        for path in ("/healthz", "/readyz"):
            await eventually(partial(_answers, http, f"http://127.0.0.1:{health}{path}"),
                             timeout=30, message=f"{path} not OK:\n{controller.log_tail()}")
        controller.signal(signal.SIGTERM)
        assert await controller.wait() == 0, controller.log_tail()


@pytest.mark.slow
async def test_the_alerts_query_metrics_a_running_controller_serves(tmp_path: Path) -> None:
    # Plain metrics (to scrape them without a token) and the webhook serving certificate from
    # files (as with cert-manager or webhookTLS), so that its certificate watcher serves too.
    certs = tmp_path / "certs"
    certs.mkdir()
    ca = issue_ca("test-ca", now=time.time(), validity=3600)
    pair = issue_serving(ca, ["localhost"], now=time.time(), validity=3600)
    (certs / "tls.crt").write_bytes(pair.cert_pem)
    (certs / "tls.key").write_bytes(pair.key_pem)
    values = {"metricsSecure": False, "enableCertManager": True}
    async with _running(tmp_path, values, f"--webhook-cert-dir={certs}",
                        f"--webhook-bind-port={free_port()}") as (controller, _, metrics), \
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        url = f"http://127.0.0.1:{metrics}/metrics"
        await eventually(lambda: _answers(http, url), timeout=30,
                         message=f"no metrics:\n{controller.log_tail()}")
        async with http.get(url) as resp:
            served = _served(await resp.text())
    rendered = render({"clusterName": "e2e", "prometheusRule": {"enabled": True}},
                      namespace=NAMESPACE)
    [rule] = [d for d in rendered if d["kind"] == "PrometheusRule"]
    exprs = [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]
    queried = {name for expr in exprs for name in re.findall(r"\b([a-z_][a-z0-9_]*)\{", expr)}
    assert {"controller_runtime_reconcile_errors_total", "aws_api_calls_total",
            "workqueue_depth", "leader_election_master_status",
            "certwatcher_read_certificate_errors_total",
            "certwatcher_certificate_expiry_timestamp_seconds"} <= queried
    assert sorted(queried - served) == []


def _served(text: str) -> set[str]:
    """Every series name the scraped families can carry (a counter's with `_total`)."""
    names = set()
    for family in text_string_to_metric_families(text):
        names |= {sample.name for sample in family.samples}
        names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names
