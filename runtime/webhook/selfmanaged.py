"""Self-managed webhook TLS: the controller makes its own CA and serving certificate, keeps them
in a Secret, and injects the CA into its webhook configurations, so no cert-manager is needed.

Every replica runs the same loop (`run`), every `sync_interval` seconds:

1. Settle the Secret (keys `ca.crt`, `ca.key`, `tls.crt`, `tls.key`):
   - absent: create it with a new CA and serving certificate. Creation is create-if-absent: a
     replica that loses the race (409 AlreadyExists) re-reads and adopts the winner's;
   - present and valid: adopt it;
   - serving certificate due for renewal (less than `renew_fraction` of its lifetime left,
     expired, or missing a DNS name): a new one signed by the same CA, so the CA bundle does
     not change and replicas still serving the old one stay trusted;
   - CA due for renewal, or no CA key to sign with (a Secret made elsewhere, e.g. by upstream's
     Helm chart): a new CA and serving certificate; `ca.crt` keeps the previous, still valid
     CA after the new one, so the replicas that have not reloaded yet stay trusted too;
   - unusable (garbage, a key that does not match, a certificate the CA did not sign): replaced.
   Every update is a PUT carrying the resourceVersion read: a replica that loses (409 Conflict)
   re-reads and adopts what the winner wrote, so replicas never overwrite each other.
2. Deliver the serving certificate to the server (which writes its cert files and reloads).
3. Inject the CA bundle into every webhook of the named configurations: one JSON patch per
   configuration, only when some webhook's caBundle differs, guarded by a `test` of the
   resourceVersion (a configuration re-applied meanwhile is re-read, not overwritten).

Failures (the API server unreachable, RBAC) are logged and retried with capped backoff; the
server stays unready until a certificate is loaded.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import AlreadyExists, ApiError, Conflict, Invalid, NotFound
from runtime.resources import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    SECRETS,
    VALIDATINGWEBHOOKCONFIGURATIONS,
    Resource,
)
from runtime.webhook.certs import (
    CertificateError,
    IssuedCertificate,
    KeyPair,
    issue_ca,
    issue_serving,
    load_certificates,
    load_key_pair,
    renewal_due,
)

__all__ = [
    "CA_CERT",
    "CA_KEY",
    "TLS_CERT",
    "TLS_KEY",
    "ProvisionError",
    "SecretBundle",
    "SelfManagedCertificates",
    "SelfManagedTLS",
    "service_dns_names",
]

log = structlog.get_logger("webhook.certificates")

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
DAY = 86400.0
_ATTEMPTS = 5
_KEPT_PREVIOUS_CAS = 1


class ProvisionError(Exception):
    """The Secret or the configurations could not be settled this time; retried."""


def service_dns_names(service: str, namespace: str) -> tuple[str, str]:
    """The names the API server checks the certificate against for a Service reference."""
    return f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"


@dataclass(frozen=True, slots=True, kw_only=True)
class SelfManagedTLS:
    secret_namespace: str
    secret_name: str
    dns_names: tuple[str, ...]
    mutating_configurations: tuple[str, ...] = ()
    validating_configurations: tuple[str, ...] = ()
    cert_validity: float = 365 * DAY
    ca_validity: float = 3650 * DAY
    renew_fraction: float = 1 / 3
    ca_common_name: str = "aws-load-balancer-controller-ca"
    sync_interval: float = 60.0
    retry_min: float = 1.0
    retry_max: float = 60.0

    def __post_init__(self) -> None:
        if not self.dns_names or not all(self.dns_names):
            raise ValueError("self-managed webhook TLS needs the Service's DNS names")
        if not 0 < self.renew_fraction < 1:
            raise ValueError("renew_fraction must be between 0 and 1")
        if not 0 < self.cert_validity <= self.ca_validity:
            raise ValueError("the serving certificate must be valid for a positive time no "
                             "longer than the CA")
        if self.sync_interval <= 0 or not 0 < self.retry_min <= self.retry_max:
            raise ValueError("sync and retry intervals must be positive")


@dataclass(frozen=True, slots=True)
class SecretBundle:
    """The Secret's content, checked: trusted CAs (newest first), the newest CA's key if known,
    and the serving key pair."""

    ca_pem: bytes
    ca_key_pem: bytes | None
    serving: KeyPair

    def data(self) -> dict[str, str]:
        raw = {CA_CERT: self.ca_pem, TLS_CERT: self.serving.cert_pem,
               TLS_KEY: self.serving.key_pem}
        if self.ca_key_pem is not None:
            raw[CA_KEY] = self.ca_key_pem
        return {key: base64.b64encode(value).decode() for key, value in raw.items()}

    @property
    def ca_bundle(self) -> str:
        """The caBundle value of a webhook clientConfig."""
        return base64.b64encode(self.ca_pem).decode()


@dataclass(frozen=True, slots=True)
class _Read:
    bundle: SecretBundle | None
    problem: str
    cas: tuple[IssuedCertificate, ...]  # whatever of ca.crt parsed, even when unusable
    serving: IssuedCertificate | None
    ca_key_ok: bool


def _decoded(data: Any, key: str) -> bytes | None:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _read_secret(secret: dict[str, Any]) -> _Read:
    data = secret.get("data")
    ca_pem, ca_key = _decoded(data, CA_CERT), _decoded(data, CA_KEY)
    cert, key = _decoded(data, TLS_CERT), _decoded(data, TLS_KEY)
    cas: tuple[IssuedCertificate, ...] = ()
    if ca_pem is not None:
        try:
            cas = tuple(c for c in load_certificates(ca_pem) if c.is_ca)
        except CertificateError:
            cas = ()
    if ca_pem is None or not cas:
        return _Read(None, f"{CA_CERT} holds no CA certificate", cas, None, False)
    if cert is None or key is None:
        return _Read(None, f"{TLS_CERT} or {TLS_KEY} is missing", cas, None, False)
    try:
        serving = load_key_pair(KeyPair(cert, key), issuers=ca_pem)
    except CertificateError as exc:
        return _Read(None, f"{TLS_CERT}: {exc}", cas, None, False)
    ca_key_ok = False
    if ca_key is not None:
        try:
            load_key_pair(KeyPair(cas[0].pem, ca_key))
            ca_key_ok = True
        except CertificateError:
            ca_key_ok = False
    ca_bundle_pem = b"".join(c.pem for c in cas)
    bundle = SecretBundle(ca_bundle_pem, ca_key if ca_key_ok else None, KeyPair(cert, key))
    return _Read(bundle, "", cas, serving, ca_key_ok)


class SelfManagedCertificates:
    def __init__(self, client: KubeClient, settings: SelfManagedTLS, *,
                 clock: Clock | None = None) -> None:
        self.client = client
        self.settings = settings
        self._clock: Clock = clock or RealClock()
        self._missing: set[str] = set()
        self.current: SecretBundle | None = None  # the bundle last settled
        self.last_error: str | None = None  # why the last pass of `run` failed, if it did

    # ---- the loop ---------------------------------------------------------------------------

    async def run(self, deliver: Callable[[KeyPair], object]) -> None:
        """Settle, deliver and inject every `sync_interval`; until cancelled."""
        failures = 0
        while True:
            try:
                bundle = await self.settle_secret()
                deliver(bundle.serving)
                await self.inject(bundle)
            except Exception as exc:
                # Whatever went wrong, the loop must go on: it is what renews the certificate.
                failures += 1
                delay = min(self.settings.retry_max,
                            self.settings.retry_min * 2 ** min(failures - 1, 16))
                expected = isinstance(exc, ApiError | ProvisionError | CertificateError |
                                      OSError | TimeoutError)
                self.last_error = str(exc) or type(exc).__name__
                (log.warning if expected else log.error)(
                    "webhook certificate sync failed; retrying", secret=self._secret_key,
                    error=self.last_error, retry_in=delay)
            else:
                failures = 0
                self.last_error = None
                delay = self.settings.sync_interval
            await self._clock.sleep(delay)

    async def sync(self) -> SecretBundle:
        """One pass without delivery: settle the Secret and inject its CA bundle."""
        bundle = await self.settle_secret()
        await self.inject(bundle)
        return bundle

    @property
    def _secret_key(self) -> str:
        return f"{self.settings.secret_namespace}/{self.settings.secret_name}"

    # ---- the Secret -------------------------------------------------------------------------

    async def settle_secret(self) -> SecretBundle:
        s = self.settings
        for _ in range(_ATTEMPTS):
            try:
                secret: dict[str, Any] | None = await self.client.get(
                    SECRETS, s.secret_name, s.secret_namespace)
            except NotFound:
                secret = None
            now = self._clock.wall()
            if secret is None:
                bundle = self._issue(now, previous=())
                try:
                    await self.client.create(SECRETS, self._new_secret(bundle),
                                             s.secret_namespace)
                except AlreadyExists:
                    log.info("another replica created the webhook certificate Secret; "
                             "adopting it", secret=self._secret_key)
                    continue
                log.info("created the webhook certificate Secret", secret=self._secret_key)
                return self._adopted(bundle)
            read = _read_secret(secret)
            replacement, why = self._plan(read, now)
            if replacement is None:
                assert read.bundle is not None
                return self._adopted(read.bundle)
            updated = {**secret, "data": replacement.data()}
            try:
                await self.client.update(SECRETS, updated)
            except Conflict:
                log.info("the webhook certificate Secret changed meanwhile; re-reading",
                         secret=self._secret_key)
                continue
            log.info("updated the webhook certificate Secret", secret=self._secret_key,
                     reason=why)
            return self._adopted(replacement)
        raise ProvisionError(f"the Secret {self._secret_key} kept changing during "
                             f"{_ATTEMPTS} attempts")

    def _adopted(self, bundle: SecretBundle) -> SecretBundle:
        self.current = bundle
        return bundle

    def _plan(self, read: _Read, now: float) -> tuple[SecretBundle | None, str]:
        """The bundle to write instead of what was read, and why; (None, "") to keep it."""
        s = self.settings
        previous = tuple(c for c in read.cas if c.not_after > now)
        if read.bundle is None or read.serving is None:
            return self._issue(now, previous=previous), f"unusable: {read.problem}"
        ca = read.cas[0]
        serving_due = renewal_due(read.serving, now=now, renew_fraction=s.renew_fraction) or \
            not set(s.dns_names) <= read.serving.dns_names
        if renewal_due(ca, now=now, renew_fraction=s.renew_fraction):
            return self._issue(now, previous=previous), "the CA is due for renewal"
        if serving_due and not read.ca_key_ok:
            return self._issue(now, previous=previous), \
                "the serving certificate is due for renewal and no CA key is stored"
        kept = self._trusted(ca, previous)
        if serving_due:
            assert read.bundle.ca_key_pem is not None
            pair = issue_serving(KeyPair(ca.pem, read.bundle.ca_key_pem), s.dns_names,
                                 now=now, validity=s.cert_validity)
            return SecretBundle(kept, read.bundle.ca_key_pem, pair), \
                "the serving certificate is due for renewal"
        if kept != read.bundle.ca_pem:
            return SecretBundle(kept, read.bundle.ca_key_pem, read.bundle.serving), \
                "an expired CA left the bundle"
        return None, ""

    @staticmethod
    def _trusted(newest: IssuedCertificate, previous: tuple[IssuedCertificate, ...]) -> bytes:
        older = [c for c in previous if c.fingerprint != newest.fingerprint]
        return newest.pem + b"".join(c.pem for c in older[:_KEPT_PREVIOUS_CAS])

    def _issue(self, now: float, *, previous: tuple[IssuedCertificate, ...]) -> SecretBundle:
        s = self.settings
        ca = issue_ca(s.ca_common_name, now=now, validity=s.ca_validity)
        pair = issue_serving(ca, s.dns_names, now=now, validity=s.cert_validity)
        newest = load_certificates(ca.cert_pem)[0]
        return SecretBundle(self._trusted(newest, previous), ca.key_pem, pair)

    def _new_secret(self, bundle: SecretBundle) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": self.settings.secret_name,
                             "namespace": self.settings.secret_namespace},
                "data": bundle.data()}

    # ---- the configurations -----------------------------------------------------------------

    async def inject(self, bundle: SecretBundle) -> None:
        s = self.settings
        targets = [(MUTATINGWEBHOOKCONFIGURATIONS, n) for n in s.mutating_configurations] + \
            [(VALIDATINGWEBHOOKCONFIGURATIONS, n) for n in s.validating_configurations]
        for resource, name in targets:
            await self._inject_one(resource, name, bundle.ca_bundle)

    async def _inject_one(self, resource: Resource, name: str, ca_bundle: str) -> None:
        where = f"{resource.kind}/{name}"
        for _ in range(_ATTEMPTS):
            try:
                config = await self.client.get(resource, name)
            except NotFound:
                if where not in self._missing:
                    self._missing.add(where)
                    log.warning("webhook configuration not found; its CA bundle is injected "
                                "once it exists", configuration=where)
                return
            self._missing.discard(where)
            ops = _injection(config, ca_bundle)
            if not ops:
                return
            try:
                await self.client.patch(resource, name, ops, patch_type="json")
            except (Conflict, Invalid):
                continue  # changed between our read and our patch: the test op failed
            log.info("injected the webhook CA bundle", configuration=where,
                     webhooks=sum(1 for op in ops if op["op"] == "add"))
            return
        raise ProvisionError(f"{where} kept changing during {_ATTEMPTS} attempts")


def _injection(config: dict[str, Any], ca_bundle: str) -> list[dict[str, Any]]:
    """JSON patch ops setting caBundle on every webhook that differs; [] when none does."""
    hooks = config.get("webhooks")
    ops: list[dict[str, Any]] = []
    for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
        if not isinstance(hook, dict) or not isinstance(hook.get("name"), str):
            continue
        client = hook.get("clientConfig")
        if not isinstance(client, dict) or client.get("caBundle") == ca_bundle:
            continue
        ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": hook["name"]})
        ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle",
                    "value": ca_bundle})
    if not ops:
        return []
    version = (config.get("metadata") or {}).get("resourceVersion")
    guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] \
        if isinstance(version, str) and version else []
    return guard + ops
