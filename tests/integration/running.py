"""What the controller test harnesses share: one Manager at a time, started, stopped, killed,
and waited on until it has had nothing to do for a while."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.manager import Manager, ManagerOptions
from tests.waiting import eventually

RESULTS = ("success", "error", "requeue", "requeue_after")


class RunsManager:
    """Mixed into a harness dataclass that has these fields (`manager`, `task` default None;
    `registry` a fresh CollectorRegistry). `default_controller` is what `reconciles()` counts
    when no controller is named."""

    client: KubeClient
    manager: Manager | None
    task: asyncio.Task[int] | None
    registry: CollectorRegistry
    default_controller: ClassVar[str]

    async def launch(self, setup: Callable[[Manager], object], *,
                     options: ManagerOptions | None = None,
                     client: KubeClient | None = None) -> Manager:
        """Run a new Manager (as `client`, default the harness's own) with what `setup` adds,
        and return once it leads."""
        self.registry = CollectorRegistry()
        manager = Manager(client or self.client, options=options or ManagerOptions(),
                          registry=self.registry)
        self.manager = manager
        setup(manager)
        self.task = asyncio.create_task(manager.run())
        await eventually(lambda: asyncio.sleep(0, self.manager is not None
                                               and self.manager.leading))
        return manager

    async def stop(self) -> int:
        """Stop gracefully (as on SIGTERM); the exit code."""
        assert self.manager is not None
        assert self.task is not None
        self.manager.stop()
        code = await asyncio.wait_for(self.task, 15)
        self.manager, self.task = None, None
        return code

    async def kill(self) -> None:
        """Lose the process: nothing graceful, in-memory caches gone."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.manager, self.task = None, None

    def reconciles(self, controller: str | None = None, result: str | None = None) -> float:
        """Reconciles finished so far by one controller, with one result or any."""
        name = controller or self.default_controller
        return sum(self.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": name, "result": r}) or 0.0
            for r in ((result,) if result else RESULTS))

    def _all_reconciles(self) -> float:
        if self.manager is None:
            return 0.0
        return sum(self.reconciles(c.name) for c in self.manager.controllers)

    async def settled(self, quiet: float = 0.4) -> None:
        """Wait until no controller has had anything to do for `quiet` seconds."""
        assert self.manager is not None
        loop = asyncio.get_running_loop()
        last, since = self._all_reconciles(), loop.time()
        while True:
            await asyncio.sleep(0.05)
            busy = any(len(c.queue) or c.queue.in_flight for c in self.manager.controllers)
            now = loop.time()
            if busy or self._all_reconciles() != last:
                last, since = self._all_reconciles(), now
            elif now - since >= quiet:
                return
