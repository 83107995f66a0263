"""The webhook server called by the local API server over verified TLS, through a
`clientConfig.service`, as kube-apiserver calls it: kubectl prints its denials, warnings and
patched objects with the real wording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    WebhookServer,
    allowed,
    denied,
    patched,
)
from runtime.webhook.certwatcher import write_key_pair
from tests.integration.runtime.webhook.support import (
    Pki,
    configmap,
    create_configuration,
    options,
    serve_service,
    service_hook,
)
from tests.support.kubectl import Kubectl


def manifest(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def policy(req: AdmissionRequest) -> AdmissionResponse:
    if req.name == "bad":
        return denied("configmaps named bad are not allowed")
    return allowed(warnings=[f"{req.operation.lower()} of {req.namespace}/{req.name} checked"])


def label(req: AdmissionRequest) -> AdmissionResponse:
    obj = req.object or {}
    meta = obj.get("metadata") or {}
    new = {**obj, "metadata": {**meta, "labels": {**(meta.get("labels") or {}),
                                                    "mutated-by": "aiolbc"}}}
    return patched(obj, new)


def broken(req: AdmissionRequest) -> AdmissionResponse:
    raise RuntimeError("the handler has a bug")


async def test_calls_from_the_api_server_read_as_on_a_cluster(
        envtest: EnvTestServer, client: KubeClient, kubectl: Kubectl, tmp_path: Path,
        registry: CollectorRegistry) -> None:
    pki = Pki()
    write_key_pair(tmp_path / "certs", "tls.crt", "tls.key", pki.serving())
    async with WebhookServer(options(tmp_path / "certs"), registry=registry) as server:
        server.register("/validate-v1-configmap", policy)
        server.register("/broken", broken)
        serve_service(envtest, server)
        await create_configuration(client, "ValidatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("vconfigmap.example.com", "/validate-v1-configmap", policy="checked",
                         ca_bundle=pki.ca_bundle),
            service_hook("vbroken.example.com", "/broken", policy="broken",
                         ca_bundle=pki.ca_bundle)])

        bad = manifest(tmp_path, "bad", configmap("bad", "checked"))
        result = await kubectl("create", "-f", bad, check=False)
        assert result.returncode == 1
        assert result.stderr == (
            f'Error from server (Forbidden): error when creating "{bad}": admission webhook '
            '"vconfigmap.example.com" denied the request: configmaps named bad are not '
            "allowed\n")

        good = manifest(tmp_path, "good", configmap("good", "checked"))
        result = await kubectl("create", "-f", good)
        assert result.stdout == "configmap/good created\n"
        assert result.stderr == "Warning: create of default/good checked\n"

        result = await kubectl("create", "-f", manifest(tmp_path, "b", configmap("b", "broken")),
                               check=False)
        assert result.returncode == 1
        assert 'admission webhook "vbroken.example.com" denied the request: internal error ' \
               "in webhook /broken: the handler has a bug" in result.stderr

    assert registry.get_sample_value("controller_runtime_webhook_requests_total",
                                     {"webhook": "/validate-v1-configmap", "code": "200"}) == 2
    assert registry.get_sample_value("controller_runtime_webhook_panics_total") == 1


async def test_a_mutating_handler_patches_the_stored_object(
        envtest: EnvTestServer, client: KubeClient, kubectl: Kubectl, tmp_path: Path,
        registry: CollectorRegistry) -> None:
    pki = Pki()
    write_key_pair(tmp_path / "certs", "tls.crt", "tls.key", pki.serving())
    async with WebhookServer(options(tmp_path / "certs"), registry=registry) as server:
        server.register("/mutate-v1-configmap", label)
        serve_service(envtest, server)
        await create_configuration(client, "MutatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("mconfigmap.example.com", "/mutate-v1-configmap", policy="labelled",
                         ca_bundle=pki.ca_bundle)])
        await kubectl("create", "-f", manifest(tmp_path, "cm", configmap("cm", "labelled")))
        stored = json.loads((await kubectl("get", "configmap", "cm", "-o", "json")).stdout)
        assert stored["metadata"]["labels"] == {"policy": "labelled", "mutated-by": "aiolbc"}


async def test_a_certificate_the_ca_bundle_does_not_trust_is_refused(
        envtest: EnvTestServer, client: KubeClient, kubectl: Kubectl, tmp_path: Path,
        registry: CollectorRegistry) -> None:
    write_key_pair(tmp_path / "certs", "tls.crt", "tls.key", Pki("stranger").serving())
    async with WebhookServer(options(tmp_path / "certs"), registry=registry) as server:
        server.register("/validate-v1-configmap", policy)
        serve_service(envtest, server)
        await create_configuration(client, "ValidatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("vconfigmap.example.com", "/validate-v1-configmap", policy="checked",
                         ca_bundle=Pki().ca_bundle)])
        result = await kubectl("create", "-f", manifest(
            tmp_path, "cm", configmap("cm", "checked")), check=False)
        assert result.returncode == 1
        assert "x509: certificate signed by unknown authority" in result.stderr
