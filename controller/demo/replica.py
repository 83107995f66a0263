"""Controller replicas run in the demo process, each with its own client, AWS pool, metrics
registry and leader-election identity — two `aiolbc run` processes, minus the processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from controller import app
from controller.aws import AWSClientPool
from controller.config import ControllerConfig, parse_config
from controller.demo.standins import CLUSTER, REGION
from runtime.client import KubeClient
from runtime.manager import Manager


def replica_config(kubeconfig: Path, aws_url: str, vpc_id: str) -> ControllerConfig:
    # Short leader-election timings so the takeover happens while you watch.
    return parse_config([
        "--cluster-name", CLUSTER, "--kubeconfig", str(kubeconfig), "--aws-region", REGION,
        "--aws-vpc-id", vpc_id, "--aws-endpoint-url", aws_url,
        "--leader-election-namespace", "kube-system",
        "--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s",
        "--leader-election-retry-period", "0.5s",
        "--metrics-bind-addr", "0", "--health-probe-bind-addr", "0",
        "--checkpoint-verify-qps", "5", "--checkpoint-verify-burst", "5",
        "--checkpoint-max-wait", "60s",
    ])


class Replica:
    def __init__(self, name: str, config: ControllerConfig) -> None:
        self.name = name
        self.config = config
        self.registry = CollectorRegistry()
        self.manager: Manager | None = None
        self._task: asyncio.Task[int] | None = None
        self._client: KubeClient | None = None
        self._pool: AWSClientPool | None = None

    async def start(self) -> None:
        self._client = await KubeClient.from_kubeconfig(self.config.kubeconfig,
                                                        registry=self.registry)
        self._pool = AWSClientPool(app.aws_settings(self.config), registry=self.registry)
        self.manager = app.build_manager(self.config, self._client, self._pool,
                                         registry=self.registry, identity=self.name)
        self._task = asyncio.create_task(self.manager.run(), name=f"replica {self.name}")

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def leading(self) -> bool:
        return self.alive and self.manager is not None and self.manager.leading

    async def kill(self) -> None:
        """Die like SIGKILL: no graceful stop, no lease release."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._close()

    async def stop(self) -> int:
        code = 0
        if self.manager is not None and self._task is not None and not self._task.done():
            self.manager.stop()
            code = await self._task
        await self._close()
        return code

    async def _close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._client is not None:
            await self._client.close()
        self._pool, self._client, self._task = None, None, None

    def depth(self, controller: str, priority: int) -> float:
        value = self.registry.get_sample_value(
            "workqueue_depth", {"name": controller, "controller": controller,
                                "priority": str(priority)})
        return value or 0.0
