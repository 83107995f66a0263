"""The image's command line, without docker: the Dockerfile's ENTRYPOINT (its virtualenv's
`aiolbc`, here this one's) with the args the installation's Deployment gives it (rendered from
the Helm chart, which the kustomize tree's equal), as a real process against the local API
server. Its first log line names the version, its probes answer, and SIGTERM ends it with 0."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from runtime.client import KubeClient
from runtime.resources import NAMESPACES
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


@pytest.mark.slow
async def test_the_images_entrypoint_starts_with_the_installations_args(
        tmp_path: Path) -> None:
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
                                       "vpcId": "vpc-0123456789abcdef0"},
                                      namespace=NAMESPACE), {"POD_IP": "127.0.0.1"})
        assert args[0] == "run"  # the Deployment's args replace CMD, as in the image
        health = free_port()
        # What the pod has and this machine does not: its own network (free ports here), the
        # API server's address and the AWS endpoint; the rest is the Deployment's.
        local = [f"--kubeconfig={envtest.kubeconfig}", "--aws-endpoint-url=http://127.0.0.1:9",
                 f"--metrics-bind-addr=127.0.0.1:{free_port()}",
                 f"--health-probe-bind-addr=127.0.0.1:{health}", "--webhook-bind-port=0"]
        env = controller_environment(POD_NAMESPACE=NAMESPACE, **_image_env())
        controller = Process("aiolbc", [*command, *args, *local],
                             log_path=tmp_path / "aiolbc.log", env=env)
        await controller.start()
        first = await eventually(lambda: _version_line(controller), timeout=30,
                                 message="no log line")
        assert json.loads(first)["msg"] == "starting aiolbc"
        assert json.loads(first)["version"] == "0.1.0"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            async def answers(path: str) -> bool:
                try:
                    async with http.get(f"http://127.0.0.1:{health}{path}") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await eventually(lambda: answers("/healthz"), timeout=30,
                             message=f"not live:\n{controller.log_tail()}")
            await eventually(lambda: answers("/readyz"), timeout=30,
                             message=f"not ready:\n{controller.log_tail()}")
        controller.signal(signal.SIGTERM)
        assert await controller.wait() == 0, controller.log_tail()
    finally:
        if controller is not None:
            await controller.close()
        await envtest.close()
