"""Where moto's ELBv2 model answers differently from AWS's documented API in a way the controller
meets, the stand-in follows AWS. Applied once to the in-process moto server by `MotoStandIn`.

- `ModifyListener` (AWS API reference): `Protocol` may be HTTP, HTTPS, TCP, TLS, UDP, TCP_UDP or
  GENEVE; `Certificates` apply to HTTPS and TLS listeners; `AlpnPolicy` applies to TLS
  listeners. moto 5.2 refuses TLS, UDP and TCP_UDP with `UnsupportedProtocol`, keeps
  certificates only for HTTPS and drops `AlpnPolicy`, so an NLB listener could never be
  changed to or from TLS, nor its ALPN policy edited.
- `ModifyTargetGroup`: `Matcher.HttpCode` applies whenever the health check protocol is HTTP or
  HTTPS, including an NLB's TCP target group with HTTP health checks (codes 200..599). moto
  stores it only for HTTP(S) target groups and silently drops it otherwise.
"""

from __future__ import annotations

import inspect
from typing import Any

_PROTOCOLS = ("HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "GENEVE")
_applied = False


def apply() -> None:
    """Patch moto's ELBv2 backend (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.elbv2.exceptions import ELBClientError as RESTError
    from moto.elbv2.models import ELBv2Backend
    from moto.elbv2.responses import ELBV2Response

    original = ELBv2Backend.modify_listener

    def modify_listener(self: Any, arn: str, port: str | None = None,
                        protocol: str | None = None, ssl_policy: str | None = None,
                        certificates: list[dict[str, Any]] | None = None,
                        actions: list[dict[str, Any]] | None = None) -> Any:
        if protocol is not None and protocol not in _PROTOCOLS:
            raise RESTError("UnsupportedProtocol", f"Protocol {protocol} is not supported")
        if protocol not in ("TLS", "UDP", "TCP_UDP", "GENEVE"):
            return original(self, arn, port, protocol, ssl_policy, certificates, actions)
        # moto's own checks know only HTTP(S) and TCP: run them as TCP, then set what AWS
        # would have stored.
        listener = original(self, arn, port, "TCP", ssl_policy, [], actions)
        listener.protocol = protocol
        if protocol == "TLS":
            if certificates:
                arn0 = certificates[0]["CertificateArn"]
                if not self._certificate_exists(certificate_arn=arn0):
                    raise RESTError("CertificateNotFound", f"Certificate {arn0} not found")
                listener.certificate = arn0
                listener.certificates = [c["CertificateArn"] for c in certificates]
            elif not listener.certificates:
                raise RESTError("InvalidConfigurationRequest",
                                "You must provide a list containing exactly one certificate "
                                "if the listener protocol is TLS.")
        return listener

    response_original = ELBV2Response.modify_listener

    def modify_listener_response(self: Any) -> Any:
        result = response_original(self)
        alpn = self._get_param("AlpnPolicy")
        if alpn:
            listener = self.elbv2_backend.describe_listeners(
                load_balancer_arn=None, listener_arns=[self._get_param("ListenerArn")])[0]
            listener.alpn_policy = list(alpn)
        return result

    tg_original = ELBv2Backend.modify_target_group

    tg_signature = inspect.signature(tg_original)

    def modify_target_group(self: Any, *args: Any, **kwargs: Any) -> Any:
        target_group = tg_original(self, *args, **kwargs)
        codes = tg_signature.bind(self, *args, **kwargs).arguments.get("http_codes")
        if codes is not None and str(target_group.health_check_protocol).upper() in (
                "HTTP", "HTTPS"):
            target_group.matcher["HttpCode"] = codes
        return target_group

    ELBv2Backend.modify_listener = modify_listener  # type: ignore[method-assign]
    ELBv2Backend.modify_target_group = modify_target_group  # type: ignore[method-assign]
    ELBV2Response.modify_listener = modify_listener_response  # type: ignore[method-assign]
    _applied = True
