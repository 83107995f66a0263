"""The Secrets Ingresses reference (OIDC client credentials, `auth-idp-oidc` `secretName` on an
Ingress or on a Service it routes to), each listed and watched by name in its own namespace.
No other Secret reaches the process: there is no cluster-wide Secret informer.

`ReferencedSecrets` keeps one small informer per referenced Secret (field selector
`metadata.name=<name>`, which the API server authorizes as a request for that one name), a
`store` the pure stage reads, and fans the Secrets' events out to the controller's handler (it
is the controller's Source for Secrets). The reference set follows the Ingress and Service
caches on every replica; the informers run only while this replica leads
(`run`, a leader runnable), and a Secret no longer referenced is dropped at once.

Unlike the shared informers these do not hold back the controller's start: a Secret that
cannot be read (RBAC narrowed by name, say) concerns only the Ingresses referencing it, which
wait for it (`wait`) and then report why (`unreadable`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

import structlog

from controller.ingress.annotations import oidc_secret_names
from controller.ingress.tlssecrets import tls_secret_names
from runtime.client import KubeClient
from runtime.clock import Clock
from runtime.errors import ApiError
from runtime.handlers import unwrap_tombstone
from runtime.informer import InformerSettings, SharedInformer
from runtime.objects import Obj, key_of, namespace_of
from runtime.resources import SECRETS
from runtime.store import Store

log = structlog.get_logger("ingress")


def _in_namespace(obj: Obj, names: list[str]) -> set[str]:
    namespace = namespace_of(obj)
    return {f"{namespace}/{name}" for name in names} if namespace else set()


def ingress_secrets(ing: Obj, services: Store, service_keys: list[str], *,
                    tls: bool = False) -> set[str]:
    """namespace/name of every Secret an Ingress may read OIDC credentials from: its own
    annotation's and those of the Services it routes to (a Service's annotation wins); with
    `tls` (`--enable-secret-certificates`) also its `spec.tls[].secretName` Secrets."""
    found = _in_namespace(ing, oidc_secret_names(ing))
    if tls:
        found |= _in_namespace(ing, tls_secret_names(ing))
    for key in service_keys:
        svc = services.get(key)
        if svc is not None:
            found |= _in_namespace(svc, oidc_secret_names(svc))
    return found


class _Events:
    """Adapts one informer's notifications to a callback taking the object (None: deleted)."""

    def __init__(self, react: Any) -> None:
        self._react = react

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        self._react(obj, False)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._react(new, False)

    def on_delete(self, obj: Any) -> None:
        self._react(unwrap_tombstone(obj), True)


class ReferencedSecrets:
    def __init__(self, client: KubeClient, *, clock: Clock | None = None,
                 settings: InformerSettings | None = None, tls: bool = False,
                 label_selector: str | None = None) -> None:
        self._client = client
        self.tls = tls  # TLS Secrets are referenced too (`ingress_secrets`)
        # --required-secrets-label: a Secret without the label is never listed, so it counts
        # as not found.
        self._label_selector = label_selector
        self._clock = clock
        self._settings = settings
        self.store = Store()
        self._informers: dict[str, SharedInformer] = {}
        self._sources: dict[str, frozenset[str]] = {}  # "ingress:…" / "service:…" → Secrets
        self._refs: Counter[str] = Counter()
        self._handlers: list[Any] = []
        self._running = False
        self._stopping: set[asyncio.Task[None]] = set()

    # ---- which Secrets are referenced ------------------------------------------------------

    def ingress_events(self, services: Store, service_keys: Any) -> _Events:
        """Feed from the Ingress informer; `service_keys(ing)` names its backend Services."""
        def react(ing: Obj, deleted: bool) -> None:
            keys = set() if deleted else ingress_secrets(ing, services, service_keys(ing),
                                                         tls=self.tls)
            self._set("ingress:" + key_of(ing), keys)
        return _Events(react)

    def service_events(self, ingresses: Store, service_index: str) -> _Events:
        """Feed from the Service informer: a Service's own annotation counts while an Ingress
        routes to it (`service_index` maps Ingresses to their Services)."""
        def react(svc: Obj, deleted: bool) -> None:
            key = key_of(svc)
            routed = not deleted and ingresses.indexed(service_index, key)
            self._set("service:" + key,
                      _in_namespace(svc, oidc_secret_names(svc)) if routed else set())
        return _Events(react)

    def _set(self, source: str, keys: set[str]) -> None:
        new = frozenset(keys)
        old = self._sources.get(source, frozenset())
        if new == old:
            return
        if new:
            self._sources[source] = new
        else:
            self._sources.pop(source, None)
        for key in new - old:
            self._refs[key] += 1
            if self._refs[key] == 1:
                self._watch(key)
        for key in old - new:
            self._refs[key] -= 1
            if self._refs[key] <= 0:
                del self._refs[key]
                self._unwatch(key)

    @property
    def referenced(self) -> frozenset[str]:
        return frozenset(self._refs)

    # ---- one informer per Secret -------------------------------------------------------------

    def _watch(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        informer = SharedInformer(self._client, SECRETS, namespace=namespace,
                                  field_selector=f"metadata.name={name}",
                                  label_selector=self._label_selector,
                                  settings=self._settings, clock=self._clock)
        informer.add_handler(_Events(lambda obj, deleted: self._mirror(key, obj, deleted)))
        self._informers[key] = informer
        if self._running:
            informer.start()

    def _unwatch(self, key: str) -> None:
        informer = self._informers.pop(key, None)
        if informer is not None and informer.started:
            with contextlib.suppress(RuntimeError):  # no loop: nothing runs to be stopped
                task = asyncio.get_running_loop().create_task(informer.stop())
                self._stopping.add(task)
                task.add_done_callback(self._stopping.discard)
        gone = self.store.delete(key)
        if gone is not None:
            self._fan_out("delete", gone)

    def _mirror(self, key: str, obj: Obj, deleted: bool) -> None:
        if key not in self._informers:
            return  # no longer referenced; its informer is stopping
        if deleted:
            if self.store.delete(key) is not None:
                self._fan_out("delete", obj)
            return
        old = self.store.upsert(obj)
        if old is None:
            self._fan_out("add", obj)
        else:
            self._fan_out("update", obj, old)

    def _fan_out(self, kind: str, obj: Obj, old: Obj | None = None) -> None:
        for handler in list(self._handlers):
            try:
                if kind == "add":
                    handler.on_add(obj, False)
                elif kind == "update":
                    handler.on_update(old, obj)
                else:
                    handler.on_delete(obj)
            except Exception:
                log.exception("secret event handler failed", secret=key_of(obj))

    # ---- the controller's Source ------------------------------------------------------------

    def add_handler(self, handler: Any) -> Any:
        self._handlers.append(handler)
        for obj in self.store.list():
            handler.on_add(obj, True)
        return handler

    def remove_handler(self, registration: Any) -> None:
        if registration in self._handlers:
            self._handlers.remove(registration)

    # ---- lifecycle and reads ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Leader runnable: watch every referenced Secret until `stop` (or cancellation)."""
        self._running = True
        for informer in self._informers.values():
            informer.start()
        try:
            await stop.wait()
        finally:
            self._running = False
            informers = list(self._informers.values())
            await asyncio.gather(*(i.stop() for i in informers), return_exceptions=True)

    def synced(self, key: str) -> bool:
        informer = self._informers.get(key)
        return informer is not None and informer.has_synced

    async def wait(self, keys: set[str], *, timeout: float) -> list[str]:
        """Wait until every Secret of `keys` was listed once; returns those that were not."""
        pending = [self._informers[k] for k in sorted(keys) if k in self._informers]
        if pending:
            await asyncio.gather(*(i.wait_for_sync(timeout) for i in pending))
        return [k for k in sorted(keys) if not self.synced(k)]

    async def unreadable(self, key: str) -> str:
        """Why Secret `key` has not been read: the answer to the very list its informer
        makes."""
        namespace, _, name = key.partition("/")
        try:
            await self._client.list(SECRETS, namespace, field_selector=f"metadata.name={name}",
                                    label_selector=self._label_selector, limit=1)
        except ApiError as exc:
            return f"Secret {key} cannot be read: {exc.message or exc}"
        return f"Secret {key} has not been read yet"

    def get(self, key: str) -> Obj | None:
        return self.store.get(key)


__all__ = ["ReferencedSecrets", "ingress_secrets"]
