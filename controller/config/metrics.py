"""The metrics section: what the process serves besides its webhooks (metrics, plainly or
secured, and health probes), and that both can listen at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.defaults import DEFAULT_HEALTH_PROBE_BIND_ADDR, DEFAULT_METRICS_BIND_ADDR
from runtime import flagvalues
from runtime.flags import flag
from runtime.httpserver import BindAddress, parse_bind_address
from runtime.servingcerts import CERT_FILE, KEY_FILE

_WILDCARD_HOSTS = (None, "0.0.0.0", "::")


def _bind_address(value: str) -> str | None:
    try:
        parse_bind_address(value)
    except ValueError as exc:
        return str(exc)
    return None


def _cert_dir(value: str) -> str | None:
    path = Path(value)
    if not path.is_dir():
        return f"{value} is not a directory" if path.exists() else f"{value} does not exist"
    for name in (CERT_FILE, KEY_FILE):
        if not (path / name).is_file():
            return f"{value} has no {name}"
    return None


def _overlap(a: BindAddress | None, b: BindAddress | None) -> bool:
    """Two listeners that cannot both bind: the same fixed port on the same host or on a
    wildcard address. Port 0 picks a free port and never clashes."""
    if a is None or b is None or a.port == 0 or a.port != b.port:
        return False
    return a.host in _WILDCARD_HOSTS or b.host in _WILDCARD_HOSTS or a.host == b.host


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsConfig:
    bind_addr: str = flag(
        "--metrics-bind-addr", default=DEFAULT_METRICS_BIND_ADDR, parse=str, check=_bind_address,
        help="address /metrics is served on (0: not served)")
    secure: bool = flag(
        "--metrics-secure", default=False, parse=flagvalues.parse_bool,
        help="serve /metrics over HTTPS, to callers the API server authenticates (TokenReview) "
        "and authorizes for GET /metrics (SubjectAccessReview)")
    cert_dir: str | None = flag(
        "--metrics-cert-dir", default=None, parse=str, check=_cert_dir,
        help=f"directory with {CERT_FILE} and {KEY_FILE} for --metrics-secure (default: a "
        "self-signed certificate made at start)")
    health_probe_bind_addr: str = flag(
        "--health-probe-bind-addr", default=DEFAULT_HEALTH_PROBE_BIND_ADDR, parse=str,
        check=_bind_address,
        help="address /healthz and /readyz are served on (0: not served)")

    def check(self) -> str | None:
        if _overlap(parse_bind_address(self.bind_addr),
                    parse_bind_address(self.health_probe_bind_addr)):
            return (f"--health-probe-bind-addr: {self.health_probe_bind_addr!r} uses the same "
                    f"port as --metrics-bind-addr ({self.bind_addr!r})")
        return None


__all__ = ["MetricsConfig"]
