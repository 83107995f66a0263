"""Certificates from files (`--webhook-tls-mode files`, e.g. cert-manager's Secret mounted in
the cert dir): a changed pair of files is served to the API server's next call."""

from __future__ import annotations

import hashlib
import ssl
from pathlib import Path

from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import ApiError
from runtime.resources import CONFIGMAPS, VALIDATINGWEBHOOKCONFIGURATIONS
from runtime.webhook import AdmissionRequest, AdmissionResponse, KeyPair, WebhookServer, denied
from runtime.webhook.certwatcher import write_key_pair
from tests.integration.runtime.webhook.support import (
    Pki,
    configmap,
    create_configuration,
    options,
    serve_service,
    service_hook,
)
from tests.support.waiting import eventually


def deny_all(req: AdmissionRequest) -> AdmissionResponse:
    return denied(f"{req.name} refused by the webhook")


def fingerprint(pair: KeyPair) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pair.cert_pem.decode())).hexdigest()


async def refusal(client: KubeClient, name: str) -> str:
    try:
        await client.create(CONFIGMAPS, configmap(name, "checked"))
    except ApiError as exc:
        return str(exc)
    raise AssertionError("the create was admitted")


async def test_changed_files_are_served_to_the_next_call(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path,
        registry: CollectorRegistry) -> None:
    first, second = Pki("first-ca"), Pki("second-ca")
    certs = tmp_path / "serving-certs"
    write_key_pair(certs, "tls.crt", "tls.key", first.serving())
    async with WebhookServer(options(certs), registry=registry) as server:
        server.register("/validate", deny_all)
        serve_service(envtest, server)
        await create_configuration(client, "ValidatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("vconfigmap.example.com", "/validate", policy="checked",
                         ca_bundle=first.ca_bundle)])
        assert "a refused by the webhook" in await refusal(client, "a")

        replacement = second.serving()
        write_key_pair(certs, "tls.crt", "tls.key", replacement)

        async def reloaded() -> bool:
            current = server.certificate
            return current is not None and current.fingerprint == fingerprint(replacement)

        await eventually(reloaded)
        # The API server's next call gets the new certificate, which the old bundle does not
        # trust: proof that the new certificate is what new connections see.
        assert "x509: certificate signed by unknown authority" in await refusal(client, "b")
        await client.patch(VALIDATINGWEBHOOKCONFIGURATIONS, "aiolbc-webhook", [
            {"op": "replace", "path": "/webhooks/0/clientConfig/caBundle",
             "value": second.ca_bundle}], patch_type="json")
        assert "c refused by the webhook" in await refusal(client, "c")
