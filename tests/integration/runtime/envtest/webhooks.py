"""A real HTTPS admission webhook server for tests, and builders for webhook configurations.

The server answers AdmissionReviews on any path with the handler a test sets for that path, and
keeps every review it receives, so a test asserts both what the API server sent and what it
made of the answer.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from runtime.envtest.tls import Certificate, self_signed
from runtime.objects import Obj

# Gets the AdmissionReview request, returns the response fields (uid is filled in), or the raw
# body to answer with instead.
Handler = Callable[[Obj], Obj | bytes | Awaitable[Obj]]
SERVICE_NAME = "hooks.default.svc"


def allow(**extra: Any) -> Handler:
    return lambda _: {"allowed": True, **extra}


def deny(message: str = "", *, code: int | None = None, reason: str | None = None) -> Handler:
    status: Obj = {}
    if message:
        status["message"] = message
    if code is not None:
        status["code"] = code
    if reason is not None:
        status["reason"] = reason
    return lambda _: {"allowed": False, "status": status}


def patch_response(ops: list[Obj], **extra: Any) -> Obj:
    raw = base64.b64encode(json.dumps(ops).encode()).decode()
    return {"allowed": True, "patchType": "JSONPatch", "patch": raw, **extra}


def patching(ops: list[Obj]) -> Handler:
    return lambda _: patch_response(ops)


class WebhookServer:
    """HTTPS on 127.0.0.1 with a certificate for 127.0.0.1 and `hooks.default.svc`."""

    def __init__(self, cert: Certificate | None = None) -> None:
        self.cert = cert or self_signed(dns_names=("localhost", SERVICE_NAME))
        self.handlers: dict[str, Handler] = {}
        self.reviews: dict[str, list[Obj]] = {}
        self.queries: dict[str, list[dict[str, str]]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.cert.cert_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def on(self, path: str, handler: Handler) -> None:
        self.handlers[path] = handler

    def requests(self, path: str) -> list[Obj]:
        """The AdmissionReview requests received on `path`, oldest first."""
        return [review["request"] for review in self.reviews.get(path, [])]

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        self.reviews.setdefault(request.path, []).append(review)
        self.queries.setdefault(request.path, []).append(dict(request.query))
        handler = self.handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text="404 page not found")
        answer = handler(review["request"])
        if isinstance(answer, Awaitable):
            answer = await answer
        if isinstance(answer, bytes):
            return web.Response(body=answer, content_type="application/json")
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], **answer}}
        return web.json_response(body)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", self._serve)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.cert.server_context())
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def rule(resources: list[str], *, operations: list[str] | None = None,
         groups: list[str] | None = None, versions: list[str] | None = None,
         scope: str | None = None) -> Obj:
    out: Obj = {"operations": operations or ["CREATE", "UPDATE"], "apiGroups": groups or [""],
                "apiVersions": versions or ["v1"], "resources": resources}
    if scope is not None:
        out["scope"] = scope
    return out


def hook(name: str, client: Obj, rules: list[Obj], **fields: Any) -> Obj:
    return {"name": name, "clientConfig": client, "rules": rules, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], **fields}


def url_client(server: WebhookServer, path: str, *, ca_bundle: str | None = None) -> Obj:
    client: Obj = {"url": server.url(path)}
    bundle = server.ca_bundle if ca_bundle is None else ca_bundle
    if bundle:
        client["caBundle"] = bundle
    return client


def configuration(kind: str, name: str, hooks: list[Obj]) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks}


ADMISSION = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{ADMISSION}/validatingwebhookconfigurations"
MUTATING = f"{ADMISSION}/mutatingwebhookconfigurations"
