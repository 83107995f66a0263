"""`EnvTestServer`: the local Kubernetes API server, in-process, bound to 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from runtime.clock import Clock, RealClock
from runtime.envtest import discovery
from runtime.envtest.access import AccessControl
from runtime.envtest.admin import ADMIN_PREFIX, AdminHandlers
from runtime.envtest.admission import Admission, ServiceResolver, Warnings
from runtime.envtest.api import ObjectAPI
from runtime.envtest.auth import User, service_account_user
from runtime.envtest.faults import Faults, RequestRecord
from runtime.envtest.handlers import ApiHandlers, WatchHub
from runtime.envtest.rbac import Denial, bootstrap_policy
from runtime.envtest.registry import CRD_GROUP, CRD_PLURAL, RBAC_GROUP, Registry
from runtime.envtest.routes import error_response, parse_target
from runtime.envtest.status import StatusError
from runtime.envtest.store import Store
from runtime.envtest.tls import Certificate, self_signed
from runtime.envtest.writes import Caller, WritePath

HOST = "127.0.0.1"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_METHOD_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_RECORD = web.RequestKey("envtest.record", tuple)
_USER = web.RequestKey("envtest.user", str)
_WARNINGS = web.RequestKey("envtest.warnings", Warnings)
_log = logging.getLogger(__name__)


class EnvTestServer:
    """A Kubernetes API server for tests and the demo. Use as `async with`, or call
    `start()`/`stop()`.

    With `rbac=True` every API request needs `Authorization: Bearer <token>` for a known
    identity (401 otherwise) and is authorized by the RBAC objects in the store (403 otherwise).
    `tokens` maps tokens to users; the admin token (`admin_token`, generated if not given) is
    in `system:masters`, and is what `write_kubeconfig()` writes by default.

    With `tls=True` it serves HTTPS with a fresh self-signed certificate (which the kubeconfig
    trusts): kubectl sends tokens only over TLS."""

    def __init__(self, *, port: int = 0, crds: Sequence[Path] | None = None,
                 bookmark_interval: float = 60.0, history_size: int = 10_000,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 rbac: bool = False, tokens: Mapping[str, User] | None = None,
                 admin_token: str | None = None, tls: bool = False) -> None:
        if history_size < 1:
            raise ValueError("history_size must be at least 1")
        # Tokens never draw from `rng`: that would shift every uid a seeded test expects.
        self._token_rng = random.SystemRandom()
        self._cert: Certificate | None = self_signed(host=HOST) if tls else None
        self._ssl = self._cert.server_context() if self._cert is not None else None
        self.bookmark_interval = bookmark_interval
        self.faults = Faults()
        self._port = port
        self._crds = list(crds or [])
        self._store = Store(history_size=history_size)
        self._registry = Registry()
        self.api = ObjectAPI(self._store, self._registry, clock=clock, rng=rng)
        self._hub = WatchHub()
        self._openapi = discovery.OpenAPICache(self._registry)
        self.api.crds.on_withdraw = self._hub.close_for
        self.api.crds.on_registry_change = self._openapi.invalidate
        self._services = ServiceResolver(self._store)
        self.admission = Admission(self._store, self._registry, services=self._services)
        self.access = AccessControl(self._store, enabled=rbac,
                                    admin_token=admin_token or self._new_token("admin"),
                                    tokens=tokens)
        self._handlers = ApiHandlers(api=self.api,
                                     writes=WritePath(self.api, self.admission),
                                     reviews=self.access.answer, store=self._store,
                                     registry=self._registry, hub=self._hub,
                                     openapi=self._openapi,
                                     bookmark_interval=lambda: self.bookmark_interval,
                                     address=lambda: f"{HOST}:{self._port}",
                                     wall=(clock or RealClock()).wall)
        self._admin = AdminHandlers(self)
        self._log: list[RequestRecord] = []
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        for name in INITIAL_NAMESPACES:
            self.api.create(self._registry_type("", "v1", "namespaces"), "",
                            {"metadata": {"name": name}})
        if rbac:
            for plural, obj in bootstrap_policy():
                self.api.create(self._registry_type(RBAC_GROUP, "v1", plural), "", obj)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            return
        for path in self._crds:
            self.load_crds(path)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        app.on_response_prepare.append(self._record)
        app.on_response_prepare.append(_add_warnings)
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        self._runner = runner
        try:
            await self._listen()
        except BaseException:
            self._runner = None
            await runner.cleanup()
            raise

    async def stop(self) -> None:
        if self._runner is None:
            return
        await self._admin.cancel()
        await self.pause()
        await self._runner.cleanup()
        await self.admission.close()
        self._runner = None

    async def __aenter__(self) -> EnvTestServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    async def _listen(self) -> None:
        assert self._runner is not None
        assert self._runner.server is not None
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._runner.server, HOST, self._port,
                                                  reuse_address=True, ssl=self._ssl)
        self._port = self._listener.sockets[0].getsockname()[1]

    async def pause(self) -> None:
        """Stop listening and drop open connections; `resume()` listens on the same port."""
        if self._listener is None:
            return
        self._listener.close()
        await self._listener.wait_closed()
        self._listener = None
        self._hub.close_all()
        assert self._runner is not None
        assert self._runner.server is not None
        # close() ends idle keep-alive connections at once; shutdown() then waits (briefly)
        # for requests still in flight.
        self._runner.server.pre_shutdown()
        await self._runner.server.shutdown(0.2)

    async def resume(self) -> None:
        if self._listener is None and self._runner is not None:
            await self._listen()

    # -- state -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"{'https' if self._cert else 'http'}://{HOST}:{self._port}"

    @property
    def ca_pem(self) -> bytes | None:
        """The server certificate (its own CA) with `tls=True`, else None."""
        return self._cert.cert_pem if self._cert is not None else None

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """For Python clients (aiohttp `ssl=`): trusts this server's certificate."""
        return self._cert.client_context() if self._cert is not None else None

    @property
    def revision(self) -> int:
        return self._store.revision

    @property
    def watch_count(self) -> int:
        return len(self._hub.streams)

    @property
    def request_log(self) -> list[RequestRecord]:
        return list(self._log)

    def clear_request_log(self) -> None:
        self._log.clear()

    # -- identities and authorization ------------------------------------------------------

    @property
    def rbac(self) -> bool:
        return self.access.enabled

    @property
    def admin_token(self) -> str:
        return self.access.authenticator.admin_token

    @property
    def denials(self) -> list[Denial]:
        """Requests refused with 403, oldest first."""
        return list(self.access.denials)

    def clear_denials(self) -> None:
        self.access.denials.clear()

    def _new_token(self, prefix: str) -> str:
        return f"envtest-{prefix}-{self._token_rng.getrandbits(96):024x}"

    def add_token(self, token: str, user: User) -> None:
        """Let `token` authenticate as `user` (`system:authenticated` is added)."""
        self.access.authenticator.add(token, user)

    def remove_token(self, token: str) -> None:
        self.access.authenticator.remove(token)

    def add_service_account(self, namespace: str, name: str, *,
                            token: str | None = None) -> str:
        """A token for `system:serviceaccount:<namespace>:<name>` (with the service-account
        groups); returns it. The ServiceAccount object itself is not created."""
        token = token or self._new_token(f"sa-{namespace}-{name}")
        self.add_token(token, service_account_user(namespace, name))
        return token

    # -- admission webhooks ----------------------------------------------------------------

    def map_service(self, namespace: str, name: str, port: int, target: str | int) -> None:
        """Let webhooks with `clientConfig.service` {namespace, name, port} reach `target` (a
        port on 127.0.0.1, or a loopback `HOST:PORT`): it stands in for the Service, which then
        need not exist. TLS is still checked for `<name>.<namespace>.svc`. Without a mapping the
        Service's EndpointSlices (else Endpoints) must name a loopback address."""
        self._services.map(namespace, name, port, target)

    def unmap_service(self, namespace: str, name: str, port: int) -> None:
        self._services.unmap(namespace, name, port)

    def compact(self) -> None:
        """Forced compaction: watching from any revision before now answers 410 Gone."""
        self._store.compact()

    async def close_watches(self, *, timeout: float = 2.0) -> None:
        """End every open watch stream cleanly and wait for them to finish."""
        self._hub.close_all()
        try:
            await asyncio.wait_for(self._hub.idle(), timeout)
        except TimeoutError:
            _log.warning("envtest: %d watch streams did not end in time", self.watch_count)

    def write_kubeconfig(self, path: Path | str, *, token: str | None = None) -> Path:
        """A kubeconfig usable by kubectl and kubernetes-asyncio (trusting the certificate with
        `tls=True`). It carries `token`, or with RBAC on and no token the admin token;
        otherwise no credentials."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if token is None and self.rbac:
            token = self.admin_token
        cluster: dict[str, str] = {"server": self.url}
        if self._cert is not None:
            cluster["certificate-authority-data"] = base64.b64encode(
                self._cert.cert_pem).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "envtest", "cluster": cluster}],
            "users": [{"name": "envtest", "user": {"token": token} if token else {}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest",
                                                         "user": "envtest",
                                                         "namespace": "default"}}],
            "current-context": "envtest",
        }
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    def load_crds(self, path: Path | str) -> int:
        """Create the CRDs in a YAML/JSON file or a directory of them; returns how many."""
        path = Path(path)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        elif path.is_file():
            files = [path]
        else:
            raise ValueError(f"{path}: no such file or directory")
        crd_type = self._registry_type(CRD_GROUP, "v1", CRD_PLURAL)
        count = 0
        for file in files:
            try:
                docs = [d for d in yaml.safe_load_all(file.read_text()) if d]
            except yaml.YAMLError as exc:
                raise ValueError(f"{file}: not valid YAML: {exc}") from None
            for doc in docs:
                if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                    kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                    raise ValueError(f"{file}: expected only CustomResourceDefinition "
                                     f"documents, found {kind}")
                try:
                    self.api.create(crd_type, "", doc)
                except StatusError as exc:
                    raise ValueError(f"{file}: {exc}") from None
                count += 1
        return count

    def _registry_type(self, group: str, version: str, plural: str) -> Any:
        rt = self._registry.lookup(group, version, plural)
        assert rt is not None
        return rt

    # -- dispatch --------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith(ADMIN_PREFIX):
            try:
                return await self._admin.handle(request)
            except StatusError as err:
                return error_response(err)
        query = dict(request.query)
        verb = _METHOD_VERBS.get(request.method, request.method.lower())
        resource: str | None = None
        target = None
        problem: StatusError | None = None
        try:
            target = parse_target(self._registry, request.method, request.path, query)
        except StatusError as err:
            problem = err
        if target is not None:
            verb, resource = target.verb, target.rt.plural
        request[_RECORD] = (verb, request.path, query)
        warnings = request[_WARNINGS] = Warnings()
        try:
            # Authentication and authorization run before routing, so an unauthorized caller
            # learns nothing about what exists.
            user = self.access.identify(request)
            if user is not None:
                request[_USER] = user.name
            self.access.check(user, request.method, request.path, query)
            if self.faults.latency > 0:
                await asyncio.sleep(self.faults.latency)
            if problem is None:
                problem = self.faults.take(verb, resource)
            if problem is not None:
                raise problem
            if target is None:
                return await self._handlers.non_resource(request)
            caller = Caller(user, self.access.user_info(user), warnings)
            return await self._handlers.resource(request, target, caller)
        except StatusError as err:
            return error_response(err)
        except Exception as exc:
            _log.exception("envtest: %s %s failed", request.method, request.path)
            return error_response(StatusError(500, f"Internal error occurred: {exc}"))

    async def _record(self, request: web.Request, response: web.StreamResponse) -> None:
        record = request.get(_RECORD)
        if record is not None:
            verb, path, query = record
            self._log.append(RequestRecord(verb, path, query, response.status,
                                           request.get(_USER, "")))


async def _add_warnings(request: web.Request, response: web.StreamResponse) -> None:
    # Sent with failures too: a webhook may warn and then deny.
    warnings = request.get(_WARNINGS)
    if warnings is not None:
        for value in warnings.header_values():
            response.headers.add("Warning", value)
