"""The serving certificate, read from a cert file and a key file and re-read when they change.

As controller-runtime's certwatcher, the files are polled; here by content (two small reads),
not mtime, so two writes within one timestamp tick, or a Secret volume's symlink swap, are never
missed. A change is loaded into a *new* SSLContext, which the server hands to new connections;
connections already open keep the context they started with. Files that cannot be loaded (not
written yet, or a cert written before its key) leave the current certificate in place.

`write_key_pair` is the other side: it replaces both files atomically (write, then rename), so a
reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import structlog

from runtime.webhook.certs import CertificateError, KeyPair, load_key_pair
from runtime.webhook.metrics import CertificateMetrics

__all__ = ["CertWatcher", "ServingCertificate", "server_context", "write_key_pair"]

log = structlog.get_logger("webhook.certwatcher")


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """What the server currently presents."""

    pair: KeyPair
    fingerprint: str  # sha256 of the leaf, hex
    not_after: float
    context: ssl.SSLContext


def server_context(pair: KeyPair) -> ssl.SSLContext:
    """A TLS 1.2+ server context presenting `pair`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # load_cert_chain reads only files: a private directory holds the copy just long enough.
    with tempfile.TemporaryDirectory(prefix="webhook-cert-") as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(pair.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(pair.key_pem)
        try:
            context.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            raise CertificateError(f"cannot load certificate and key: {exc.reason or exc}"
                                   ) from None
    return context


class CertWatcher:
    def __init__(self, cert_path: Path, key_path: Path, *,
                 metrics: CertificateMetrics) -> None:
        self.cert_path = cert_path
        self.key_path = key_path
        self._metrics = metrics
        self._current: ServingCertificate | None = None
        self._last_error: str | None = None

    @property
    def current(self) -> ServingCertificate | None:
        return self._current

    def read(self) -> bool:
        """Re-read the files; True when a new certificate was loaded."""
        self._metrics.reads.inc()
        try:
            pair = KeyPair(self.cert_path.read_bytes(), self.key_path.read_bytes())
        except OSError as exc:
            return self._failed(f"cannot read {exc.filename}: {exc.strerror}")
        if self._current is not None and self._current.pair == pair:
            return False
        try:
            info = load_key_pair(pair)
            context = server_context(pair)
        except CertificateError as exc:
            return self._failed(f"{self.cert_path}, {self.key_path}: {exc}")
        self._current = ServingCertificate(pair, info.fingerprint, info.not_after, context)
        self._last_error = None
        self._metrics.expiry.set(info.not_after)
        log.info("loaded webhook serving certificate", cert=str(self.cert_path),
                 fingerprint=info.fingerprint[:16], dns_names=sorted(info.dns_names))
        return True

    def _failed(self, message: str) -> bool:
        self._metrics.errors.inc()
        # Logged once per distinct problem: the poll repeats it every few seconds.
        if message != self._last_error:
            self._last_error = message
            log.warning("webhook certificate not loaded", error=message,
                        serving_previous=self._current is not None)
        return False


def write_key_pair(directory: Path, cert_name: str, key_name: str, pair: KeyPair) -> bool:
    """Write both files unless they already hold `pair`; True when something was written."""
    cert_path, key_path = directory / cert_name, directory / key_name
    with contextlib.suppress(OSError):
        if cert_path.read_bytes() == pair.cert_pem and key_path.read_bytes() == pair.key_pem:
            return False
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The key first: a reader that sees the new certificate then also finds its key.
    _replace(key_path, pair.key_pem, mode=0o600)
    _replace(cert_path, pair.cert_pem, mode=0o644)
    return True


def _replace(path: Path, data: bytes, *, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
