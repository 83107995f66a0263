"""Controller replicas for the demo: real `aiolbc run` processes, so that killing the leader is
a real SIGKILL (no lease release, no clean-up) and stopping the last one a real SIGTERM.

Who leads is read the way an operator would: from each replica's `/metrics`
(`leader_election_master_status`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from controller.defaults import DEFAULT_LEADER_ELECTION_ID
from controller.demo.standins import CLUSTER, REGION

LEADER_METRIC = "leader_election_master_status"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CONTROLLER_NAMESPACE = "aiolbc-system"  # the installation's: the Lease, the webhook Secret


def replica_flags(kubeconfig: Path, aws_url: str, vpc_id: str) -> list[str]:
    # Short leader-election timings so the takeover happens while you watch; target health read
    # again every half second while pods wait for their readiness gates.
    return [
        "--cluster-name", CLUSTER, "--kubeconfig", str(kubeconfig), "--aws-region", REGION,
        "--aws-vpc-id", vpc_id, "--aws-endpoint-url", aws_url,
        "--leader-election-namespace", CONTROLLER_NAMESPACE,
        "--targetgroupbinding-requeue-duration", "0.5s",
        "--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s",
        "--leader-election-retry-period", "0.5s",
        "--checkpoint-verify-qps", "5", "--checkpoint-verify-burst", "5",
        "--checkpoint-max-wait", "60s", "--log-level", "info",
    ]


class Replica:
    def __init__(self, name: str, flags: list[str], workdir: Path) -> None:
        self.name = name
        self._flags = flags
        self.log = workdir / f"{name}.log"
        self._proc: asyncio.subprocess.Process | None = None
        self._metrics_port = 0
        self.webhook_port = 0  # where its admission webhooks are served (self-managed TLS)

    async def start(self) -> None:
        self._metrics_port = _free_port()
        self.webhook_port = _free_port()
        aiolbc = Path(sys.executable).parent / "aiolbc"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo",
               "AWS_DEFAULT_REGION": REGION}
        with self.log.open("wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                str(aiolbc), "run", *self._flags,
                "--metrics-bind-addr", f"127.0.0.1:{self._metrics_port}",
                "--health-probe-bind-addr", f"127.0.0.1:{_free_port()}",
                "--webhook-bind-host", "127.0.0.1", "--webhook-bind-port", str(self.webhook_port),
                "--webhook-cert-dir", str(self.log.parent / f"{self.name}-certs"),
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, env=env)

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def leading(self) -> bool:
        return await self.metric(LEADER_METRIC, name=DEFAULT_LEADER_ELECTION_ID) == 1.0

    async def metric(self, metric: str, /, **labels: str) -> float | None:
        """The sum of the samples of `metric` carrying `labels`, from the replica's metrics
        endpoint; None when it does not answer."""
        if not self.alive:
            return None
        url = f"http://127.0.0.1:{self._metrics_port}/metrics"
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http, \
                    http.get(url) as resp:
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError):
            return None
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == metric and all(sample.labels.get(k) == v
                                               for k, v in labels.items()):
                    total += sample.value
        return total

    async def kill(self) -> None:
        """SIGKILL: no graceful stop, no lease release."""
        if self.alive and self._proc is not None:
            self._proc.send_signal(signal.SIGKILL)
            await self._proc.wait()

    async def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, as Kubernetes does: finish in-flight work, release the lease, exit 0."""
        if self._proc is None:
            return None
        if self.alive:
            self._proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self._proc.wait(), timeout)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        return self._proc.returncode

    async def abandon(self) -> None:
        """Make sure nothing outlives the demo (used on errors and Ctrl-C)."""
        if self.alive and self._proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            await self._proc.wait()

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
