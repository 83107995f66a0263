"""The `mutual-authentication` annotation: a JSON list, one entry per listen port, decoded as
upstream's Go `encoding/json` decodes it into its `MutualAuthenticationConfig` (field names in
any case, unknown fields skipped, a later duplicate field wins), then upstream's checks and
defaults (pkg/ingress/model_build_listener.go): mode `off`, `passthrough` or `verify`; `verify`
needs a trust store (an ARN, or a name the resolve stage looks up) and defaults
`ignoreClientCertificateExpiry` to false; the other modes take no trust-store setting;
`advertiseTrustStoreCaNames` is `on` or `off`, with `verify` only."""

from __future__ import annotations

from typing import Any, Final

from controller.annotations import AnnotationError, load_json
from controller.model import MutualAuthentication

_FIELDS: Final = {"port": "port", "mode": "mode", "truststore": "trustStore",
                  "ignoreclientcertificateexpiry": "ignoreClientCertificateExpiry",
                  "advertisetruststorecanames": "advertiseTrustStoreCaNames"}
_MODES: Final = ("off", "passthrough", "verify")
_INT32: Final = 2**31


def parse_mutual_authentication(key: str, raw: str) -> dict[int, MutualAuthentication]:
    """Listen port → its mutual TLS settings. Raises AnnotationError with upstream's reason."""
    try:
        entries = load_json(raw)
    except ValueError as exc:
        raise AnnotationError(key, raw, f"is not valid JSON ({exc})") from None
    if not isinstance(entries, list):
        raise AnnotationError(key, raw, "is not a JSON list of {port, mode, ...} objects")
    if not entries:
        raise AnnotationError(key, raw, "is an empty mutualAuthentication configuration")
    found: dict[int, MutualAuthentication] = {}
    for entry in entries:
        if entry is None:  # Go leaves a null entry as its zero value: port 0
            entry = {}
        if not isinstance(entry, dict):
            raise AnnotationError(key, raw, "has an entry that is not a JSON object")
        fields = _fields(key, raw, entry)
        port = fields.get("port", 0)
        mode = fields.get("mode", "")
        trust_store = fields.get("trustStore") or None
        ignore = fields.get("ignoreClientCertificateExpiry")
        advertise = fields.get("advertiseTrustStoreCaNames")
        reason = _check(port, mode, trust_store, ignore, advertise)
        if reason:
            raise AnnotationError(key, raw, reason)
        if port in found:
            raise AnnotationError(key, raw, f"lists port {port} twice")
        if mode == "verify" and ignore is None:
            ignore = False
        found[port] = MutualAuthentication(
            mode=mode, trust_store=trust_store, ignore_client_certificate_expiry=ignore,
            advertise_trust_store_ca_names=advertise)
    return found


def _fields(key: str, raw: str, entry: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in entry.items():
        field = _FIELDS.get(str(name).lower())
        if field is None or value is None:  # unknown fields and nulls change nothing in Go
            continue
        if field == "port":
            # Go's int32: a whole JSON number without a fraction or exponent.
            if isinstance(value, bool) or not isinstance(value, int) or not (
                    -_INT32 <= value < _INT32):
                raise AnnotationError(key, raw, f"has port {_show(value)}; want a whole "
                                      "number")
            value = int(value)
        elif field == "ignoreClientCertificateExpiry":
            if not isinstance(value, bool):
                raise AnnotationError(key, raw, f"has {field} {_show(value)}; want true or "
                                      "false")
        elif not isinstance(value, str):
            raise AnnotationError(key, raw, f"has {field} {_show(value)}; want a string")
        fields[field] = value
    return fields


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(port: int, mode: str, trust_store: str | None, ignore: bool | None,
           advertise: str | None) -> str:
    """Upstream's validateMutualAuthenticationConfig, in its order."""
    if not 1 <= port <= 65535:
        return f"has listen port {port}; want 1..65535"
    if not mode:
        return f"has no mode for port {port}"
    if mode not in _MODES:
        return f"has mode {mode!r} for port {port}; want off, passthrough or verify"
    if mode == "verify" and not trust_store:
        return f"needs a trustStore for port {port} (mode verify)"
    if mode != "verify" and trust_store:
        return f"has a trustStore for port {port}, which mode {mode} does not take"
    if mode != "verify" and ignore is not None:
        return (f"has ignoreClientCertificateExpiry for port {port}, which mode {mode} does "
                "not take")
    if advertise is not None:
        if mode != "verify":
            return (f"has advertiseTrustStoreCaNames for port {port}, which mode {mode} does "
                    "not take")
        if advertise not in ("on", "off"):
            return f"has advertiseTrustStoreCaNames {advertise!r} for port {port}; want on or off"
    return ""
