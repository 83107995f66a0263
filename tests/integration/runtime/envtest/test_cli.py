"""`python -m runtime.envtest`: writes a kubeconfig, prints the URL, exits 0 on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp
import yaml
from kubernetes_asyncio import client, config

from tests.integration.runtime.envtest.rawhttp import WIDGET_CRD


async def _run(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime.envtest", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


async def test_standalone_server(tmp_path: Path) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "widgets.yaml").write_text(yaml.safe_dump(WIDGET_CRD))
    kubeconfig = tmp_path / "kc.yaml"
    proc = await _run("--port", "0", "--kubeconfig", str(kubeconfig), "--crds", str(crds))
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        url = (await asyncio.wait_for(proc.stdout.readline(), 15)).decode().strip()
        assert url.startswith("http://127.0.0.1:")
        api = await config.new_client_from_config(config_file=str(kubeconfig))
        async with api:
            namespaces = await client.CoreV1Api(api).list_namespace()
            assert "default" in [ns.metadata.name for ns in namespaces.items]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/apis/example.com/v1/widgets") as resp:
                assert resp.status == 200
            async with session.post(f"{url}/_envtest/faults", json={"status": 503}) as resp:
                assert resp.status == 200
            async with session.get(f"{url}/version") as resp:
                assert resp.status == 503
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
    stderr = (await proc.stderr.read()).decode()
    assert code == 0
    assert "Traceback" not in stderr


async def test_bad_flags_give_one_clear_error(tmp_path: Path) -> None:
    for args, message in [
        (("--port", "http", "--kubeconfig", str(tmp_path / "k")), "not a port number"),
        (("--port", "0"), "--kubeconfig"),
        (("--kubeconfig", str(tmp_path / "k"), "--crds", str(tmp_path / "missing")),
         "no such file or directory"),
    ]:
        proc = await _run(*args)
        _, err = await asyncio.wait_for(proc.communicate(), 15)
        text = err.decode()
        assert proc.returncode == 2
        assert message in text
        assert "Traceback" not in text
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Service\n")
    proc = await _run("--kubeconfig", str(tmp_path / "k"), "--crds", str(bad))
    _, err = await asyncio.wait_for(proc.communicate(), 15)
    assert proc.returncode == 1
    assert "expected only CustomResourceDefinition documents" in err.decode()
    assert "Traceback" not in err.decode()
