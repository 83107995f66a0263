"""Listener attributes, mutual TLS and trust stores in the moto stand-in, as AWS's ELBv2 API
reference describes them. Applied with `moto_fidelity.apply`.

- Listener attributes (`ListenerAttribute.Key`): `tcp.idle_timeout.seconds` (60 to 6000,
  default 350) on TCP listeners; on HTTP and HTTPS listeners the `routing.http.response.*`
  header settings, and on HTTPS listeners also the renamed mTLS and TLS request headers. moto
  gives every listener `tcp.idle_timeout.seconds` and takes any key and value; here a key the
  listener's protocol does not have, or a value out of range, is `InvalidConfigurationRequest`
  and nothing changes.
- `MutualAuthentication` on `CreateListener` and `ModifyListener` (HTTPS listeners only): mode
  `off`, `passthrough` or `verify`; `verify` needs the ARN of an existing trust store
  (`TrustStoreNotFound`), `IgnoreClientCertificateExpiry` defaults to false and
  `AdvertiseTrustStoreCaNames` to `off`; the other modes take neither. Described as AWS does
  (`Mode: off` on an HTTPS listener never configured). moto ignores the field.
- Trust stores: `CreateTrustStore` (the CA bundle must be an object in the stand-in's S3,
  `CaCertificatesBundleNotFound` otherwise), `DescribeTrustStores` (by `Names` or
  `TrustStoreArns`, every one of them must exist: `TrustStoreNotFound`), `DeleteTrustStore`
  (`TrustStoreInUse` while a listener verifies with it). moto has none of them.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

_TCP_IDLE: Final = "tcp.idle_timeout.seconds"
_RESPONSE_HEADERS: Final = {
    "routing.http.response.server.enabled": "true",
    **{f"routing.http.response.{name}.header_value": "" for name in (
        "strict_transport_security", "access_control_allow_origin",
        "access_control_allow_methods", "access_control_allow_headers",
        "access_control_allow_credentials", "access_control_expose_headers",
        "access_control_max_age", "content_security_policy", "x_content_type_options",
        "x_frame_options")},
}
_REQUEST_HEADERS: Final = {
    f"routing.http.request.x_amzn_{name}.header_name": header for name, header in (
        ("mtls_clientcert_serial_number", "X-Amzn-Mtls-Clientcert-Serial-Number"),
        ("mtls_clientcert_issuer", "X-Amzn-Mtls-Clientcert-Issuer"),
        ("mtls_clientcert_subject", "X-Amzn-Mtls-Clientcert-Subject"),
        ("mtls_clientcert_validity", "X-Amzn-Mtls-Clientcert-Validity"),
        ("mtls_clientcert_leaf", "X-Amzn-Mtls-Clientcert-Leaf"),
        ("mtls_clientcert", "X-Amzn-Mtls-Clientcert"),
        ("tls_version", "X-Amzn-Tls-Version"),
        ("tls_cipher_suite", "X-Amzn-Tls-Cipher-Suite"))
}
_MODES: Final = ("off", "passthrough", "verify")


def default_attributes(protocol: str) -> dict[str, str]:
    """What DescribeListenerAttributes answers for a new listener of `protocol`."""
    if protocol == "TCP":
        return {_TCP_IDLE: "350"}
    if protocol == "HTTP":
        return dict(_RESPONSE_HEADERS)
    if protocol == "HTTPS":
        return {**_REQUEST_HEADERS, **_RESPONSE_HEADERS}
    return {}


def apply() -> None:
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import ELBv2Backend
    from moto.elbv2.responses import ELBV2Response

    def fail(code: str, message: str) -> ELBClientError:
        return ELBClientError(code, message)

    def stores(backend: Any) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] | None = getattr(backend, "_standin_trust_stores", None)
        if found is None:
            found = {}
            backend._standin_trust_stores = found
        return found

    def listener_of(backend: Any, arn: str) -> Any:
        return backend.describe_listeners(load_balancer_arn=None, listener_arns=[arn])[0]

    def mutual_auth(backend: Any, protocol: str, given: Any) -> dict[str, Any] | None:
        """The stored form of a request's MutualAuthentication (None: not given)."""
        if not given:
            return None
        mode = str(given.get("Mode") or "off")
        if mode not in _MODES:
            raise fail("ValidationError", f"Mutual authentication mode '{mode}' must be one "
                       f"of {', '.join(_MODES)}")
        if protocol != "HTTPS":
            raise fail("InvalidConfigurationRequest", "Mutual authentication is supported on "
                       "HTTPS listeners only")
        arn = given.get("TrustStoreArn")
        ignore = given.get("IgnoreClientCertificateExpiry")
        advertise = given.get("AdvertiseTrustStoreCaNames")
        if mode != "verify":
            if arn or ignore is not None or advertise is not None:
                raise fail("InvalidConfigurationRequest", f"Mutual authentication mode "
                           f"'{mode}' does not take a trust store")
            return {"Mode": mode}
        if not arn:
            raise fail("InvalidConfigurationRequest", "Mutual authentication mode 'verify' "
                       "needs a trust store")
        if arn not in stores(backend):
            raise fail("TrustStoreNotFound", f"Trust store '{arn}' not found")
        if advertise is not None and advertise not in ("on", "off"):
            raise fail("ValidationError", f"AdvertiseTrustStoreCaNames '{advertise}' must be "
                       "on or off")
        return {"Mode": "verify", "TrustStoreArn": arn,
                "IgnoreClientCertificateExpiry": str(ignore).lower() == "true",
                "TrustStoreAssociationStatus": "active",
                "AdvertiseTrustStoreCaNames": advertise or "off"}

    def described_mode(listener: Any) -> None:
        if listener.protocol != "HTTPS":
            listener.mutual_authentication = None
        elif not getattr(listener, "mutual_authentication", None):
            listener.mutual_authentication = {"Mode": "off"}

    create_original = ELBV2Response.create_listener

    def create_listener(self: Any) -> Any:
        protocol = str(self._get_param("Protocol") or "").upper()
        wanted = mutual_auth(self.elbv2_backend, protocol,
                             self._get_params().get("MutualAuthentication"))
        result = create_original(self)
        listener = result.result["Listeners"][0]  # type: ignore[index]
        listener.attributes = default_attributes(listener.protocol)
        listener.mutual_authentication = wanted
        described_mode(listener)
        return result

    modify_original = ELBV2Response.modify_listener

    def modify_listener(self: Any) -> Any:
        backend = self.elbv2_backend
        listener = listener_of(backend, self._get_param("ListenerArn"))
        before = listener.protocol
        protocol = str(self._get_param("Protocol") or before).upper()
        wanted = mutual_auth(backend, protocol, self._get_params().get("MutualAuthentication"))
        result = modify_original(self)
        if listener.protocol != before:
            listener.attributes = default_attributes(listener.protocol)
        if wanted is not None:
            listener.mutual_authentication = wanted
        described_mode(listener)
        return result

    def modify_listener_attributes(self: Any, listener_arn: str,
                                   attrs: list[dict[str, str]]) -> dict[str, str]:
        listener = listener_of(self, listener_arn)
        known = default_attributes(listener.protocol)
        for attr in attrs:
            key, value = str(attr.get("Key", "")), str(attr.get("Value", ""))
            if key not in known:
                raise fail("InvalidConfigurationRequest", f"Listener attribute key '{key}' is "
                           f"not supported on {listener.protocol} listeners")
            if key == _TCP_IDLE and not (value.isdigit() and 60 <= int(value) <= 6000):
                raise fail("InvalidConfigurationRequest", f"Listener attribute '{key}' must "
                           f"be between 60 and 6000 seconds, not '{value}'")
            if key == "routing.http.response.server.enabled" and value not in ("true",
                                                                               "false"):
                raise fail("InvalidConfigurationRequest", f"Listener attribute '{key}' must "
                           f"be true or false, not '{value}'")
        listener.attributes.update({a["Key"]: a["Value"] for a in attrs})
        return dict(listener.attributes)

    def create_trust_store(self: Any) -> Any:
        from moto.core.responses import ActionResult
        from moto.s3.models import s3_backends

        backend = self.elbv2_backend
        name = str(self._get_param("Name") or "")
        bucket = str(self._get_param("CaCertificatesBundleS3Bucket") or "")
        key = str(self._get_param("CaCertificatesBundleS3Key") or "")
        if any(store["Name"] == name for store in stores(backend).values()):
            raise fail("DuplicateTrustStoreName", f"A trust store with the name '{name}' "
                       "already exists")
        try:
            bundle = s3_backends[backend.account_id][backend.partition].get_object(bucket, key)
        except Exception:  # moto's S3 errors: no such bucket or key
            bundle = None
        if bundle is None:
            raise fail("CaCertificatesBundleNotFound", f"The CA certificates bundle "
                       f"s3://{bucket}/{key} does not exist")
        count = bytes(bundle.value).count(b"-----BEGIN CERTIFICATE-----")
        if not count:
            raise fail("InvalidCaCertificatesBundle", "The CA certificates bundle holds no "
                       "PEM certificate")
        arn = (f"arn:{backend.partition}:elasticloadbalancing:{backend.region_name}:"
               f"{backend.account_id}:truststore/{name}/{secrets.token_hex(8)}")
        store = {"Name": name, "TrustStoreArn": arn, "Status": "ACTIVE",
                 "NumberOfCaCertificates": count, "TotalRevokedEntries": 0}
        stores(backend)[arn] = store
        return ActionResult({"TrustStores": [store]})

    def describe_trust_stores(self: Any) -> Any:
        from moto.core.responses import ActionResult

        found = list(stores(self.elbv2_backend).values())
        arns = self._get_param("TrustStoreArns") or []
        names = self._get_param("Names") or []
        for arn in arns:
            if not any(s["TrustStoreArn"] == arn for s in found):
                raise fail("TrustStoreNotFound", f"Trust store '{arn}' not found")
        for name in names:
            if not any(s["Name"] == name for s in found):
                raise fail("TrustStoreNotFound", f"Trust store '{name}' not found")
        if arns or names:
            found = [s for s in found if s["TrustStoreArn"] in arns or s["Name"] in names]
        size = int(self._get_param("PageSize") or 400)
        start = int(self._get_param("Marker") or 0)
        page = found[start:start + size]
        result: dict[str, Any] = {"TrustStores": page}
        if start + size < len(found):
            result["NextMarker"] = str(start + size)
        return ActionResult(result)

    def delete_trust_store(self: Any) -> Any:
        from moto.core.responses import ActionResult

        backend = self.elbv2_backend
        arn = str(self._get_param("TrustStoreArn") or "")
        if arn not in stores(backend):
            raise fail("TrustStoreNotFound", f"Trust store '{arn}' not found")
        for balancer in backend.load_balancers.values():
            for listener in balancer.listeners.values():
                if (getattr(listener, "mutual_authentication", None) or {}).get(
                        "TrustStoreArn") == arn:
                    raise fail("TrustStoreInUse", f"Trust store '{arn}' is in use by "
                               f"listener '{listener.arn}'")
        del stores(backend)[arn]
        return ActionResult({})

    ELBV2Response.create_listener = create_listener  # type: ignore[method-assign]
    ELBV2Response.modify_listener = modify_listener  # type: ignore[method-assign]
    ELBv2Backend.modify_listener_attributes = (  # type: ignore[method-assign]
        modify_listener_attributes)
    ELBV2Response.create_trust_store = create_trust_store  # type: ignore[attr-defined]
    ELBV2Response.describe_trust_stores = describe_trust_stores  # type: ignore[attr-defined]
    ELBV2Response.delete_trust_store = delete_trust_store  # type: ignore[attr-defined]
