"""Self-managed webhook TLS against the local API server: the Secret is created (or adopted, or
repaired), the CA bundle injected so that the API server's calls verify, nothing is written when
nothing changed, and replicas starting together end up serving one certificate."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import hashlib
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import ApiError, NotFound
from runtime.resources import (
    CONFIGMAPS,
    MUTATINGWEBHOOKCONFIGURATIONS,
    NAMESPACES,
    SECRETS,
    VALIDATINGWEBHOOKCONFIGURATIONS,
)
from runtime.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    SelfManagedCertificates,
    SelfManagedTLS,
    WebhookServer,
    denied,
    patched,
)
from tests.integration.runtime.webhook.support import (
    DNS_NAMES,
    NAMESPACE,
    configmap,
    create_configuration,
    options,
    serve_service,
    service_hook,
)
from tests.support.waiting import eventually

SECRET = "aiolbc-webhook-tls"
CONFIG = "aiolbc-webhook"
SETTINGS = SelfManagedTLS(secret_namespace=NAMESPACE, secret_name=SECRET, dns_names=DNS_NAMES,
                          mutating_configurations=(CONFIG,),
                          validating_configurations=(CONFIG,))


def deny_all(req: AdmissionRequest) -> AdmissionResponse:
    return denied(f"{req.name} refused by the webhook")


def label(req: AdmissionRequest) -> AdmissionResponse:
    obj = req.object or {}
    return patched(obj, {**obj, "metadata": {**obj.get("metadata", {}),
                                             "labels": {"policy": "labelled", "seen": "yes"}}})


async def configure(client: KubeClient) -> None:
    """Both configurations, as installed: no caBundle yet."""
    await create_configuration(client, "ValidatingWebhookConfiguration", CONFIG, [
        service_hook("vconfigmap.example.com", "/validate", policy="checked")])
    await create_configuration(client, "MutatingWebhookConfiguration", CONFIG, [
        service_hook("mconfigmap.example.com", "/mutate", policy="labelled"),
        service_hook("mother.example.com", "/mutate", policy="other")])


async def refusal(client: KubeClient, name: str, policy: str = "checked") -> str:
    try:
        await client.create(CONFIGMAPS, configmap(name, policy))
    except ApiError as exc:
        return str(exc)
    raise AssertionError("the create was admitted")


def secret_data(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def fingerprint(pem: bytes) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.decode())).hexdigest()


async def bundles(client: KubeClient) -> list[str | None]:
    out: list[str | None] = []
    for resource in (VALIDATINGWEBHOOKCONFIGURATIONS, MUTATINGWEBHOOKCONFIGURATIONS):
        config = await client.get(resource, CONFIG)
        out += [h["clientConfig"].get("caBundle") for h in config["webhooks"]]
    return out


async def versions(client: KubeClient) -> list[str]:
    objs = [await client.get(SECRETS, SECRET, NAMESPACE),
            await client.get(VALIDATINGWEBHOOKCONFIGURATIONS, CONFIG),
            await client.get(MUTATINGWEBHOOKCONFIGURATIONS, CONFIG)]
    return [o["metadata"]["resourceVersion"] for o in objs]


def replica(client: KubeClient, cert_dir: Path, *,
            settings: SelfManagedTLS = SETTINGS) -> tuple[WebhookServer, SelfManagedCertificates]:
    certificates = SelfManagedCertificates(client, settings)
    server = WebhookServer(options(cert_dir), registry=CollectorRegistry(),
                           certificates=certificates)
    server.register("/validate", deny_all)
    server.register("/mutate", label)
    return server, certificates


async def test_bootstrap_creates_the_secret_and_injects_the_ca(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path) -> None:
    await configure(client)
    server, certificates = replica(client, tmp_path / "certs")
    async with server:
        serve_service(envtest, server)
        await eventually(server.ready)
        secret = await client.get(SECRETS, SECRET, NAMESPACE)
        assert secret["type"] == "kubernetes.io/tls"
        data = secret_data(secret)
        assert sorted(data) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
        assert server.certificate is not None
        assert server.certificate.pair.cert_pem == data["tls.crt"]
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == data["tls.crt"]
        names = x509.load_pem_x509_certificate(data["tls.crt"]).extensions \
            .get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == list(DNS_NAMES)

        expected = base64.b64encode(data["ca.crt"]).decode()

        async def injected() -> bool:
            return await bundles(client) == [expected] * 3

        await eventually(injected)
        # The API server's calls now verify the self-managed certificate.
        assert "a refused by the webhook" in await refusal(client, "a")
        created = await client.create(CONFIGMAPS, configmap("m", "labelled"))
        assert created["metadata"]["labels"] == {"policy": "labelled", "seen": "yes"}

        # Nothing changed: a further pass writes nothing.
        before = await versions(client)
        await certificates.sync()
        assert await versions(client) == before


async def test_a_reset_or_late_configuration_gets_the_bundle_on_the_next_pass(
        envtest: EnvTestServer, client: KubeClient) -> None:
    await create_configuration(client, "ValidatingWebhookConfiguration", CONFIG, [
        service_hook("vconfigmap.example.com", "/validate", policy="checked")])
    certificates = SelfManagedCertificates(client, SETTINGS)
    bundle = await certificates.sync()  # the mutating configuration does not exist yet
    config = await client.get(VALIDATINGWEBHOOKCONFIGURATIONS, CONFIG)
    assert config["webhooks"][0]["clientConfig"]["caBundle"] == bundle.ca_bundle

    # Re-applying the manifests wipes the bundle; the mutating one appears meanwhile.
    await client.patch(VALIDATINGWEBHOOKCONFIGURATIONS, CONFIG, [
        {"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"}], patch_type="json")
    await create_configuration(client, "MutatingWebhookConfiguration", CONFIG, [
        service_hook("mconfigmap.example.com", "/mutate", policy="labelled"),
        service_hook("mother.example.com", "/mutate", policy="other",
                     ca_bundle=bundle.ca_bundle)])
    again = await certificates.sync()
    assert again == bundle
    assert await bundles(client) == [bundle.ca_bundle] * 3


async def test_a_garbage_secret_is_replaced(envtest: EnvTestServer, client: KubeClient,
                                            tmp_path: Path) -> None:
    await configure(client)
    await client.create(SECRETS, {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "data": {"ca.crt": base64.b64encode(b"junk").decode(), "tls.crt": "!!not base64",
                 "tls.key": base64.b64encode(b"-----BEGIN PRIVATE KEY-----").decode()}})
    server, _ = replica(client, tmp_path / "certs")
    async with server:
        serve_service(envtest, server)
        await eventually(server.ready)
        secret = await client.get(SECRETS, SECRET, NAMESPACE)
        assert secret["type"] == "Opaque"  # immutable: kept
        assert server.certificate is not None
        assert secret_data(secret)["tls.crt"] == server.certificate.pair.cert_pem

        async def verified() -> bool:
            return "a refused by the webhook" in await refusal(client, "a")

        await eventually(verified)


def helm_secret() -> dict[str, Any]:
    """A Secret as upstream's Helm chart makes it: an RSA CA, no CA key."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "helm-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lbc")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName(f"{DNS_NAMES[0].removesuffix('.svc')}"),
                 *(x509.DNSName(n) for n in DNS_NAMES)]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    raw = {"ca.crt": ca.public_bytes(pem), "tls.crt": leaf.public_bytes(pem), "tls.key": key_pem}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "data": {k: base64.b64encode(v).decode() for k, v in raw.items()}}


async def test_a_valid_secret_made_elsewhere_is_adopted_as_it_is(
        envtest: EnvTestServer, client: KubeClient) -> None:
    await configure(client)
    created = await client.create(SECRETS, helm_secret())
    bundle = await SelfManagedCertificates(client, SETTINGS).sync()
    secret = await client.get(SECRETS, SECRET, NAMESPACE)
    assert secret["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert bundle.serving.cert_pem == secret_data(secret)["tls.crt"]
    assert bundle.ca_key_pem is None
    assert await bundles(client) == [bundle.ca_bundle] * 3


async def test_replicas_starting_together_serve_one_certificate(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path,
        envtest_kubeconfig: Path) -> None:
    await configure(client)
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as other_client:
        first, _ = replica(client, tmp_path / "first")
        second, _ = replica(other_client, tmp_path / "second")
        await asyncio.gather(first.start(), second.start())
        try:
            await eventually(first.ready)
            await eventually(second.ready)
            secret = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
            assert first.certificate is not None
            assert second.certificate is not None
            assert first.certificate.fingerprint == second.certificate.fingerprint == \
                fingerprint(secret["tls.crt"])

            async def injected() -> bool:
                return await bundles(client) == [base64.b64encode(secret["ca.crt"]).decode()] * 3

            await eventually(injected)
            for number, server in enumerate((first, second)):
                serve_service(envtest, server)
                assert f"r{number} refused by the webhook" in await refusal(client, f"r{number}")
        finally:
            await asyncio.gather(first.stop(), second.stop())


async def test_concurrent_passes_settle_on_one_secret(client: KubeClient) -> None:
    await configure(client)
    replicas = [SelfManagedCertificates(client, SETTINGS) for _ in range(4)]
    results = await asyncio.gather(*(r.settle_secret() for r in replicas))
    assert len({r.serving for r in results}) == 1
    stored = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
    assert results[0].serving.cert_pem == stored["tls.crt"]


async def test_a_failing_pass_is_retried_until_the_certificate_is_served(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path) -> None:
    # The Secret's namespace does not exist yet: every pass fails until it does.
    settings = dataclasses.replace(SETTINGS, secret_namespace="later", retry_min=0.05,
                                   retry_max=0.1)
    server, certificates = replica(client, tmp_path / "certs", settings=settings)
    async with server:
        async def failed() -> bool:
            return certificates.last_error is not None

        await eventually(failed)
        assert 'namespaces "later" not found' in str(certificates.last_error)
        with pytest.raises(NotFound):
            await client.get(SECRETS, SECRET, "later")
        assert await server.ready() is False
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "later"}})
        await eventually(server.ready)
        stored = secret_data(await client.get(SECRETS, SECRET, "later"))
        assert server.certificate is not None
        assert server.certificate.pair.cert_pem == stored["tls.crt"]

        async def recovered() -> bool:
            return certificates.last_error is None

        await eventually(recovered)
