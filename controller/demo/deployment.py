"""A Deployment's rolling update, played against the local API server (which runs no Deployment
controller): pods of one revision replace those of the previous one under upstream's
`maxSurge` / `maxUnavailable` rules. A pod counts as available once it is Ready (the played
kubelet decides that, readiness gates included; minReadySeconds 0); a terminating pod no longer
counts at all, as in the real controller, so its replacement is created at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from runtime.client import KubeClient
from runtime.errors import NotFound
from runtime.objects import Obj, as_list, dig, is_deleting, labels_of, name_of
from runtime.resources import PODS

REVISION_LABEL = "demo.aiolbc/revision"


@dataclass(frozen=True, slots=True)
class RollingUpdate:
    max_surge: int = 1
    max_unavailable: int = 0

    def __post_init__(self) -> None:
        if self.max_surge < 0 or self.max_unavailable < 0 or not (
                self.max_surge or self.max_unavailable):
            raise ValueError("maxSurge and maxUnavailable cannot both be 0")


@dataclass
class PlayedDeployment:
    client: KubeClient
    namespace: str
    name: str
    replicas: int
    strategy: RollingUpdate = field(default_factory=RollingUpdate)
    termination_grace: int = 30  # terminationGracePeriodSeconds of its pods
    poll: float = 0.02
    created: int = 0

    def _pod(self, revision: str) -> Obj:
        self.created += 1
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{self.name}-{revision}-{self.created}", "namespace": self.namespace,
            "labels": {"app": self.name, REVISION_LABEL: revision}},
            "spec": {"terminationGracePeriodSeconds": self.termination_grace,
                     "containers": [{"name": "app", "image": "nginx"}]}}

    async def _pods(self) -> list[Obj]:
        listed = await self.client.list(PODS, self.namespace, label_selector=f"app={self.name}")
        return sorted(listed.get("items") or [], key=name_of)

    @staticmethod
    def available(pod: Obj) -> bool:
        return not is_deleting(pod) and any(
            isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
            for c in as_list(dig(pod, "status", "conditions")))

    async def rollout(self, revision: str, *, timeout: float = 120.0) -> None:
        """Replace every pod with one of `revision` and return once they are all available
        (also the first rollout: there is nothing to replace then)."""
        deadline = time.monotonic() + timeout
        while True:
            active = [p for p in await self._pods() if not is_deleting(p)]
            new = [p for p in active if labels_of(p).get(REVISION_LABEL) == revision]
            old = [p for p in active if labels_of(p).get(REVISION_LABEL) != revision]
            if len(new) == self.replicas and not old and all(map(self.available, new)):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the rollout of {self.name} to {revision} did not finish "
                                   f"within {timeout:g}s")
            room = self.replicas + self.strategy.max_surge - len(active)
            for _ in range(max(0, min(room, self.replicas - len(new)))):
                await self.client.create(PODS, self._pod(revision), self.namespace)
            available = sum(map(self.available, active))
            floor = self.replicas - self.strategy.max_unavailable
            # Unavailable old pods go first: removing them costs no availability.
            for pod in sorted(old, key=self.available):
                if self.available(pod):
                    if available - 1 < floor:
                        break
                    available -= 1
                with contextlib.suppress(NotFound):
                    await self.client.delete(PODS, name_of(pod), self.namespace)
            await asyncio.sleep(self.poll)


__all__ = ["REVISION_LABEL", "PlayedDeployment", "RollingUpdate"]
