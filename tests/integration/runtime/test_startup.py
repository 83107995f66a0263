"""`KubeClient.wait_for_server`, the start-up probe of `aiolbc run`: it retries an API server
that is not there yet, gives up with one line naming the server when the time is up, and does
not wait at all for credentials the server refuses."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.client import ApiServerUnavailable, KubeClient
from runtime.envtest import EnvTestServer
from tests.e2e.processes import free_port


def _kubeconfig(path: Path, server: str, token: str = "t") -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        f"users: [{{name: u, user: {{token: {token}}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    return path


async def test_a_server_that_comes_up_late_is_waited_for(tmp_path: Path) -> None:
    port = free_port()
    attempts = 0
    retried = asyncio.Event()

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Something listens but is no API server yet: every connection is dropped.
        nonlocal attempts
        attempts += 1
        if attempts >= 3:
            retried.set()
        writer.close()

    kubeconfig = _kubeconfig(tmp_path / "k", f"http://127.0.0.1:{port}")
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        not_yet = await asyncio.start_server(drop, "127.0.0.1", port)
        waiting = asyncio.create_task(client.wait_for_server(timeout=60, initial_delay=0.05,
                                                             max_delay=0.2))
        try:
            await asyncio.wait_for(retried.wait(), 30)
        finally:
            not_yet.close()
            await not_yet.wait_closed()
        assert not waiting.done()
        async with EnvTestServer(port=port):
            version = await asyncio.wait_for(waiting, 30)
    assert version.get("major")
    assert version.get("gitVersion")


async def test_an_absent_server_ends_with_one_line_naming_it(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with await KubeClient.from_kubeconfig(_kubeconfig(tmp_path / "k", url)) as client:
        with pytest.raises(ApiServerUnavailable) as info:
            await client.wait_for_server(timeout=0.3, initial_delay=0.05)
    message = str(info.value)
    assert message.startswith(f"cannot reach the API server at {url}: ")
    assert "\n" not in message


async def test_refused_credentials_are_not_waited_for(tmp_path: Path) -> None:
    async with EnvTestServer(rbac=True) as server:
        kubeconfig = _kubeconfig(tmp_path / "k", server.url, token="nobody-has-this")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            with pytest.raises(ApiServerUnavailable, match="refused the credentials"):
                # A day's timeout: only the immediate answer can end this test.
                await asyncio.wait_for(client.wait_for_server(timeout=86400), 10)
        assert len([r for r in server.request_log if r.path == "/version"]) == 1
