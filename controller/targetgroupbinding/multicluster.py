"""Multi-cluster target tracking: the targets this cluster registered into a shared target group,
recorded in a ConfigMap so that each cluster deregisters only its own.

Format (upstream-compatible, so upstream controllers and aiolbc can share a target group):
ConfigMap `aws-lbc-targets-<tgb name>` in the binding's namespace, key `targets`, the desired
target set as comma-separated `id:port`.

Rules (upstream):
- written before RegisterTargets (a registration that lands at AWS but loses its answer cannot
  leave an untracked target behind) and after a deregister-only pass;
- no ConfigMap yet → nothing is deregistered on that pass ("initial population");
- only tracked targets are ever deregistered.
Beyond upstream:
- writes are guarded by the resourceVersion last read or written. On a conflict the ConfigMap is
  read again and the entries someone else added meanwhile are kept: tracking too much can only
  keep a stale target registered a little longer, tracking too little would leak it forever;
- a write that would not change the set is skipped.
Limit: a ConfigMap deleted behind our back is recreated from the in-process cache at the next
write; deleted *and* the cache lost (a restart), the targets dropped meanwhile are unknown and
stay registered (the reconciler emits a `TrackingMissing` Warning Event).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runtime.client import KubeClient
from runtime.errors import Conflict, NotFound
from runtime.resources import CONFIGMAPS

CONFIGMAP_PREFIX = "aws-lbc-targets-"
TARGETS_KEY = "targets"
_MAX_WRITE_ATTEMPTS = 5


def configmap_name(tgb_name: str) -> str:
    return CONFIGMAP_PREFIX + tgb_name


def decode(data: str | None) -> frozenset[str]:
    return frozenset(part.strip() for part in (data or "").split(",") if part.strip())


def encode(targets: Iterable[str]) -> str:
    # Sorted although upstream writes a Go set in random order: equal sets give equal bytes,
    # which keeps diffs and watch traffic quiet.
    return ",".join(sorted(targets))


@dataclass(frozen=True, slots=True)
class _Tracked:
    resource_version: str
    targets: frozenset[str]


class TargetTracker:
    """Per-process cache of the tracking ConfigMaps, keyed `namespace/name` of the binding
    (upstream's later fix: `ns-name` could collide)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._cache: dict[str, _Tracked | None] = {}
        self.writes = 0  # ConfigMap create/update calls made, for tests and benchmarks

    async def _read(self, namespace: str, name: str) -> _Tracked | None:
        try:
            cm = await self._client.get(CONFIGMAPS, configmap_name(name), namespace)
        except NotFound:
            return None
        return _Tracked(str(cm["metadata"]["resourceVersion"]),
                        decode((cm.get("data") or {}).get(TARGETS_KEY)))

    async def tracked(self, namespace: str, name: str, *,
                      recheck: bool = False) -> frozenset[str] | None:
        """The tracked set, or None when no ConfigMap exists yet. `recheck`: a record this
        process knows of is read again, because its deletion (by an operator, to let a binding
        that is no longer multi-cluster own its target group alone) must be seen."""
        key = f"{namespace}/{name}"
        if key not in self._cache or (recheck and self._cache[key] is not None):
            self._cache[key] = await self._read(namespace, name)
        entry = self._cache[key]
        return None if entry is None else entry.targets

    async def write(self, namespace: str, name: str, desired: Iterable[str], *,
                    owner: dict[str, Any] | None = None) -> bool:
        """Record `desired` as this cluster's target set. Returns whether anything was written."""
        key = f"{namespace}/{name}"
        want = frozenset(desired)
        if key not in self._cache:
            self._cache[key] = await self._read(namespace, name)
        for _ in range(_MAX_WRITE_ATTEMPTS):
            base = self._cache[key]
            if base is not None and base.targets == want:
                return False
            try:
                self._cache[key] = await self._store(namespace, name, want, base, owner)
                self.writes += 1
                return True
            except (Conflict, NotFound):
                # AlreadyExists is a Conflict too: someone created it since we looked.
                fresh = await self._read(namespace, name)
                if fresh is not None and base is not None:
                    want = want | (fresh.targets - base.targets)
                elif fresh is not None:
                    want = want | fresh.targets
                self._cache[key] = fresh
        raise Conflict(f"configmap {namespace}/{configmap_name(name)} kept changing; "
                       f"gave up after {_MAX_WRITE_ATTEMPTS} attempts")

    async def _store(self, namespace: str, name: str, targets: frozenset[str],
                     base: _Tracked | None, owner: dict[str, Any] | None) -> _Tracked:
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": configmap_name(name), "namespace": namespace},
            "data": {TARGETS_KEY: encode(targets)},
        }
        if base is None:
            if owner is not None:
                body["metadata"]["ownerReferences"] = [owner]
            created = await self._client.create(CONFIGMAPS, body, namespace)
            return _Tracked(str(created["metadata"]["resourceVersion"]), targets)
        body["metadata"]["resourceVersion"] = base.resource_version
        updated = await self._client.update(CONFIGMAPS, body)
        return _Tracked(str(updated["metadata"]["resourceVersion"]), targets)

    async def cleanup(self, namespace: str, name: str) -> None:
        """Forget the binding and delete its ConfigMap (the binding is going away)."""
        self._cache.pop(f"{namespace}/{name}", None)
        with contextlib.suppress(NotFound):
            await self._client.delete(CONFIGMAPS, configmap_name(name), namespace)

    def forget(self, namespace: str, name: str) -> None:
        self._cache.pop(f"{namespace}/{name}", None)


def deregistrable(candidates: Iterable[str], tracked: frozenset[str] | None) -> list[str]:
    """Of the targets AWS has that we don't want, those this cluster may deregister."""
    if tracked is None:
        return []
    return sorted(t for t in candidates if t in tracked)


__all__ = ["TargetTracker", "configmap_name", "decode", "deregistrable",
           "encode"]
