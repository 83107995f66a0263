"""Real processes for end-to-end tests: the local API server (`python -m runtime.envtest`) and
`aiolbc run` replicas, observed only from outside — their HTTP endpoints (metrics, probes,
envtest's admin API) and exit codes, as an operator would."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import ssl
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

BIN = Path(sys.executable).parent
AIOLBC = BIN / "aiolbc"
STOP_TIMEOUT = 10.0

_T = TypeVar("_T")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port




class Process:
    """One child process, its output in a log file; stopped for sure in `close()`."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: Path,
                 env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.proc: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None

    # Whether stdout is read by the test (a process announcing where it listens) or logged.
    reads_stdout = False

    async def start(self) -> None:
        self._log = self.log_path.open("ab")
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if self.reads_stdout else self._log,
            stderr=self._log, env=self.env)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        assert self.proc is not None
        return await asyncio.wait_for(self.proc.wait(), timeout)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def close(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time."""
        try:
            if self.running:
                self.signal(signal.SIGTERM)
                try:
                    await self.wait(STOP_TIMEOUT)
                except TimeoutError:
                    self.signal(signal.SIGKILL)
                    await self.wait(STOP_TIMEOUT)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None


class EnvTestProcess(Process):
    """`python -m runtime.envtest` on a free loopback port, with its admin endpoints."""

    def __init__(self, workdir: Path, *, crds: Sequence[Path], bookmark_interval: float = 0.5,
                 service_accounts: Mapping[str, str] | None = None) -> None:
        """`service_accounts` ("namespace/name" → token) turns RBAC (and TLS) on; the written
        kubeconfig is the admin's then, `kubeconfig_for(token)` anyone else's."""
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        argv = [sys.executable, "-m", "runtime.envtest", "--port", "0",
                "--kubeconfig", str(self.kubeconfig),
                "--bookmark-interval", str(bookmark_interval)]
        for path in crds:
            argv += ["--crds", str(path)]
        if service_accounts:
            argv.append("--rbac")
            for account, token in service_accounts.items():
                namespace, _, name = account.partition("/")
                argv += ["--token", f"{token}=system:serviceaccount:{namespace}:{name}"]
        super().__init__("envtest", argv, log_path=workdir / "envtest.log")
        self.url = ""

    reads_stdout = True  # the first line is the server's URL

    async def start(self) -> None:
        await super().start()
        assert self.proc is not None
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        self.url = line.decode().strip()
        assert self.url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")), \
            f"envtest did not start: {line!r}\n{self.log_tail()}"

    def ssl_context(self) -> ssl.SSLContext | None:
        """Trusts the server's self-signed certificate (with RBAC on, it serves HTTPS)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        data = config["clusters"][0]["cluster"].get("certificate-authority-data")
        if not data:
            return None
        return ssl.create_default_context(cadata=base64.b64decode(data).decode())

    def kubeconfig_for(self, token: str) -> Path:
        """The admin kubeconfig with another bearer token."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        for user in config["users"]:
            user["user"] = {"token": token}
        path = self.workdir / f"kubeconfig-{len(list(self.workdir.glob('kubeconfig-*')))}"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    async def denials(self, http: aiohttp.ClientSession) -> list[dict[str, Any]]:
        """Requests refused by RBAC (403)."""
        async with http.get(f"{self.url}/_envtest/denials") as resp:
            resp.raise_for_status()
            records: list[dict[str, Any]] = await resp.json()
            return records

    async def requests(self, http: aiohttp.ClientSession) -> list[dict[str, Any]]:
        async with http.get(f"{self.url}/_envtest/requests") as resp:
            resp.raise_for_status()
            records: list[dict[str, Any]] = await resp.json()
            return records

    async def clear_requests(self, http: aiohttp.ClientSession) -> None:
        async with http.delete(f"{self.url}/_envtest/requests") as resp:
            resp.raise_for_status()


class ControllerProcess(Process):
    """One `aiolbc run` replica with its own metrics and probe ports on loopback."""

    def __init__(self, name: str, workdir: Path, *, flags: Sequence[str],
                 env: Mapping[str, str]) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        argv = [str(AIOLBC), "run", "--webhook-bind-port=0", *flags,
                f"--metrics-bind-addr=127.0.0.1:{self.metrics_port}",
                f"--health-probe-bind-addr=127.0.0.1:{self.health_port}"]
        super().__init__(name, argv, log_path=workdir / f"{name}.log", env=env)

    async def scrape(self, http: aiohttp.ClientSession) -> dict[tuple[str, frozenset[
            tuple[str, str]]], float]:
        """Every sample of /metrics, keyed by (name, labels); {} while it is not serving."""
        try:
            async with http.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as resp:
                text = await resp.text()
        except aiohttp.ClientError:
            return {}
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return samples

    async def metric(self, http: aiohttp.ClientSession, name: str,
                     labels: Mapping[str, str] | None = None) -> float:
        """The sum of `name`'s samples matching `labels` (0 when absent)."""
        wanted = set((labels or {}).items())
        return sum(value for (sample, sample_labels), value in (await self.scrape(http))
                   .items() if sample == name and wanted <= sample_labels)

    async def leading(self, http: aiohttp.ClientSession) -> bool:
        return await self.metric(http, "leader_election_master_status") == 1.0

    async def ready(self, http: aiohttp.ClientSession) -> bool:
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(f"http://127.0.0.1:{self.health_port}/readyz") as resp:
                return resp.status == 200
        return False


def controller_environment(**extra: str) -> dict[str, str]:
    """The parent's environment with dummy AWS credentials and nothing that could reach AWS."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k not in ("KUBECONFIG",)}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_EC2_METADATA_DISABLED="true", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env
