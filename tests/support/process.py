"""`aiolbc run` as the CLI runs it, inside the test's event loop: flags parsed by the CLI's
parser, the Manager built by `controller.app`, and each start a new process-level state (a new
Kubernetes client and informers, a new AWS client pool and deployer, nothing remembered from a
previous run). Killing it is losing the process: nothing graceful."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from controller import app
from controller.aws import AWSClientPool
from controller.config import parse_config
from runtime.client import KubeClient
from runtime.manager import Manager


@dataclass
class ControllerRun:
    """One `aiolbc run` with `argv`: start it, wait, kill it (as a crash)."""

    argv: list[str]
    manager: Manager | None = None
    task: asyncio.Task[int] | None = None
    _client: KubeClient | None = None
    _pool: AWSClientPool | None = None

    async def start(self) -> ControllerRun:
        config = parse_config(self.argv)
        self._client = await KubeClient.load(config.kubeconfig)
        self._pool = AWSClientPool(app.aws_settings(config), registry=CollectorRegistry())
        self.manager = app.build_manager(config, self._client, self._pool,
                                         registry=CollectorRegistry())
        self.task = asyncio.create_task(self.manager.run())
        return self

    async def kill(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
        if self._client is not None:
            await self._client.close()
        self.task = self.manager = self._pool = self._client = None
