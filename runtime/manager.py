"""The Manager: one process's client, shared informers, controllers, leader election, event
recorder and HTTP endpoints, started and stopped in the right order.

Start-up (as controller-runtime's manager):
1. the metrics and probe servers, and the webhook server if one was added, on every replica (a
   standby is scraped, probed and serves admission webhooks too); `serve()` binds them all
   before anything else starts, so a taken port fails start-up at once;
2. the event recorder and every informer; `/readyz` turns ready once the caches are synced;
3. leader election, if enabled; controllers (and other leader-only runnables) start only while
   leading. A standby's informers stay synced, so a takeover starts warm: no relist, and every
   cached object is replayed to the controllers at once (see `Controller.watch`).

Shut-down:
- `stop()` (SIGTERM, SIGINT): controllers stop taking work and get `graceful_shutdown_timeout`
  to finish in-flight reconciles; then the lease is released, so a standby takes over within
  about one retry period; `run()` returns 0.
- leadership lost (no renewal within the renew deadline): every controller is cancelled at once
  — finishing a write could race the new leader — and `run()` returns 1, so the process exits
  non-zero and is restarted clean, as controller-runtime does "for safety".

Probes tell the kubelet different things:
- `/readyz` (check `informers`) fails until every cache is synced, and again while any informer
  cannot list or watch (its last attempt failed: API server unreachable, RBAC refused, 5xx).
  Nothing a restart would mend, so it is not a liveness failure: the replica stays up, keeps
  retrying, and is taken out of Service endpoints meanwhile.
- `/healthz` fails only when a restart would help: `leaderElection` when this replica believes
  it leads but has not renewed the lease for longer than the lease duration plus a grace
  period (client-go's HealthzAdaptor: the renew loop is stuck). A stalled event loop needs no
  check of its own: the probe server runs on that loop, so the probe times out. Leadership that
  is lost for good needs none either: `run()` returns 1 and the process exits.

Secure metrics (`metrics_secure`): `/metrics` over HTTPS with the certificate in
`metrics_cert_dir` (tls.crt, tls.key) or a self-signed one, for callers the API server
authenticates and authorizes (runtime/delegatedauth.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import CollectorRegistry

from runtime import heap, metrics
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.controller import Controller
from runtime.delegatedauth import DelegatedAuth
from runtime.events import EventRecorder
from runtime.heap import HeapSettings
from runtime.httpserver import MetricsServer, ProbeServer
from runtime.informer import InformerSettings, SharedInformer, SharedInformerFactory, Transform
from runtime.informer_metrics import register_informer_metrics
from runtime.labelselector import Selector
from runtime.leaderelection import LeaderElectionLost, LeaderElector
from runtime.namespaces import Namespaces
from runtime.prioritydecisions import Foreground
from runtime.resources import NAMESPACES, Resource
from runtime.servingcerts import load_server_context, self_signed_server_context

if TYPE_CHECKING:
    from runtime.webhook import WebhookServer

log = structlog.get_logger("manager")

LeaderRunnable = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    leader_election: bool = False
    leader_election_id: str = "aiolbc-leader"
    leader_election_namespace: str = "default"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str | None = None
    metrics_bind_address: str = "0"  # "0" disables, as controller-runtime
    metrics_secure: bool = False  # HTTPS, TokenReview + SubjectAccessReview for each caller
    metrics_cert_dir: str | None = None  # tls.crt and tls.key; None: self-signed
    health_probe_bind_address: str = "0"
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    event_component: str = "aiolbc"
    # Namespaced informers watch these namespaces (empty: all) that `namespace_selector`
    # matches (None: any); runtime/namespaces.py.
    watch_namespaces: frozenset[str] = frozenset()
    namespace_selector: Selector | None = None
    # A label selector every informer of a resource is scoped by (controller-runtime's
    # cache ByObject label): objects of that kind without the labels are not this process's.
    informer_selectors: Mapping[Resource, str] = field(default_factory=dict)
    informer_settings: InformerSettings | None = None
    # The garbage collector tuned for long-lived caches (runtime/heap.py). Process-wide: set by
    # a process's entry point, never by a test's Manager.
    heap: HeapSettings | None = None


class Manager:
    def __init__(self, client: KubeClient, *, options: ManagerOptions | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock | None = None) -> None:
        self.options = options or ManagerOptions()
        self.client = client
        self.clock: Clock = clock or RealClock()
        # The process-wide registry by default, where clients and pools created without one
        # also write, so that /metrics shows everything.
        self.registry = registry if registry is not None else metrics.default_registry()
        # Shared by the controllers: deferred priority decisions, and the informers' handlers
        # replaying their caches, give way to real changes.
        self.foreground = Foreground(clock=self.clock)
        foreground = self.foreground
        self.informers = SharedInformerFactory(client, settings=self.options.informer_settings,
                                               clock=self.clock, busy=lambda: foreground.busy)
        self.recorder = EventRecorder(client, component=self.options.event_component,
                                      clock=self.clock, registry=self.registry)
        self.metrics_server = self._metrics_server()
        self.probes = ProbeServer(bind_address=self.options.health_probe_bind_address)
        self.elector: LeaderElector | None = None
        if self.options.leader_election:
            self.elector = LeaderElector(
                client, name=self.options.leader_election_id,
                namespace=self.options.leader_election_namespace,
                identity=self.options.identity, lease_duration=self.options.lease_duration,
                renew_deadline=self.options.renew_deadline,
                retry_period=self.options.retry_period, clock=self.clock,
                registry=self.registry)
        self._controllers: list[Controller] = []
        self._namespaces: Namespaces | None = None
        self._runnables: list[LeaderRunnable] = []
        self._webhook_server: WebhookServer | None = None
        self._stopping: asyncio.Event | None = None
        self._leading = False
        self._serving = False
        self.probes.add_healthz_check("ping", lambda: True)
        self.probes.add_readyz_check("informers", self._informers_ready)
        if self.elector is not None:
            self.probes.add_healthz_check("leaderElection", self.elector.healthz_check())
        register_informer_metrics(self.registry, self.informers)

    def _metrics_server(self) -> MetricsServer:
        options = self.options
        if not options.metrics_secure:
            return MetricsServer(self.registry, bind_address=options.metrics_bind_address)
        # Raises CertificateError for an unusable certificate: start-up stops there.
        tls = (load_server_context(options.metrics_cert_dir) if options.metrics_cert_dir
               else self_signed_server_context())
        return MetricsServer(self.registry, bind_address=options.metrics_bind_address, tls=tls,
                             request_filter=DelegatedAuth(self.client, clock=self.clock))

    def _informers_ready(self) -> None:
        """Raises naming what is not ready; the probe server logs it, the body withholds it."""
        failing = [f"{i.name}: {i.reflector.last_error}" for i in self.informers.informers
                   if not i.reflector.healthy]
        if failing:
            raise RuntimeError("cannot list/watch " + "; ".join(failing))
        if not self.informers.has_synced:
            pending = [i.name for i in self.informers.informers if not i.has_synced]
            raise RuntimeError("caches not synced: " + ", ".join(pending))

    # ---- wiring -----------------------------------------------------------------------------

    def informer(self, resource: Resource, *, label_selector: str | None = None,
                 field_selector: str | None = None, transform: Transform | None = None,
                 start_after: Sequence[SharedInformer] = ()) -> SharedInformer:
        """The shared informer for `resource`, scoped to the served namespaces when it is
        namespaced (one namespace: its own scope; several, or a selector: one watch per
        namespace into one cache); `transform` and `start_after` as
        `SharedInformerFactory.informer`."""
        namespace, namespaces = None, None
        if resource.namespaced:
            names, selector = self.options.watch_namespaces, self.options.namespace_selector
            if selector is None and len(names) == 1:
                (namespace,) = names
            elif selector is not None or names:
                namespaces = self.served_namespaces()
        scoped = self.options.informer_selectors.get(resource)
        if scoped:
            label_selector = f"{scoped},{label_selector}" if label_selector else scoped
        return self.informers.informer(resource, namespace=namespace, namespaces=namespaces,
                                       label_selector=label_selector,
                                       field_selector=field_selector, transform=transform,
                                       start_after=start_after)

    def served_namespaces(self) -> Namespaces | None:
        """The namespaces served, None for all (one per manager: informers share it)."""
        names, selector = self.options.watch_namespaces, self.options.namespace_selector
        if not names and selector is None:
            return None
        if self._namespaces is None:
            source = self.informers.informer(NAMESPACES) if selector is not None else None
            self._namespaces = Namespaces(names=names, selector=selector, namespaces=source)
        return self._namespaces

    def add_controller(self, controller: Controller) -> None:
        self._controllers.append(controller)

    def add_leader_runnable(self, runnable: LeaderRunnable) -> None:
        """Something else that may act only while leading; it gets a stop event."""
        self._runnables.append(runnable)

    def add_webhook_server(self, server: WebhookServer) -> None:
        """Serve admission webhooks with the process on every replica, leader or not; `/readyz`
        includes a `webhook` check that passes once it serves TLS."""
        if self._webhook_server is not None:
            raise ValueError("the manager already has a webhook server")
        self._webhook_server = server
        self.probes.add_readyz_check("webhook", server.ready)

    @property
    def webhook_server(self) -> WebhookServer | None:
        return self._webhook_server

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers)

    @property
    def leading(self) -> bool:
        return self._leading

    # ---- lifecycle --------------------------------------------------------------------------

    def stop(self) -> None:
        """Graceful stop; safe to call from a signal handler and more than once."""
        if self._stopping is not None:
            self._stopping.set()
        if self.elector is not None:
            self.elector.stop()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("signal received; shutting down", signal=sig.name)
        self.stop()

    async def serve(self) -> None:
        """Bind the metrics, probe and webhook servers (idempotent). Raises `BindError` naming
        the server that could not listen; none is left listening."""
        if self._serving:
            return
        await self.metrics_server.start()
        try:
            await self.probes.start()
            if self._webhook_server is not None:
                await self._webhook_server.start()
        except BaseException:
            await self.probes.stop()
            await self.metrics_server.stop()
            raise
        self._serving = True
        log.info("serving",
                 metrics=self.metrics_server.url if self.metrics_server.enabled else "off",
                 probes=self.probes.url if self.probes.enabled else "off")

    async def run(self) -> int:
        """Run until stopped (0) or until leadership is lost or caches never sync (1)."""
        self._stopping = asyncio.Event()
        await self.serve()
        if self.options.heap is not None:
            heap.tune(self.options.heap)
        self.recorder.start()
        self.informers.start()
        scavenger: asyncio.Task[None] | None = None
        try:
            if not await self._wait_for_caches():
                return 0 if self._stopping.is_set() else 1
            if self.options.heap is not None:
                log.info("caches synced; heap frozen", objects=heap.freeze(self.options.heap))
                scavenger = asyncio.create_task(heap.scavenge(self.options.heap, self.clock),
                                                name="heap-scavenger")
            if self.elector is None:
                await self._lead(self._stopping)
                return 0
            log.info("waiting for leadership", lease=self.options.leader_election_id,
                     identity=self.elector.identity)
            try:
                await self.elector.run(self._lead)
            except LeaderElectionLost as exc:
                log.error("leader election lost; exiting", error=str(exc))
                return 1
            return 0
        finally:
            if scavenger is not None:
                scavenger.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await scavenger
            with contextlib.suppress(Exception):
                await self.recorder.stop()
            await self.informers.stop()
            if self._webhook_server is not None:
                await self._webhook_server.stop()
            await self.probes.stop()
            await self.metrics_server.stop()
            self._serving = False

    async def _wait_for_caches(self) -> bool:
        assert self._stopping is not None
        synced = asyncio.ensure_future(
            self.informers.wait_for_sync(self.options.cache_sync_timeout))
        stopped = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not synced.done():
            synced.cancel()
            return False
        if not synced.result():
            log.error("caches did not sync", timeout=self.options.cache_sync_timeout,
                      pending=[i.name for i in self.informers.informers if not i.has_synced])
            return False
        return True

    async def _lead(self, stop: asyncio.Event) -> None:
        """Run the controllers until `stop` (graceful) or cancellation (leadership lost)."""
        self._leading = True
        log.info("started leading", controllers=[c.name for c in self._controllers])
        for controller in self._controllers:
            controller.start()
        runnables: list[asyncio.Task[None]] = [asyncio.create_task(r(stop))
                                               for r in self._runnables]
        try:
            await stop.wait()
        except asyncio.CancelledError:
            self._leading = False
            await asyncio.gather(*(c.abort() for c in self._controllers))
            for task in runnables:
                task.cancel()
            await asyncio.gather(*runnables, return_exceptions=True)
            raise
        grace = self.options.graceful_shutdown_timeout
        await asyncio.gather(*(c.stop(timeout=grace) for c in self._controllers))
        if runnables:
            _, pending = await asyncio.wait(runnables, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*runnables, return_exceptions=True)
        self._leading = False
        log.info("stopped leading")


def run_main(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run `main` on uvloop when it is installed (the asyncio loop otherwise)."""
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())
