"""Where the API server is and how to authenticate to it.

kubernetes_asyncio's loaders already understand every kubeconfig corner (exec plugins, OIDC,
GCP, token files, in-cluster service-account tokens); we run them only to fill a
`Configuration`, then read host, TLS material and the Authorization header out of it. The HTTP
itself is ours (runtime/client.py), so none of the generated model machinery is on the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from runtime import kubelight

# Before the loaders' first import: they come without the generated client (kubelight.py).
kubelight.light()

from kubernetes_asyncio.client import Configuration  # noqa: E402
from kubernetes_asyncio.config import ConfigException  # noqa: E402
from kubernetes_asyncio.config import kube_config as _kube_config  # noqa: E402
from kubernetes_asyncio.config.incluster_config import (  # noqa: E402
    SERVICE_CERT_FILENAME,
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)

log = logging.getLogger(__name__)

# How often short-lived credentials (exec plugins, GCP) are re-checked; the loader only runs the
# plugin again when the cached credential has expired, so polling is cheap.
_TOKEN_REFRESH_INTERVAL = 60.0


class KubeConfigError(Exception):
    """The kubeconfig (or in-cluster environment) cannot be used: one line saying why, naming
    the file when there is one (`path`)."""

    def __init__(self, reason: str, *, path: str | None = None) -> None:
        super().__init__(f"kubeconfig {path}: {reason}" if path else reason)
        self.reason = reason
        self.path = path


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True, slots=True)
class ServerEndpoint:
    """Everything about the server that does not change while the process runs."""

    host: str  # scheme://host:port, no trailing slash
    ssl: ssl.SSLContext | None  # None for plain http
    server_hostname: str | None  # TLS SNI override (tls-server-name)
    proxy: str | None

    @property
    def netloc(self) -> str:
        """`host:port` as client-go's metrics label it."""
        return urlsplit(self.host).netloc


class Credentials:
    """A live view of the Authorization header; refreshed tokens show up on the next request."""

    def __init__(self, configuration: Configuration, loader: Any | None = None) -> None:
        self._configuration = configuration
        self._loader = loader
        self._refresher: asyncio.Task[None] | None = None

    async def headers(self) -> dict[str, str]:
        auth = await self._configuration.auth_settings()
        bearer = auth.get("BearerToken")
        if bearer and bearer.get("value"):
            return {"Authorization": str(bearer["value"])}
        return {}

    def start_refresh(self) -> None:
        """Keep exec-plugin and GCP tokens fresh in the background (in-cluster tokens refresh
        through the configuration's own hook on every request)."""
        loader = self._loader
        if loader is None or self._refresher is not None:
            return
        user = getattr(loader, "_user", None)
        if getattr(loader, "provider", None) != "gcp" and not (user and "exec" in user):
            return
        self._refresher = asyncio.get_running_loop().create_task(
            self._refresh_forever(loader), name="kube-token-refresh")

    async def _refresh_forever(self, loader: Any) -> None:
        try:
            await _kube_config.refresh_token(loader, self._configuration,
                                             interval=_TOKEN_REFRESH_INTERVAL)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failed refresh leaves the old token; requests will say 401
            log.exception("kubeconfig token refresh stopped")

    async def close(self) -> None:
        task, self._refresher = self._refresher, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _ssl_context(configuration: Configuration) -> ssl.SSLContext | None:
    if not str(configuration.host).startswith("https"):
        return None
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _endpoint(configuration: Configuration) -> ServerEndpoint:
    host = str(configuration.host or "").rstrip("/")
    parts = urlsplit(host)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KubeConfigError(f"the API server address {host!r} is not an http(s) URL")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        raise KubeConfigError(f"the API server address {host!r} has an invalid port") from None
    try:
        context = _ssl_context(configuration)
    except (OSError, ssl.SSLError) as exc:
        raise KubeConfigError(
            f"cannot load TLS material for {host}: {_one_line(str(exc))}") from exc
    return ServerEndpoint(host=host, ssl=context,
                          server_hostname=configuration.tls_server_name or None,
                          proxy=configuration.proxy or None)


def _new_configuration() -> Configuration:
    # `type.__call__` skips the generated class's default-copying metaclass, as the library's
    # own loaders do, so we never touch its process-wide default configuration.
    configuration: Configuration = type.__call__(Configuration)
    return configuration


def _default_kubeconfig() -> Path:
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), "")
    return Path(first or os.path.expanduser("~/.kube/config"))


def _check_structure(path: Path, context: str | None) -> None:
    """What the library's loader would trip over, said in one line: it reports a broken file
    with multi-line parser output or a bare TypeError."""
    shown = str(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise KubeConfigError(f"cannot be read ({_one_line(reason)})", path=shown) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "malformed"
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise KubeConfigError(f"is not valid YAML ({where}{_one_line(problem)})",
                              path=shown) from None
    if not isinstance(doc, dict):
        raise KubeConfigError("is not a kubeconfig (expected a mapping with clusters, "
                              "contexts and users)", path=shown)
    contexts = doc.get("contexts")
    if not isinstance(contexts, list) or not contexts:
        raise KubeConfigError("has no contexts", path=shown)
    names = {c.get("name") for c in contexts if isinstance(c, dict)}
    current = context or doc.get("current-context")
    if not current:
        raise KubeConfigError("sets no current-context", path=shown)
    if current not in names:
        raise KubeConfigError(f"context {str(current)!r} is not among its contexts",
                              path=shown)


@contextlib.contextmanager
def _loader_quiet() -> Any:
    """The loader logs an exec plugin's failure before raising it; the error we raise carries
    the same text, and a second line would only repeat it."""
    library = logging.getLogger(_kube_config.__name__)
    disabled, library.disabled = library.disabled, True
    try:
        yield
    finally:
        library.disabled = disabled


async def load_kubeconfig(path: str | Path | None = None, *, context: str | None = None,
                          ca_file: str | None = None) -> tuple[ServerEndpoint, Credentials]:
    """Read a kubeconfig file (default: $KUBECONFIG's first entry, else ~/.kube/config).
    `ca_file`: the API server's CA bundle instead of the kubeconfig's (client-go's CAFile)."""
    path = _default_kubeconfig() if path is None else Path(path)
    shown = str(path)
    if path.is_dir():
        raise KubeConfigError("is a directory, not a kubeconfig file", path=shown)
    if not path.is_file():
        raise KubeConfigError("does not exist", path=shown)
    _check_structure(path, context)
    configuration = _new_configuration()
    try:
        with _loader_quiet():
            loader = await _kube_config.load_kube_config(
                config_file=str(path), context=context, client_configuration=configuration,
                persist_config=False)
    except ConfigException as exc:
        raise KubeConfigError(_one_line(str(exc)), path=shown) from exc
    except Exception as exc:  # a structure the checks above let through: still one line
        raise KubeConfigError(f"cannot be used ({_one_line(str(exc))})", path=shown) from exc
    if ca_file:
        configuration.ssl_ca_cert = ca_file
    try:
        endpoint = _endpoint(configuration)
    except KubeConfigError as exc:
        raise KubeConfigError(exc.reason, path=shown) from None
    return endpoint, Credentials(configuration, loader)


def in_cluster_available() -> bool:
    return bool(os.environ.get(SERVICE_HOST_ENV_NAME) and os.environ.get(SERVICE_PORT_ENV_NAME)
                and os.path.isfile(SERVICE_TOKEN_FILENAME))


def load_in_cluster(*, token_file: str = SERVICE_TOKEN_FILENAME,
                    ca_file: str | None = None,
                    environ: dict[str, str] | None = None) -> tuple[ServerEndpoint, Credentials]:
    """The pod's service-account token and CA; the token file is re-read as it rotates."""
    configuration = _new_configuration()
    try:
        InClusterConfigLoader(token_filename=token_file,
                              cert_filename=ca_file or SERVICE_CERT_FILENAME,
                              environ=dict(os.environ) if environ is None else environ,
                              ).load_and_set(configuration)
    except ConfigException as exc:
        raise KubeConfigError(f"in-cluster configuration: {_one_line(str(exc))}") from exc
    return _endpoint(configuration), Credentials(configuration)
