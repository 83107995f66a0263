"""aiolbc's webhooks in a test cluster: the server of `controller.webhooks` on loopback with
self-managed TLS (a short sync interval), the shipped webhook configurations applied with the
real kubectl, and the webhook Service mapped to one replica's port, as its Service would route
to it on a cluster.

```python
hooks = WebhookHarness(cluster, kubectl, tmp_path)
await cluster.start(on_setup=hooks.setup)
await hooks.install()              # configurations applied, CA injected, Service mapped
```
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import yaml

from controller import webhooks
from controller.defaults import (
    DEFAULT_WEBHOOK_CONFIGURATION_NAME,
    DEFAULT_WEBHOOK_SECRET_NAME,
    DEFAULT_WEBHOOK_SERVICE_NAME,
)
from controller.standins import AwsSeed
from controller.targetgroupbinding import Scope
from runtime.errors import AlreadyExists, NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    NAMESPACES,
    SECRETS,
    VALIDATINGWEBHOOKCONFIGURATIONS,
)
from runtime.webhook import (
    SelfManagedTLS,
    WebhookServer,
    WebhookServerOptions,
    service_dns_names,
)
from tests.support.cluster import Cluster
from tests.support.kubectl import Kubectl
from tests.support.paths import MANIFESTS
from tests.support.settings import ingress_settings
from tests.support.waiting import eventually

NAMESPACE = "aiolbc-system"  # the installation's
SERVICE = DEFAULT_WEBHOOK_SERVICE_NAME
CONFIGURATION = DEFAULT_WEBHOOK_CONFIGURATION_NAME
CONFIGURATIONS = (MANIFESTS / "webhook" / "mutatingwebhookconfiguration.yaml",
                  MANIFESTS / "webhook" / "validatingwebhookconfiguration.yaml")
SERVICE_PORT = 443


def webhook_settings(seed: AwsSeed, cert_dir: Path, **overrides: Any) -> webhooks.Settings:
    tls = SelfManagedTLS(secret_namespace=NAMESPACE, secret_name=DEFAULT_WEBHOOK_SECRET_NAME,
                         dns_names=service_dns_names(SERVICE, NAMESPACE),
                         mutating_configurations=(CONFIGURATION,),
                         validating_configurations=(CONFIGURATION,), sync_interval=0.2,
                         retry_min=0.05, retry_max=0.2)
    # The handlers' switches (`service_mutator=True`) are flags of the webhook section.
    switches = {k: overrides.pop(k) for k in list(overrides)
                if k in {f.name for f in dataclasses.fields(webhooks.WebhookConfig)}}
    settings = webhooks.Settings(
        server=WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(cert_dir),
                                    cert_poll_interval=0.05),
        tls=tls, ingress=ingress_settings(seed),
        scope=Scope(cluster_name=seed.cluster_name, vpc_id=seed.vpc_id),
        config=webhooks.WebhookConfig(**switches))
    return dataclasses.replace(settings, **overrides)


def configurations(**hook_changes: Any) -> list[Obj]:
    """The shipped webhook configurations, each webhook updated with `hook_changes`."""
    docs = [yaml.safe_load(path.read_text()) for path in CONFIGURATIONS]
    for doc in docs:
        for hook in doc["webhooks"]:
            hook.update(hook_changes)
    return docs


class WebhookHarness:
    def __init__(self, cluster: Cluster, kubectl: Kubectl | None, directory: Path) -> None:
        self.cluster = cluster
        self._kubectl = kubectl
        self.directory = directory
        self.servers: list[WebhookServer] = []

    @property
    def kubectl(self) -> Kubectl:
        assert self._kubectl is not None, "this harness was made without kubectl"
        return self._kubectl

    def setup(self, manager: Manager, **overrides: Any) -> WebhookServer:
        """An `on_setup` for `Cluster.start`: the webhook server on this manager."""
        cert_dir = self.directory / f"certs-{len(self.servers)}"
        server = webhooks.setup(manager, pool=self.cluster.pool, settings=webhook_settings(
            self.cluster.seed, cert_dir, **overrides))
        self.servers.append(server)
        return server

    def route_to(self, server: WebhookServer) -> None:
        """The webhook Service's traffic goes to `server` (one replica)."""
        assert server.port is not None, "the server is not listening yet"
        self.cluster.server.map_service(NAMESPACE, SERVICE, SERVICE_PORT, server.port)

    async def install(self, *, configs: list[Obj] | None = None,
                      server: WebhookServer | None = None) -> None:
        """Apply the configurations with kubectl, route the Service to `server` (default the
        last one set up) and wait until it serves with the CA in every webhook."""
        with contextlib.suppress(AlreadyExists):
            await self.cluster.client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        await self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
            configs if configs is not None else configurations()))
        target = server or self.servers[-1]
        await eventually(target.ready)
        self.route_to(target)
        await eventually(self.injected)

    async def bundles(self) -> list[str]:
        found = []
        for resource in (MUTATINGWEBHOOKCONFIGURATIONS, VALIDATINGWEBHOOKCONFIGURATIONS):
            config = await self.cluster.client.get(resource, CONFIGURATION)
            found += [str(hook["clientConfig"].get("caBundle", "")) for hook in config["webhooks"]]
        return found

    async def secret_ca(self) -> str:
        """The Secret's `ca.crt` (base64), "" while there is none."""
        try:
            secret = await self.cluster.client.get(SECRETS, DEFAULT_WEBHOOK_SECRET_NAME,
                                                   NAMESPACE)
        except NotFound:
            return ""
        return str((secret.get("data") or {}).get("ca.crt") or "")

    async def injected(self) -> bool:
        """Every webhook trusts the CA the replicas keep in the Secret."""
        ca = await self.secret_ca()
        bundles = await self.bundles()
        return bool(ca) and bool(bundles) and all(b == ca for b in bundles)
