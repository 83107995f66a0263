"""`aiolbc run` as the CLI runs it, inside the test's event loop: flags parsed by the CLI's
parser, the Manager built by `controller.app`, and each start a new process-level state (a new
Kubernetes client and informers, a new AWS client pool and deployer, nothing remembered from a
previous run). Killing it is losing the process: nothing graceful."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

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
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    _client: KubeClient | None = None
    _pool: AWSClientPool | None = None

    async def start(self) -> ControllerRun:
        config = await app.locate_region(parse_config(self.argv))
        self._client = await KubeClient.load(config.runtime.kubeconfig)
        # One registry for the pool and the manager, as `aiolbc run` has it: /metrics shows
        # the AWS families too.
        self._pool = AWSClientPool(app.aws_settings(config), registry=self.registry)
        # Where the flags do not say, the VPC is found as `aiolbc run` finds it.
        config = await app.locate_vpc(config, self._pool)
        self.manager = app.build_manager(config, self._client, self._pool,
                                         registry=self.registry)
        self.task = asyncio.create_task(self.manager.run())
        return self

    def _reconciles(self) -> float:
        assert self.manager is not None
        return sum(self.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": c.name, "result": r}) or 0.0
            for c in self.manager.controllers
            for r in ("success", "error", "requeue", "requeue_after"))

    async def settled(self, quiet: float = 0.5) -> None:
        """Wait until no controller has had anything to do for `quiet` seconds (a requeue
        waiting for later counts as something to do)."""
        assert self.manager is not None
        loop = asyncio.get_running_loop()
        last, since = self._reconciles(), loop.time()
        while True:
            await asyncio.sleep(0.05)
            busy = any(len(c.queue) or c.queue.in_flight or len(c.decisions)
                       for c in self.manager.controllers)
            now = loop.time()
            if busy or self._reconciles() != last:
                last, since = self._reconciles(), now
            elif now - since >= quiet:
                return

    async def kill(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
        if self._client is not None:
            await self._client.close()
        self.task = self.manager = self._pool = self._client = None
