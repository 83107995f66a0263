"""Calling one webhook: where its clientConfig points, TLS verified against its caBundle (system
trust without one) for the name the real server checks (`<service>.<namespace>.svc`, or the
URL's host), a POST bounded by timeoutSeconds — and Go's wording for whatever goes wrong, so a
refused call reads as it does on a cluster."""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from runtime.envtest.admission.services import ResolveError, ServiceResolver, loopback
from runtime.envtest.admission.webhook import Webhook


class TransportError(Exception):
    """The reason part of `failed calling webhook "x": <reason>`."""


@dataclass(frozen=True, slots=True)
class _Target:
    shown: str         # the URL as the real server names it in errors
    host: str          # what is dialled
    port: int
    path: str          # path and query
    server_name: str   # checked against the certificate
    host_header: str


def _join(path: str) -> str:
    # Go's path.Join("/", path): one leading slash, no trailing one.
    return "/" + "/".join(p for p in path.split("/") if p and p != ".")


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _target(hook: Webhook, services: ServiceResolver) -> _Target:
    query = f"?timeout={hook.timeout}s"
    if hook.service is not None:
        svc = hook.service
        server_name = f"{svc.name}.{svc.namespace}.svc"
        path = _join(svc.path) + query
        shown = f"https://{server_name}:{svc.port}{path}"
        try:
            host, port = services.resolve(svc.namespace, svc.name, svc.port)
        except ResolveError as exc:
            raise TransportError(f'failed to call webhook: Post "{shown}": {exc}') from None
        return _Target(shown, host, port, path, server_name, f"{server_name}:{svc.port}")
    url = urlsplit(hook.url or "")
    host = url.hostname or ""
    path = _join(url.path) + query
    shown = f"{url.scheme}://{url.netloc}{path}"
    port = url.port or 443
    if not loopback(host):
        raise TransportError(f'failed to call webhook: Post "{shown}": dial tcp '
                             f"{_bracketed(host)}:{port}: the server dials only loopback "
                             "addresses")
    return _Target(shown, "127.0.0.1" if host == "localhost" else host, port, path, host,
                   url.netloc)


def _certificate_problem(err: ssl.SSLCertVerificationError, server_name: str) -> str:
    code = err.verify_code
    if code in (62, 64):  # hostname or IP address mismatch
        why = f"x509: certificate is not valid for {server_name}"
    elif code in (2, 18, 19, 20, 21):
        why = "x509: certificate signed by unknown authority"
    elif code in (9, 10):
        why = "x509: certificate has expired or is not yet valid"
    else:
        why = f"x509: {err.verify_message}"
    return f"tls: failed to verify certificate: {why}"


def _failure(exc: BaseException, target: _Target) -> str:
    dialled = f"{_bracketed(target.host)}:{target.port}"
    if isinstance(exc, TimeoutError):
        return "context deadline exceeded"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert = exc.certificate_error
        if isinstance(cert, ssl.SSLCertVerificationError):
            return _certificate_problem(cert, target.server_name)
        return f"tls: {cert}"
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"remote error: tls: {exc}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return f"dial tcp {dialled}: connect: connection refused"
        return f"dial tcp {dialled}: {exc.os_error.strerror or exc.os_error}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "EOF"
    return str(exc) or type(exc).__name__


def _http_problem(code: int, body: bytes) -> str:
    """client-go's error for a non-2xx answer: the Status it carries, else a generic text."""
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    if code == 404:
        return "the server could not find the requested resource"
    if code >= 500:
        text = body.decode(errors="replace").strip()
        return f'an error on the server ("{text}") has prevented the request from succeeding'
    return f"the server responded with the status code {code} but did not return more " \
           "information"


class Transport:
    """One HTTP client for every webhook call, closed with the server."""

    def __init__(self, services: ServiceResolver) -> None:
        self._services = services
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}

    def _context(self, bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(bundle)
        if context is None:
            try:
                context = ssl.create_default_context(
                    cadata=bundle.decode() if bundle is not None else None)
            except (ssl.SSLError, UnicodeDecodeError, ValueError):
                raise TransportError("could not get REST client: unable to load root "
                                     "certificates: unable to parse bytes as PEM block"
                                     ) from None
            self._contexts[bundle] = context
        return context

    async def post(self, hook: Webhook, body: bytes) -> bytes:
        """The webhook's answer body; raises TransportError with the reason."""
        target = _target(hook, self._services)
        context = self._context(hook.ca_bundle)
        if self._session is None:
            # A fresh connection per call: a test's webhook server may come and go.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True))
        url = f"https://{_bracketed(target.host)}:{target.port}{target.path}"
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*",
                   "Host": target.host_header, "User-Agent": "kube-apiserver-admission"}
        try:
            async with asyncio.timeout(hook.timeout):
                async with self._session.post(url, data=body, headers=headers, ssl=context,
                                              server_hostname=target.server_name) as resp:
                    raw = await resp.read()
                    code = resp.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise TransportError(f'failed to call webhook: Post "{target.shown}": '
                                 f"{_failure(exc, target)}") from None
        if not 200 <= code <= 206:
            raise TransportError(f"failed to call webhook: {_http_problem(code, raw)}")
        return raw

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
