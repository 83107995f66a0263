"""The webhook server's time limits over real TLS on loopback: a body sent too slowly, and
handlers answered well inside the API server's timeout, as their failurePolicy says."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.connections import ConnectionLimits
from runtime.webhook import AdmissionRequest, AdmissionResponse, WebhookServer, WebhookServerOptions
from runtime.webhook.certwatcher import write_key_pair
from tests.unit.runtime.webhook.conftest import NAME, Caller, Pki, review


async def stuck(req: AdmissionRequest) -> AdmissionResponse:
    await asyncio.Event().wait()
    raise AssertionError("never answers")


def broken(req: AdmissionRequest) -> AdmissionResponse:
    raise KeyError("spec")


@pytest.fixture
async def started(pki: Pki, cert_dir: Path, registry: CollectorRegistry
                  ) -> AsyncIterator[tuple[WebhookServer, Caller]]:
    write_key_pair(cert_dir, "tls.crt", "tls.key", pki.serving())
    options = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(cert_dir),
                                   limits=ConnectionLimits(body_timeout=0.3),
                                   answer_within=0.05)
    async with WebhookServer(options, registry=registry) as server:
        yield server, Caller(server, pki)


async def timed_post(caller: Caller, path: str, **kwargs: Any) -> tuple[float, int, Any]:
    begun = time.monotonic()
    status, body = await caller.post(path, review(), **kwargs)
    return time.monotonic() - begun, status, body


async def test_a_body_sent_too_slowly_is_answered_408(started: tuple[WebhookServer, Caller],
                                                     pki: Pki) -> None:
    server, _ = started
    server.register("/v", lambda req: AdmissionResponse(allowed=True))
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, ssl=pki.client_context(), server_hostname=NAME)
    body = json.dumps(review()).encode()
    writer.write(b"POST /v HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10])
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 408")
    writer.close()


async def test_a_handler_out_of_time_is_answered_as_its_failure_policy_says(
        started: tuple[WebhookServer, Caller], registry: CollectorRegistry) -> None:
    server, caller = started
    server.register("/fail", stuck)
    server.register("/ignore", stuck, failure_policy="Ignore")
    # No ?timeout=: the API server's default 10 s; this server answers within 5% of it.
    took, status, body = await timed_post(caller, "/ignore")
    assert status == 200
    assert 0.45 <= took < 2.0
    assert body["response"]["allowed"] is True
    assert body["response"]["warnings"] == [
        "webhook /ignore did not answer within 0.5s; admitted without this webhook's checks "
        "(failurePolicy Ignore)"]
    # Half a second of the 10 s the API server says, the same way; a denial under Fail.
    took, _, body = await timed_post(caller, "/fail", params={"timeout": "10s"})
    assert 0.45 <= took < 2.0
    assert body["response"]["allowed"] is False
    assert body["response"]["status"] == {
        "code": 500, "message": "webhook /fail did not answer within 0.5s"}
    # A timeout beyond the API server's 30 s is not believed.
    took, _, body = await timed_post(caller, "/ignore", params={"timeout": "60m"})
    assert took < 3.0
    assert "within 1.5s" in body["response"]["warnings"][0]
    assert registry.get_sample_value("controller_runtime_webhook_admission_responses_total", {
        "webhook": "/ignore", "allowed": "true", "admission_code": "200"}) == 2


async def test_a_failing_handler_under_ignore_admits_with_a_warning(
        started: tuple[WebhookServer, Caller], registry: CollectorRegistry) -> None:
    server, caller = started
    server.register("/broken", broken, failure_policy="Ignore")
    _, status, body = await timed_post(caller, "/broken")
    assert status == 200
    assert body["response"]["allowed"] is True
    assert body["response"]["warnings"] == [
        "internal error in webhook /broken: 'spec'; admitted without this webhook's checks "
        "(failurePolicy Ignore)"]
    assert registry.get_sample_value("controller_runtime_webhook_panics_total") == 1


def test_options_are_checked(started: tuple[WebhookServer, Caller]) -> None:
    server, _ = started
    with pytest.raises(ValueError, match="share of the API server's timeout"):
        WebhookServerOptions(answer_within=0)
    with pytest.raises(ValueError, match="Fail or Ignore"):
        server.register("/x", broken, failure_policy="Sometimes")  # type: ignore[arg-type]

