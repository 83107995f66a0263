"""The process-wide AWS client pool.

Every call goes through the same three gates, in this order: the client-side throttle (one
token from exactly one bucket), the per-service concurrency limit, then botocore with its
`standard` retries. A call's throttle token covers its botocore retries, as upstream's
middleware does; pages of a paginated listing are separate calls.

A call made by a LOW-priority reconcile (a paced verification) first spends one call of the
verification budget, if the pool has one, and then yields the throttle bucket to real changes
(budget.py explains why).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import structlog
from aiobotocore.config import AioConfig
from aiobotocore.paginate import AioPaginator
from aiobotocore.session import AioSession, get_session
from botocore import xform_name
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError
from prometheus_client import CollectorRegistry

from controller.aws.assumerole import AssumeRoleFailed, Credentials, Role, RoleCredentials
from controller.aws.budget import VerificationBudget
from controller.aws.errors import AWSError
from controller.aws.loader import with_shared_loader
from controller.aws.metrics import AWSMetrics, count_failure, metrics_for
from controller.aws.settings import AWSSettings
from controller.aws.throttle import Throttler
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority

log = structlog.get_logger("aws")


class _Client:
    """One aiobotocore client and what the pool derived from its service model."""

    def __init__(self, client: Any, service: str, *, generation: int = 0,
                 context: Any = None) -> None:
        self.client = client
        self.service = service
        self.service_id = str(client.meta.service_model.service_id)
        self.operations = frozenset(client.meta.service_model.operation_names)
        # A role's client: the credentials' generation it is signed with, its context manager
        # (closed once replaced and idle), the calls in flight on it.
        self.generation = generation
        self.context = context
        self.in_flight = 0
        self.replaced = False


class AWSClientPool:
    """Shared aiobotocore clients, one per (service, region), created on first use.

    Use as `async with AWSClientPool(settings) as pool:` or call `close()` on shutdown.
    A call given a `role` (assumerole.py) is made with that role's credentials, on clients of
    its own, through the same throttle, limits and metrics.
    """

    def __init__(self, settings: AWSSettings, *, registry: CollectorRegistry | None = None,
                 clock: Clock | None = None, session: AioSession | None = None) -> None:
        self._settings = settings
        self._clock: Clock = clock or RealClock()
        self._metrics: AWSMetrics = metrics_for(registry)
        self._throttler = Throttler(settings.throttle, clock=self._clock)
        self._budget: VerificationBudget | None = None
        if settings.verify_calls_qps is not None:
            self._budget = VerificationBudget(rate=settings.verify_calls_qps,
                                              burst=settings.verify_calls_burst,
                                              clock=self._clock)
        self._session: AioSession = session or with_shared_loader(get_session(), trimmed=True)
        self._clients: dict[tuple[str, str], _Client] = {}
        self._roles: dict[Role, RoleCredentials] = {}
        self._role_clients: dict[tuple[str, str, Role], _Client] = {}
        self._create_lock = asyncio.Lock()
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._stack = AsyncExitStack()
        self._closed = False

    @property
    def settings(self) -> AWSSettings:
        return self._settings

    @property
    def throttler(self) -> Throttler:
        return self._throttler

    @property
    def verification_budget(self) -> VerificationBudget | None:
        """The AWS calls per second LOW-priority reconciles may spend (None: unlimited); the
        controllers' queues use it as their LOW lanes' gate."""
        return self._budget

    @property
    def held_roles(self) -> tuple[Role, ...]:
        """The roles whose credentials the pool keeps."""
        return tuple(self._roles)

    @property
    def open_clients(self) -> tuple[tuple[str, str], ...]:
        """(service, region) of every client created so far."""
        return tuple(self._clients)

    async def __aenter__(self) -> AWSClientPool:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        async with self._create_lock:
            self._clients.clear()
            role_clients = list(self._role_clients.values())
            self._role_clients.clear()
            for entry in role_clients:
                await self._close_client(entry)
            await self._stack.aclose()

    async def call(self, service: str, operation: str, /, *, region: str | None = None,
                   role: Role | None = None, **params: Any) -> dict[str, Any]:
        """Call `operation` (PascalCase, e.g. `DescribeLoadBalancers`) of `service` (botocore
        name: `elbv2`, `ec2`, `acm`), as `role` when given. AWS error answers raise
        `AWSError`; STS's refusal of the role, `AssumeRoleFailed`."""
        entry = await self._entry(service, region, role)
        self._check_operation(entry, operation)
        return await self._invoke(entry, operation, params)

    async def paginate(self, service: str, operation: str, /, *, region: str | None = None,
                       role: Role | None = None,
                       **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Yield the pages of a pageable operation; each page is one throttled, counted call."""
        entry = await self._entry(service, region, role)
        self._check_operation(entry, operation)
        try:
            config = self._session.get_paginator_model(service).get_paginator(operation)
        except ValueError:
            raise ValueError(f"{service} operation {operation} cannot be paginated") from None
        model = entry.client.meta.service_model.operation_model(operation)

        async def method(**kwargs: Any) -> dict[str, Any]:
            return await self._invoke(entry, operation, kwargs)

        entry.in_flight += 1  # the client stays open between pages
        try:
            async for page in AioPaginator(method, config, model).paginate(**params):
                yield page
        finally:
            await self._done_with(entry)

    async def warm(self, services: Iterable[str] = ("elbv2", "ec2")) -> None:
        """Create the clients of `services` now. Creating one loads its service model (ec2's
        is large) on the event loop, a few hundred milliseconds in all: at start-up, before
        the informers list, rather than in the middle of the first reconcile after a restart.
        No network call is made; a failure here is left to the first call to report."""
        for service in services:
            try:
                await self._client(service, None)
            except Exception as exc:
                log.debug("could not create the client ahead of use", service=service,
                          error=str(exc))

    async def raw_client(self, service: str, *, region: str | None = None,
                         role: Role | None = None) -> Any:
        """The shared aiobotocore client (`role`'s, with its current credentials), for what
        `call` cannot express (waiters). Calls made on it bypass the throttle, the concurrency
        limit and the call metrics."""
        return (await self._entry(service, region, role)).client

    async def _entry(self, service: str, region: str | None, role: Role | None) -> _Client:
        if role is None:
            return await self._client(service, region)
        return await self._role_client(service, region or role.region, role)

    def role_credentials(self, role: Role) -> RoleCredentials:
        """The credentials of `role`, one `RoleCredentials` per role for the pool's life."""
        found = self._roles.get(role)
        if found is None:
            found = self._roles[role] = RoleCredentials(role, assume=self._assume,
                                                        clock=self._clock)
        return found

    async def _assume(self, role: Role) -> dict[str, Any]:
        params: dict[str, Any] = {"RoleArn": role.arn,
                                  "RoleSessionName": self._settings.role_session_name}
        if role.external_id:
            params["ExternalId"] = role.external_id
        return await self.call("sts", "AssumeRole", region=role.region, **params)

    async def _role_client(self, service: str, region: str | None, role: Role) -> _Client:
        """The role's client of `service`, signed with its current credentials: one signed with
        older ones is replaced, and closed once its last call is done."""
        held = self.role_credentials(role)
        try:
            generation, credentials = await held.current()
        except AssumeRoleFailed:
            if held.generation == 0 and self._roles.get(role) is held:
                # Never assumed: nothing is kept for it (a role ARN is user input, and a
                # refused one must not hold memory for the pool's life).
                del self._roles[role]
            raise
        key = (service, region or self._settings.region, role)
        entry = self._role_clients.get(key)
        if entry is not None and entry.generation == generation:
            return entry
        async with self._create_lock:
            if self._closed:
                raise RuntimeError("AWS client pool is closed")
            entry = self._role_clients.get(key)
            if entry is not None and entry.generation == generation:
                return entry
            context = self._client_context(key[0], key[1], credentials)
            client = await context.__aenter__()
            new = _Client(self._watched(client), service, generation=generation,
                          context=context)
            self._role_clients[key] = new
            if entry is not None:
                entry.replaced = True
                if entry.in_flight == 0:
                    await self._close_client(entry)
        return new

    async def _close_client(self, entry: _Client) -> None:
        context, entry.context = entry.context, None
        if context is not None:
            try:
                await context.__aexit__(None, None, None)
            except Exception as exc:
                log.debug("closing a replaced client failed", error=str(exc))

    async def _client(self, service: str, region: str | None) -> _Client:
        key = (service, region or self._settings.region)
        entry = self._clients.get(key)
        if entry is not None:
            return entry
        async with self._create_lock:
            if self._closed:
                raise RuntimeError("AWS client pool is closed")
            entry = self._clients.get(key)
            if entry is None:
                entry = _Client(await self._create(*key), service)
                self._clients[key] = entry
        return entry

    async def _create(self, service: str, region: str) -> Any:
        client = await self._stack.enter_async_context(
            self._client_context(service, region, None))
        return self._watched(client)

    def _watched(self, client: Any) -> Any:
        service_id = str(client.meta.service_model.service_id)
        client.meta.events.register(
            "response-received", functools.partial(self._on_attempt, service_id))
        return client

    def _client_context(self, service: str, region: str, role: Credentials | None) -> Any:
        """The client's async context manager; `role`: the credentials of an assumed role."""
        settings = self._settings
        config = AioConfig(
            region_name=region,
            retries={"mode": "standard", "total_max_attempts": settings.max_retries + 1},
            max_pool_connections=settings.max_concurrency_per_service,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
        )
        kwargs: dict[str, Any] = {"region_name": region, "config": config}
        endpoint = settings.endpoint_for(service)
        if endpoint is not None:
            kwargs["endpoint_url"] = endpoint
        if role is not None:
            kwargs["aws_access_key_id"] = role.access_key
            kwargs["aws_secret_access_key"] = role.secret_key
            kwargs["aws_session_token"] = role.session_token
        else:
            credentials = settings.credentials_for(service)
            if credentials is not None:
                kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = credentials
        return self._session.create_client(service, **kwargs)

    def _check_operation(self, entry: _Client, operation: str) -> None:
        if operation not in entry.operations:
            raise ValueError(f"{entry.service} has no operation {operation!r} "
                             "(use the PascalCase API name, e.g. DescribeLoadBalancers; "
                             "an operation of a trimmed model must be in "
                             "controller.aws.loader.TRIMMED_OPERATIONS)")

    def _semaphore(self, service: str) -> asyncio.Semaphore:
        sem = self._semaphores.get(service)
        if sem is None:
            sem = asyncio.Semaphore(self._settings.max_concurrency_per_service)
            self._semaphores[service] = sem
        return sem

    async def _invoke(self, entry: _Client, operation: str,
                      params: dict[str, Any]) -> dict[str, Any]:
        # Counted from before the gates: a replaced client stays open until this call is done.
        entry.in_flight += 1
        try:
            return await self._gated(entry, operation, params)
        finally:
            await self._done_with(entry)

    async def _done_with(self, entry: _Client) -> None:
        entry.in_flight -= 1
        if entry.replaced and entry.in_flight == 0:
            await self._close_client(entry)

    async def _gated(self, entry: _Client, operation: str,
                     params: dict[str, Any]) -> dict[str, Any]:
        metrics, service_id = self._metrics, entry.service_id
        cell = current_priority()
        verifying = cell is not None and cell.value < NORMAL
        waited = 0.0
        if verifying and self._budget is not None and cell is not None:
            metrics.verification_calls.labels(service_id, operation).inc()
            waited += await self._budget.spend(cell.raised)
            verifying = cell.value < NORMAL
        waited += await self._throttler.wait(service_id, operation, yield_=verifying)
        metrics.throttle_wait.labels(service_id, operation).observe(waited)
        method = getattr(entry.client, xform_name(operation))
        return await self._send(entry, operation, method, params)

    async def _send(self, entry: _Client, operation: str, method: Any,
                    params: dict[str, Any]) -> dict[str, Any]:
        metrics, service_id = self._metrics, entry.service_id
        async with self._semaphore(entry.service):
            start = self._clock.now()
            status, code, retries = "0", "", 0
            try:
                response: dict[str, Any] = await method(**params)
            except ClientError as exc:
                error = AWSError.from_response(exc.response, operation=operation)
                status, code, retries = str(error.status), error.code, error.retry_attempts
                raise error from exc
            except asyncio.CancelledError:
                code = "Canceled"
                raise
            except (BotoCoreError, ResponseParserError) as exc:
                # Transport and parsing failures (a connection reset, an HTML error page) after
                # botocore's own retries: an expected AWS failure to the caller, like a
                # ClientError, not a bug in the caller. (botocore's parse error is not a
                # BotoCoreError.)
                code = type(exc).__name__
                raise AWSError(code, str(exc), operation=operation) from exc
            except Exception as exc:
                code = type(exc).__name__
                raise
            else:
                meta = response.get("ResponseMetadata") or {}
                status = str(meta.get("HTTPStatusCode", 200))
                retries = int(meta.get("RetryAttempts") or 0)
                return response
            finally:
                metrics.calls.labels(service_id, operation, status, code).inc()
                count_failure(metrics, service_id, operation, status, code)
                metrics.call_duration.labels(service_id, operation).observe(
                    max(0.0, self._clock.now() - start))
                metrics.call_retries.labels(service_id, operation).observe(retries)

    def _on_attempt(self, service_id: str, *, event_name: str,
                    response_dict: dict[str, Any] | None, parsed_response: dict[str, Any] | None,
                    exception: BaseException | None, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        status, code = "0", ""
        if response_dict is not None:
            status = str(response_dict.get("status_code", 0))
            if int(status) >= 300 and parsed_response:
                code = str((parsed_response.get("Error") or {}).get("Code") or "")
        if exception is not None:
            code = type(exception).__name__
        self._metrics.requests.labels(service_id, operation, status, code).inc()
