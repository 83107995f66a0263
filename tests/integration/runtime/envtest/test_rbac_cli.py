"""`python -m runtime.envtest --rbac --token …`: HTTPS, an admin kubeconfig, declared tokens."""

from __future__ import annotations

import asyncio
import base64
import signal
import ssl
import sys
from pathlib import Path

import aiohttp
import yaml


async def _run(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime.envtest", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


async def test_standalone_rbac(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.yaml"
    proc = await _run("--kubeconfig", str(kubeconfig), "--rbac",
                      "--token", "robot-token=system:serviceaccount:default:robot",
                      "--token", "alice-token=alice,devs")
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        url = (await asyncio.wait_for(proc.stdout.readline(), 15)).decode().strip()
        assert url.startswith("https://127.0.0.1:")
        config = yaml.safe_load(kubeconfig.read_text())
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        admin_token = config["users"][0]["user"]["token"]
        context = ssl.create_default_context(cadata=ca.decode())
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as s:
            async def status(path: str, token: str | None) -> int:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with s.get(f"{url}{path}", headers=headers) as resp:
                    return resp.status
            assert await status("/api/v1/namespaces", None) == 401
            assert await status("/api/v1/namespaces", admin_token) == 200
            assert await status("/api/v1/namespaces", "robot-token") == 403
            assert await status("/version", "alice-token") == 200
            async with s.post(f"{url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                              json={"kind": "SelfSubjectReview"},
                              headers={"Authorization": "Bearer alice-token"}) as resp:
                who = (await resp.json())["status"]["userInfo"]
            assert who == {"username": "alice", "groups": ["devs", "system:authenticated"]}
            async with s.get(f"{url}/_envtest/denials") as resp:
                denials = await resp.json()
            assert [(d["user"], d["resource"]) for d in denials] == [
                ("system:serviceaccount:default:robot", "namespaces")]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
    assert code == 0


async def test_bad_token_flag_is_one_clear_error(tmp_path: Path) -> None:
    for spec, words in (("no-equals-sign", "expected TOKEN=USER"),
                        ("t=system:serviceaccount:onlyone", "NAMESPACE:NAME"),
                        ("t=alice,,devs", "empty user or group")):
        proc = await _run("--kubeconfig", str(tmp_path / "kc"), "--rbac", "--token", spec)
        _, err = await asyncio.wait_for(proc.communicate(), 15)
        text = err.decode()
        assert proc.returncode == 2
        assert words in text
        assert "Traceback" not in text
