"""The webhook server over real TLS on loopback: routing, answers, hostile bodies, handler
failures, metrics, TLS versions."""

from __future__ import annotations

import asyncio
import ssl
import warnings
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    WebhookServer,
    WebhookServerOptions,
    allowed,
    denied,
    patched,
)
from runtime.webhook.certwatcher import write_key_pair
from tests.unit.runtime.webhook.conftest import NAME, Caller, Pki, review


def by_name(req: AdmissionRequest) -> AdmissionResponse:
    if req.name == "bad":
        return denied("configmaps named bad are not allowed")
    return allowed(warnings=[f"seen {req.uid}"])


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


async def test_answers_carry_the_uid_and_the_handler_verdict(server: WebhookServer,
                                                             caller: Caller) -> None:
    server.register("/validate", by_name)
    status, body = await caller.post("/validate", review(uid="abc", name="good"))
    assert status == 200
    assert body == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": "abc", "allowed": True, "status": {"code": 200},
                                 "warnings": ["seen abc"]}}
    status, body = await caller.post("/validate", review(name="bad"))
    assert body["response"]["allowed"] is False
    assert body["response"]["status"] == {"code": 403, "reason": "Forbidden",
                                          "message": "configmaps named bad are not allowed"}


async def test_a_v1beta1_review_is_answered_in_v1beta1(server: WebhookServer,
                                                       caller: Caller) -> None:
    server.register("/validate", by_name)
    body = {**review(), "apiVersion": "admission.k8s.io/v1beta1"}
    _, answer = await caller.post("/validate", body)
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_async_handlers_and_patches(server: WebhookServer, caller: Caller) -> None:
    async def label(req: AdmissionRequest) -> AdmissionResponse:
        await asyncio.sleep(0)
        obj = req.object or {}
        new = {**obj, "metadata": {**obj.get("metadata", {}), "labels": {"seen": "yes"}}}
        return patched(obj, new)

    server.register("/mutate", label)
    _, body = await caller.post("/mutate", review())
    assert body["response"]["patchType"] == "JSONPatch"


async def test_paths_are_matched_exactly(server: WebhookServer, caller: Caller) -> None:
    server.register("/validate", by_name)
    status, body = await caller.post("/validate/more", review())
    assert status == 404
    assert body["message"] == "no webhook is served on /validate/more"
    with pytest.raises(ValueError, match="already registered"):
        server.register("/validate", by_name)


@pytest.mark.parametrize(("kwargs", "body", "code", "message"), [
    ({"method": "PUT"}, review(), 405, "method PUT is not allowed"),
    ({"content_type": "text/plain"}, review(), 400,
     "contentType=text/plain, expected application/json"),
    ({}, b"", 400, "request body is empty"),
    ({}, b"{\"apiVersion\": ", 400, "couldn't decode the AdmissionReview"),
    ({}, b"[" * 50_000 + b"]" * 50_000, 400, "couldn't decode the AdmissionReview"),
    ({}, {"apiVersion": "v1", "kind": "Pod"}, 400,
     "expected an AdmissionReview of admission.k8s.io/v1 or admission.k8s.io/v1beta1, got "
     "v1, Kind=Pod"),
    ({}, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": 5}, 400,
     "the AdmissionReview has no request"),
    ({}, review(uid=None), 400, "request.uid is required"),
    ({}, b"x" * 300_000, 413, "request body is larger than 200000 bytes"),
])
async def test_hostile_requests_get_a_status_and_never_reach_the_handler(
        pki: Pki, cert_dir: Path, registry: CollectorRegistry, kwargs: dict[str, Any],
        body: Any, code: int, message: str) -> None:
    calls: list[AdmissionRequest] = []

    def handler(req: AdmissionRequest) -> AdmissionResponse:
        calls.append(req)
        return allowed()

    write_key_pair(cert_dir, "tls.crt", "tls.key", pki.serving())
    options = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(cert_dir),
                                   max_request_bytes=200_000)
    async with WebhookServer(options, registry=registry) as server:
        server.register("/v", handler)
        caller = Caller(server, pki)
        status, answer = await caller.post("/v", body, **kwargs)
        assert status == code
        assert answer["kind"] == "Status"
        assert answer["code"] == code
        assert message in answer["message"]
        assert calls == []
        assert sample(registry, "controller_runtime_webhook_requests_total", webhook="/v",
                      code=str(code)) == 1
        # The server is unharmed.
        status, answer = await caller.post("/v", review())
        assert (status, answer["response"]["allowed"]) == (200, True)


async def test_a_failing_handler_is_a_denial_with_code_500(server: WebhookServer,
                                                            caller: Caller,
                                                            registry: CollectorRegistry) -> None:
    def broken(req: AdmissionRequest) -> AdmissionResponse:
        raise KeyError("spec")

    def confused(req: AdmissionRequest) -> Any:
        return {"allowed": True}

    server.register("/broken", broken)
    server.register("/confused", confused)
    status, body = await caller.post("/broken", review())
    assert status == 200
    assert body["response"]["allowed"] is False
    assert body["response"]["status"] == {
        "code": 500, "message": "internal error in webhook /broken: 'spec'"}
    _, body = await caller.post("/confused", review())
    assert body["response"]["status"]["message"] == \
        "internal error in webhook /confused: no response"
    assert sample(registry, "controller_runtime_webhook_panics_total") == 2


async def test_a_handler_past_the_api_servers_timeout_is_answered(server: WebhookServer,
                                                                   caller: Caller) -> None:
    never = asyncio.Event()

    async def stuck(req: AdmissionRequest) -> AdmissionResponse:
        await never.wait()
        return allowed()

    server.register("/stuck", stuck)
    status, body = await caller.post("/stuck", review(), params={"timeout": "200ms"})
    assert status == 200
    assert body["response"]["allowed"] is False
    # Half the API server's timeout: the answer is back before the API server gives up.
    assert body["response"]["status"] == {
        "code": 500, "message": "webhook /stuck did not answer within 0.1s"}


async def test_metrics_use_controller_runtime_names(server: WebhookServer, caller: Caller,
                                                    registry: CollectorRegistry) -> None:
    server.register("/validate", by_name)
    await caller.post("/validate", review(name="good"))
    await caller.post("/validate", review(name="bad"))
    await caller.post("/validate", b"nope")
    assert sample(registry, "controller_runtime_webhook_requests_total", webhook="/validate",
                  code="200") == 2
    assert sample(registry, "controller_runtime_webhook_requests_total", webhook="/validate",
                  code="400") == 1
    assert sample(registry, "controller_runtime_webhook_latency_seconds_count",
                  webhook="/validate") == 3
    assert sample(registry, "controller_runtime_webhook_requests_in_flight",
                  webhook="/validate") == 0
    assert sample(registry, "controller_runtime_webhook_admission_responses_total",
                  webhook="/validate", allowed="false", admission_code="403") == 1
    assert sample(registry, "controller_runtime_webhook_admission_responses_total",
                  webhook="/validate", allowed="true", admission_code="200") == 1


async def test_in_flight_counts_requests_being_served(server: WebhookServer, caller: Caller,
                                                      registry: CollectorRegistry) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(req: AdmissionRequest) -> AdmissionResponse:
        entered.set()
        await release.wait()
        return allowed()

    server.register("/slow", slow)
    call = asyncio.create_task(caller.post("/slow", review()))
    await entered.wait()
    assert sample(registry, "controller_runtime_webhook_requests_in_flight",
                  webhook="/slow") == 1
    release.set()
    await call
    assert sample(registry, "controller_runtime_webhook_requests_in_flight",
                  webhook="/slow") == 0


async def test_tls_below_1_2_is_refused(server: WebhookServer, pki: Pki) -> None:
    old = pki.client_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # that is the point
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, ConnectionError)):
        await asyncio.open_connection("127.0.0.1", server.port, ssl=old, server_hostname=NAME)
    modern = pki.client_context()
    modern.maximum_version = ssl.TLSVersion.TLSv1_2
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=modern,
                                              server_hostname=NAME)
    assert writer.get_extra_info("ssl_object").version() == "TLSv1.2"
    writer.close()


async def test_ready_once_serving_with_a_certificate(server: WebhookServer) -> None:
    assert await server.ready() is True
    await server.stop()
    assert await server.ready() is False


