"""The admission webhook server: HTTPS (TLS 1.2+) on one port, a handler per path.

Served by every replica, leader or not, as controller-runtime's webhook server. A handler gets
an `AdmissionRequest` and returns an `AdmissionResponse`; the server does the rest:

- connections hold the server only so long, and only so many of them
  (`runtime/connections.py`: header, body and idle timeouts, `max_connections`);
- bodies that are not a usable AdmissionReview never reach a handler: wrong method 405, too
  large 413, sent too slowly 408, a content type other than JSON, an empty body, malformed
  JSON or the wrong kind/version 400 (controller-runtime's code for all of these), each
  with a `Status` body whose message the API server shows in its "failed calling webhook"
  error;
- every call is answered well inside the API server's timeout (its `?timeout=`, 10 s when it
  says none): a handler gets `answer_within` of it (half), and one that has not answered by
  then, or raises, is answered as its webhook's failurePolicy would have the API server do
  (`register(..., failure_policy=)`): "Fail" is a denial with code 500 (controller-runtime's
  answer to a recovered panic), "Ignore" admits with a warning saying what was skipped. A
  handler left to run into the API server's own timeout would race it: whether the caller saw
  the handler's late answer or the failurePolicy would be luck. Neither takes the server down;
- the answer uses the review's own apiVersion (v1, or v1beta1 as upstream's webhook
  configurations ask for);
- the certificate comes from `cert_dir` and is reloaded when its files change, for new
  connections; with a `SelfManagedCertificates` the server writes those files itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry

from runtime import metrics as registry_helpers
from runtime.connections import ConnectionGuard, ConnectionLimits
from runtime.httpserver import BindError, bind_failure
from runtime.webhook.admission import (
    AdmissionRequest,
    AdmissionResponse,
    ReviewError,
    allowed,
    encode_review,
    errored,
    parse_review,
)
from runtime.webhook.certs import KeyPair
from runtime.webhook.certwatcher import CertWatcher, ServingCertificate, write_key_pair
from runtime.webhook.metrics import CertificateMetrics, HookMetrics

if TYPE_CHECKING:
    from runtime.webhook.selfmanaged import SelfManagedCertificates

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_PORT",
    "FailurePolicy",
    "Handler",
    "WebhookServer",
    "WebhookServerOptions",
]

log = structlog.get_logger("webhook")

DEFAULT_PORT = 9443
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
# The API server takes request bodies up to 3 MiB, and a review carries the object twice
# (object and oldObject) plus metadata: controller-runtime's limit.
DEFAULT_MAX_REQUEST_BYTES = 7 * 1024 * 1024

# The API server's timeout for a call that does not say (`?timeout=`): the default
# timeoutSeconds of admissionregistration/v1; and the longest it allows.
DEFAULT_API_TIMEOUT: Final = 10.0
MAX_API_TIMEOUT: Final = 30.0

Handler = Callable[[AdmissionRequest], AdmissionResponse | Awaitable[AdmissionResponse]]
# What the webhook configuration says the API server does when a call fails: how the server
# answers for a handler that fails or runs out of time.
FailurePolicy = Literal["Fail", "Ignore"]

_GO_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookServerOptions:
    host: str | None = None  # None: every interface
    port: int = DEFAULT_PORT  # 0 picks a free port (tests)
    cert_dir: str = DEFAULT_CERT_DIR
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    cert_poll_interval: float = 10.0
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    # Header, body and idle timeouts, and the bound on open connections.
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    # The share of the API server's timeout a handler gets: its answer must be back before the
    # API server gives up, over a network and a loaded event loop.
    answer_within: float = 0.5
    shutdown_timeout: float = 10.0

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"webhook port must be between 0 and 65535, not {self.port}")
        if self.cert_poll_interval <= 0 or self.shutdown_timeout <= 0:
            raise ValueError("webhook intervals and timeouts must be positive")
        if not 0 < self.answer_within <= 1:
            raise ValueError("answer_within is a share of the API server's timeout: (0, 1]")
        if self.max_request_bytes <= 0:
            raise ValueError("the webhook request size limit must be positive")


def _query_timeout(text: str | None) -> float | None:
    """The `?timeout=10s` the API server adds to every call (Go duration, as it writes it)."""
    match = _GO_DURATION.match(text or "")
    if match is None:
        return None
    seconds = float(match[1]) * _DURATION_UNITS[match[2]]
    return seconds if seconds > 0 else None


def _status(code: int, message: str) -> web.Response:
    """An HTTP error with a metav1.Status body: the API server reads its message."""
    reasons = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 408: "Timeout",
               413: "RequestEntityTooLarge"}
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reasons.get(code, "InternalError"), "code": code}
    return web.Response(status=code, body=json.dumps(body).encode(),
                        content_type="application/json")


class WebhookServer:
    def __init__(self, options: WebhookServerOptions | None = None, *,
                 registry: CollectorRegistry | None = None,
                 certificates: SelfManagedCertificates | None = None) -> None:
        self.options = options or WebhookServerOptions()
        self._registry = registry if registry is not None else \
            registry_helpers.default_registry()
        self._certificates = certificates
        cert_dir = Path(self.options.cert_dir)
        self._watcher = CertWatcher(cert_dir / self.options.cert_name,
                                    cert_dir / self.options.key_name,
                                    metrics=CertificateMetrics(self._registry))
        self._hooks: dict[str, _Hook] = {}
        self._runner: web.AppRunner | None = None
        self._guard: ConnectionGuard | None = None
        self._port: int | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # ---- wiring -----------------------------------------------------------------------------

    def register(self, path: str, handler: Handler, *,
                 failure_policy: FailurePolicy = "Fail") -> None:
        """Serve `handler` on `path` (exact match); allowed before or after `start()`.
        `failure_policy`: the one of the webhook configurations that call `path`."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path must start with '/': {path!r}")
        if path in self._hooks:
            raise ValueError(f"a webhook is already registered on {path}")
        if failure_policy not in ("Fail", "Ignore"):
            raise ValueError(f"failure policy must be Fail or Ignore, not {failure_policy!r}")
        self._hooks[path] = _Hook(handler, HookMetrics(self._registry, path), failure_policy)
        log.info("registered webhook", path=path, failure_policy=failure_policy)

    @property
    def paths(self) -> list[str]:
        return sorted(self._hooks)

    # ---- state ------------------------------------------------------------------------------

    @property
    def port(self) -> int | None:
        """The bound port once started (the real one when 0 was asked for)."""
        return self._port

    @property
    def certificate(self) -> ServingCertificate | None:
        """What new connections are served with; None until a certificate has loaded."""
        return self._watcher.current

    @property
    def connections(self) -> ConnectionGuard | None:
        """The open connections' guard while listening (its counts, for tests)."""
        return self._guard

    @property
    def serving(self) -> bool:
        return self._port is not None and self._watcher.current is not None

    def reload(self) -> bool:
        """Re-read the certificate files now; True when a new certificate was loaded."""
        return self._watcher.read()

    async def ready(self) -> bool:
        """Readiness: listening with a certificate, and a TLS handshake with it succeeds (as
        controller-runtime's StartedChecker dials the server)."""
        if not self.serving:
            return False
        assert self._port is not None
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE  # only that TLS works: trust is the caller's job
        host = self.options.host or "127.0.0.1"
        try:
            async with asyncio.timeout(2.0):
                _, writer = await asyncio.open_connection(host.strip("[]"), self._port,
                                                          ssl=client)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            log.info("webhook server not ready", error=str(exc) or type(exc).__name__)
            return False
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
        return True

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen now (a port conflict fails here), and serve TLS as soon as a certificate is
        loaded: at once from existing files, or when self-managed provisioning delivers one."""
        if self._runner is not None:
            return
        self._watcher.read()
        limits = self.options.limits
        guard = ConnectionGuard(limits, kind="webhooks", tls=self._listener_context())
        app = web.Application(client_max_size=self.options.max_request_bytes,
                              middlewares=[guard.middleware])
        app.router.add_route("*", "/{tail:.*}", self._serve)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=self.options.shutdown_timeout,
                               keepalive_timeout=limits.idle_timeout)
        await runner.setup()
        site = guard.site(runner, host=self.options.host, port=self.options.port)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            host = self.options.host
            shown = f"[{host}]" if host and ":" in host else (host or "")
            raise BindError("webhooks", f"{shown}:{self.options.port}", bind_failure(err, host),
                            err.errno) from err
        self._runner = runner
        self._guard = guard
        self._port = int(runner.addresses[0][1])
        log.info("serving webhooks", host=self.options.host or "", port=self._port,
                 paths=self.paths, certificate_loaded=self._watcher.current is not None)
        self._tasks.append(asyncio.create_task(self._poll_files(), name="webhook-certwatcher"))
        if self._certificates is not None:
            self._tasks.append(asyncio.create_task(
                self._certificates.run(self.install), name="webhook-certificates"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._guard = None
            self._port = None
            log.info("stopped serving webhooks")

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _listener_context(self) -> ssl.SSLContext:
        # The listening context only picks, per handshake, the context of the current
        # certificate: a reload never touches a context that connections already use.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.sni_callback = self._select_certificate
        return context

    def _select_certificate(self, conn: ssl.SSLObject, server_name: str | None,
                            _: ssl.SSLContext) -> int | None:
        current = self._watcher.current
        if current is None:
            return ssl.ALERT_DESCRIPTION_HANDSHAKE_FAILURE
        conn.context = current.context
        return None

    def install(self, pair: KeyPair) -> bool:
        """Serve `pair` to new connections: written to the cert files (atomically, only when
        they differ), then reloaded. Where self-managed provisioning delivers. True when a new
        certificate was loaded."""
        directory = Path(self.options.cert_dir)
        write_key_pair(directory, self.options.cert_name, self.options.key_name, pair)
        return self._watcher.read()

    async def _poll_files(self) -> None:
        while True:
            await asyncio.sleep(self.options.cert_poll_interval)
            self._watcher.read()

    # ---- requests ---------------------------------------------------------------------------

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        hook = self._hooks.get(request.path)
        if hook is None:
            return _status(404, f"no webhook is served on {request.path}")
        loop = asyncio.get_running_loop()
        started = loop.time()
        hook.metrics.in_flight.inc()
        try:
            response = await self._answer(request, hook, started)
        finally:
            hook.metrics.in_flight.dec()
            hook.metrics.latency.observe(loop.time() - started)
        hook.metrics.answered(response.status)
        return response

    async def _answer(self, request: web.Request, hook: _Hook, started: float) -> web.Response:
        if request.method != "POST":
            return _status(405, f"method {request.method} is not allowed: admission reviews "
                                "are POSTed")
        content_type = request.headers.get("Content-Type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return _status(400, f"contentType={content_type}, expected application/json")
        declared = request.content_length
        if declared is not None and declared > self.options.max_request_bytes:
            return self._too_large()
        body_timeout = self.options.limits.body_timeout
        try:
            async with asyncio.timeout(body_timeout):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large()
        except TimeoutError:
            return _status(408, f"the request body did not arrive within {body_timeout:g}s")
        try:
            api_version, review = parse_review(body)
        except ReviewError as exc:
            log.info("bad admission request", webhook=request.path, error=str(exc))
            return _status(exc.code, str(exc))
        api_timeout = min(_query_timeout(request.query.get("timeout")) or DEFAULT_API_TIMEOUT,
                          MAX_API_TIMEOUT)
        budget = api_timeout * self.options.answer_within
        deadline = started + budget
        response = await self._call(request.path, hook, review, deadline, budget)
        hook.metrics.admission(allowed=response.allowed, code=response.code)
        return web.Response(status=200, body=encode_review(api_version, review.uid, response),
                            content_type="application/json")

    def _too_large(self) -> web.Response:
        return _status(413, f"request body is larger than {self.options.max_request_bytes} "
                            "bytes")

    async def _call(self, path: str, hook: _Hook, review: AdmissionRequest, deadline: float,
                    budget: float) -> AdmissionResponse:
        try:
            async with asyncio.timeout_at(deadline):
                result: Any = hook.handler(review)
                if inspect.isawaitable(result):
                    result = await result
        except TimeoutError:
            log.warning("webhook handler out of time: answered as its failure policy says",
                        webhook=path, uid=review.uid, deadline=budget,
                        failure_policy=hook.failure_policy)
            return hook.failed(f"webhook {path} did not answer within {budget:g}s")
        except Exception as exc:
            hook.metrics.panics.inc()
            log.error("webhook handler failed", webhook=path, uid=review.uid,
                      failure_policy=hook.failure_policy,
                      error=f"{type(exc).__name__}: {exc}")
            return hook.failed(f"internal error in webhook {path}: "
                               f"{exc or type(exc).__name__}")
        if not isinstance(result, AdmissionResponse):
            hook.metrics.panics.inc()
            log.error("webhook handler returned no AdmissionResponse", webhook=path,
                      returned=type(result).__name__)
            return hook.failed(f"internal error in webhook {path}: no response")
        return result


@dataclass(frozen=True, slots=True)
class _Hook:
    handler: Handler
    metrics: HookMetrics
    failure_policy: FailurePolicy

    def failed(self, why: str) -> AdmissionResponse:
        """What the API server would make of a failed call, said by the server itself."""
        if self.failure_policy == "Ignore":
            return allowed(warnings=[f"{why}; admitted without this webhook's checks "
                                     "(failurePolicy Ignore)"])
        return errored(500, why)
