"""A reverse proxy in front of the moto stand-in that injects AWS faults and records requests.

moto itself never throttles nor fails; this proxy makes it do so, per operation, so retries,
client-side throttles and error handling meet the answers real AWS gives:

- `inject(...)`: throttling (`Throttling`, `ThrottlingException`, `RequestLimitExceeded`),
  5xx (`ServiceUnavailable`, `InternalFailure`), any other error code, and added latency, at
  a rate (0..1, drawn from the injected `random.Random`) or for the next N matching requests.
- `enable_server_limits(...)`: a server-side token bucket per operation class, modelled on
  the published ELBv2 request limits; a request finding its bucket empty gets `Throttling`.
- `target_health=TargetHealthSettings(...)` (or `enable_target_health`): ELBv2 target health
  as AWS reports it (`initial`, `unused`, `draining`, ...) instead of moto's instant `healthy`;
  `target_health` is the model tests and the demo drive (`target_health.py`).
- `waf_regional`: AWS WAF Classic Regional, which moto lacks, answered here (`waf_regional.py`).
- `log`: one `RequestRecord` per HTTP request (each botocore retry is a request).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web

from controller.standins.aws_wire import (
    ERROR_STATUS,
    AWSRequest,
    error_code_of,
    error_response,
    identify,
    request_form,
)
from controller.standins.target_health import TargetHealth, TargetHealthSettings
from controller.standins.target_health_handler import TargetHealthHandler
from controller.standins.waf_regional import WAFRegional
from runtime.clock import Clock, RealClock
from runtime.tokenbucket import TokenBucket

_HOP_BY_HOP = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive",
    "proxy-connection", "te", "trailer", "upgrade",
})
_DEFAULT_MESSAGES = {
    "Throttling": "Rate exceeded",
    "ThrottlingException": "Rate exceeded",
    "RequestLimitExceeded": "Request limit exceeded.",
    "ServiceUnavailable": "Service is unavailable. Please try again later.",
    "InternalFailure": "The request processing has failed because of an unknown error.",
}


@dataclass(frozen=True)
class RequestRecord:
    time: float  # the proxy clock's `now()` when the request arrived
    service: str
    operation: str
    params: dict[str, Any]  # a subset: ARNs and, for (De)RegisterTargets, "id[:port]" targets
    outcome: str  # "ok" or the AWS error code answered
    status: int
    mutating: bool
    # "upstream" (moto answered), "injected" (a fault), "limit" (server bucket) or
    # "target-health" (the target-health model answered)
    source: str


@dataclass(eq=False)
class Fault:
    """An injected fault. `error=None` injects latency only. Matching requests fire it with
    probability `rate`; with `count`, only the next `count` firings happen."""

    error: str | None = None
    operation: str = ".*"  # regex, matched against the whole operation name
    service: str | None = None  # botocore name (elbv2, ec2, acm); None = any
    rate: float = 1.0
    count: int | None = None
    latency: float = 0.0
    status: int | None = None  # default: 503/500 for the 5xx codes, else 400
    message: str | None = None
    fired: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be within 0..1, got {self.rate}")
        if self.count is not None and self.count < 0:
            raise ValueError(f"fault count must be >= 0, got {self.count}")
        if self.latency < 0:
            raise ValueError(f"fault latency must be >= 0, got {self.latency}")
        self._pattern = re.compile(self.operation)

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def matches(self, request: AWSRequest) -> bool:
        return ((self.service is None or self.service == request.service)
                and self._pattern.fullmatch(request.operation) is not None)

    def http_status(self) -> int:
        if self.status is not None:
            return self.status
        return ERROR_STATUS.get(self.error or "", 400)


@dataclass(frozen=True)
class OperationClass:
    name: str
    operation: str  # regex, matched against the whole operation name
    rate: float  # tokens per second
    burst: int


@dataclass(frozen=True)
class ServerLimits:
    """Server-side buckets per operation class of one service; the first matching class is
    charged, operations no class matches are not limited (AWS publishes no number for them).

    Defaults: ELBv2's documented Describe bucket (40 tokens, 10/s) and the Register/Deregister
    and Modify buckets upstream's controller v3.2 reads from the same page (20 tokens, 4/s and
    3/s)."""

    service: str = "elbv2"
    classes: tuple[OperationClass, ...] = (
        OperationClass("register-targets", "RegisterTargets|DeregisterTargets", 4.0, 20),
        OperationClass("describe", "Describe.*", 10.0, 40),
        OperationClass("modify", "Modify.*", 3.0, 20),
    )
    error: str = "Throttling"
    message: str = "Rate exceeded"


class _LimitState:
    def __init__(self, limits: ServerLimits, clock: Clock) -> None:
        self.limits = limits
        self._classes = [(re.compile(c.operation), TokenBucket(rate=c.rate, burst=c.burst,
                                                               clock=clock))
                         for c in limits.classes]

    def admit(self, request: AWSRequest) -> bool:
        if request.service != self.limits.service:
            return True
        for pattern, bucket in self._classes:
            if pattern.fullmatch(request.operation):
                return bucket.try_take()
        return True


class AWSFaultProxy:
    """`async with AWSFaultProxy(moto_url) as proxy:` then point clients at `proxy.url`."""

    def __init__(self, upstream_url: str, *, clock: Clock | None = None,
                 rng: random.Random | None = None, host: str = "127.0.0.1",
                 port: int = 0, target_health: TargetHealthSettings | None = None) -> None:
        self._upstream = upstream_url.rstrip("/")
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random(0)
        self._host = host
        self._port = port
        self._faults: list[Fault] = []
        self._limits: _LimitState | None = None
        self._log: list[RequestRecord] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._url: str | None = None
        self._health: TargetHealthHandler | None = None
        # moto has no WAF Classic Regional: the proxy answers it (waf_regional.py).
        self.waf_regional = WAFRegional()
        if target_health is not None:
            self.enable_target_health(target_health)

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("fault proxy is not started")
        return self._url

    @property
    def log(self) -> list[RequestRecord]:
        return list(self._log)

    def records(self, *, operation: str | None = None,
                service: str | None = None) -> list[RequestRecord]:
        return [r for r in self._log if (operation is None or r.operation == operation)
                and (service is None or r.service == service)]

    def clear_log(self) -> None:
        self._log.clear()
        self._max_in_flight = self._in_flight

    @property
    def max_in_flight(self) -> int:
        """Most requests the proxy held at once since start or `clear_log`."""
        return self._max_in_flight

    def inject(self, error: str | None = None, *, operation: str = ".*",
               service: str | None = None, rate: float = 1.0, count: int | None = None,
               latency: float = 0.0, status: int | None = None,
               message: str | None = None) -> Fault:
        fault = Fault(error=error, operation=operation, service=service, rate=rate, count=count,
                      latency=latency, status=status, message=message)
        self._faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        if fault in self._faults:
            self._faults.remove(fault)

    def clear_faults(self) -> None:
        self._faults.clear()

    def enable_server_limits(self, limits: ServerLimits | None = None) -> ServerLimits:
        """Start (or restart, with full buckets) server-side throttling."""
        state = _LimitState(limits or ServerLimits(), self._clock)
        self._limits = state
        return state.limits

    def disable_server_limits(self) -> None:
        self._limits = None

    def enable_target_health(self, settings: TargetHealthSettings | None = None
                             ) -> TargetHealth:
        """Answer target health as AWS does from now on; targets registered earlier are
        picked up, as registered now, at the first DescribeTargetHealth."""
        if self._health is None:
            model = TargetHealth(settings or TargetHealthSettings(), self._clock)
            self._health = TargetHealthHandler(model, self._upstream)
        elif settings is not None:
            self._health.model.settings = settings
        return self._health.model

    @property
    def target_health(self) -> TargetHealth:
        """The target-health model (`enable_target_health` or `target_health=` first)."""
        if self._health is None:
            raise RuntimeError("target health is not enabled on this proxy")
        return self._health.model

    def routing_changed(self) -> None:
        """Tell the target-health model that listeners or rules changed around the proxy
        (directly at moto), so that it looks again which target groups are in use."""
        if self._health is not None:
            self._health.routing_changed()

    async def start(self) -> AWSFaultProxy:
        if self._runner is not None:
            return self
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=64), auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=120))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._url = f"http://{host}:{port}"
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        if self._health is not None:
            await self._health.close()

    async def __aenter__(self) -> AWSFaultProxy:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def _fire(self, request: AWSRequest) -> tuple[float, Fault | None]:
        """Latency to add and the error fault to answer with, consuming firings."""
        latency, error = 0.0, None
        for fault in self._faults:
            if fault.exhausted or not fault.matches(request):
                continue
            if fault.error is not None and error is not None:
                continue  # one error per request; leave later error faults their firings
            if fault.rate < 1.0 and self._rng.random() >= fault.rate:
                continue
            fault.fired += 1
            latency += fault.latency
            if fault.error is not None:
                error = fault
        return latency, error

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return await self._serve(request)
        finally:
            self._in_flight -= 1

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        arrived = self._clock.now()
        aws = identify(request.headers, body, request.query)
        latency, fault = self._fire(aws)
        if latency > 0:
            await self._clock.sleep(latency)
        if fault is not None and fault.error is not None:
            return self._answer_error(aws, arrived, fault.error, fault.http_status(),
                                      fault.message, source="injected")
        if self._limits is not None and not self._limits.admit(aws):
            limits = self._limits.limits
            return self._answer_error(aws, arrived, limits.error, 400, limits.message,
                                      source="limit")
        if self._health is not None and self._health.handles(aws):
            return await self._serve_target_health(self._health, request, body, aws, arrived)
        if self.waf_regional.handles(aws):
            waf = self.waf_regional.answer(aws, body)
            self._record(aws, arrived, waf.outcome, waf.status, "waf-regional")
            return web.Response(status=waf.status, body=waf.body,
                                headers={"Content-Type": waf.content_type})
        response = await self._forward(request, body, aws, arrived)
        if self._health is not None:
            self._health.observe(aws, response.status)
        self.waf_regional.observe(aws, response.status)
        return response

    async def _serve_target_health(self, health: TargetHealthHandler, request: web.Request,
                                   body: bytes, aws: AWSRequest,
                                   arrived: float) -> web.StreamResponse:
        form = request_form(request.headers, body, request.query)
        if aws.operation == "DescribeTargetHealth":
            answer = await health.describe(aws, form)
            self._record(aws, arrived, answer.outcome, answer.status, "target-health")
            return web.Response(status=answer.status, body=answer.body,
                                headers={"Content-Type": answer.content_type})
        # (De)registration: moto validates and keeps the registry; the model follows it.
        response = await self._forward(request, body, aws, arrived)
        if response.status < 300:
            await health.changed(aws, form)
        return response

    def _answer_error(self, aws: AWSRequest, arrived: float, code: str, status: int,
                      message: str | None, *, source: str) -> web.Response:
        text = message if message is not None else _DEFAULT_MESSAGES.get(code, code)
        content_type, payload = error_response(aws, code, text)
        self._record(aws, arrived, code, status, source)
        return web.Response(status=status, body=payload, headers={"Content-Type": content_type})

    async def _forward(self, request: web.Request, body: bytes, aws: AWSRequest,
                       arrived: float) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            async with self._session.request(
                    request.method, self._upstream + request.path_qs, headers=headers,
                    data=body, allow_redirects=False) as upstream:
                payload = await upstream.read()
                status = upstream.status
                out_headers = {k: v for k, v in upstream.headers.items()
                               if k.lower() not in _HOP_BY_HOP}
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._record(aws, arrived, "ProxyError", 502, "upstream")
            return web.Response(status=502, text=f"fault proxy: upstream failed: {exc}")
        code = error_code_of(aws.protocol, status, payload)
        self._record(aws, arrived, code or ("ok" if status < 300 else f"HTTP{status}"), status,
                     "upstream")
        return web.Response(status=status, body=payload, headers=out_headers)

    def _record(self, aws: AWSRequest, arrived: float, outcome: str, status: int,
                source: str) -> None:
        self._log.append(RequestRecord(
            time=arrived, service=aws.service, operation=aws.operation, params=dict(aws.params),
            outcome=outcome, status=status, mutating=aws.mutating, source=source))
