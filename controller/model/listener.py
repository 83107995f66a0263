"""Listeners and listener rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from controller.model.actions import Action
from controller.model.base import Items, Model, Ref, Tagged
from controller.model.ruleconditions import (
    MAX_CONDITION_VALUES,
    Condition,
    condition_sort_key,
    condition_value_count,
)
from controller.model.transforms import RuleTransform

ListenerProtocol = Literal["HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "QUIC", "TCP_QUIC"]
AlpnPolicy = Literal["HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred", "None"]
MutualAuthenticationMode = Literal["off", "passthrough", "verify"]


class CertificateDiscovery(Model):
    """Placeholder resolved by the resolve stage: ACM certificates covering these hosts, and,
    when `authorities` is given (`--allowed-certificate-authority-arns`), issued by one of those
    private CAs only. An empty `authorities` is left out of the canonical JSON, so stacks that
    do not restrict discovery keep their checkpoints."""

    hosts: Items[str] = Field(min_length=1)
    authorities: Items[str] = Field(default=(), exclude_if=lambda value: not value)
    # With --enable-secret-certificates: certificates imported from a namespace's TLS Secret
    # (tagged `elbv2.k8s.aws/secret`) are that namespace's, never discovered for another group;
    # with EnableCertificateManagement, so are those requested for an Ingress. Left out of the
    # canonical JSON when false, like `authorities`.
    skip_imported_from_secrets: bool = Field(default=False, exclude_if=lambda value: not value)

    @field_validator("hosts", mode="before")
    @classmethod
    def _sorted(cls, value: object) -> object:
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(sorted({str(v).lower() for v in value}))
        return value

    @field_validator("authorities", mode="before")
    @classmethod
    def _sorted_arns(cls, value: object) -> object:
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(sorted({str(v) for v in value}))
        return value


class MutualAuthentication(Model):
    """A listener's mutual TLS (HTTPS only). `trust_store` is an ARN, or a trust store's name
    until the resolve stage looks its ARN up (DescribeTrustStores)."""

    mode: MutualAuthenticationMode
    trust_store: str | None = None
    ignore_client_certificate_expiry: bool | None = None
    advertise_trust_store_ca_names: Literal["on", "off"] | None = None

    @property
    def trust_store_resolved(self) -> bool:
        return self.trust_store is None or self.trust_store.startswith("arn:")


class Listener(Tagged):
    load_balancer_arn: Ref
    port: int = Field(ge=1, le=65535)
    protocol: ListenerProtocol
    # The first certificate is the listener's default; the others are served by SNI.
    # ARNs, or `$ref`s to the stack's own (imported) certificates.
    certificates: Items[str | Ref] | CertificateDiscovery = ()
    ssl_policy: str | None = None
    alpn_policy: AlpnPolicy | None = None
    default_actions: Items[Action] = Field(min_length=1)
    # None: not configured, AWS's setting is left as it is (upstream's default; with the
    # EnhancedDefaultBehavior gate the builders say mode "off" instead).
    mutual_authentication: MutualAuthentication | None = None
    # ModifyListenerAttributes keys and values as AWS takes them; AWS validates the keys.
    attributes: dict[str, str] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out while unset, so a listener that uses neither keeps the canonical JSON (and
        # every stored checkpoint) it had before these fields existed.
        data: dict[str, Any] = handler(self)
        if self.mutual_authentication is None:
            data.pop("mutual_authentication", None)
        if not self.attributes:
            data.pop("attributes", None)
        return data

    @model_validator(mode="after")
    def _mutual_tls_on_https(self) -> Listener:
        if self.mutual_authentication is not None and self.protocol != "HTTPS":
            raise ValueError("mutual authentication is an HTTPS listener setting")
        return self

    @field_validator("certificates", mode="before")
    @classmethod
    def _certs(cls, value: object) -> object:
        if isinstance(value, (list, tuple)) and all(_cert_key(v) is not None for v in value):
            items = list(value)
            if not items:
                return ()
            first = _cert_key(items[0])
            rest: dict[str, object] = {}
            for item in items[1:]:
                key = _cert_key(item)
                if key is not None and key != first:
                    rest.setdefault(key, item)
            return (items[0], *(rest[k] for k in sorted(rest)))
        return value


def _cert_key(value: object) -> str | None:
    """A listener certificate's sort and identity key: the ARN, or the `$ref` path."""
    if isinstance(value, str):
        return value
    if isinstance(value, Ref):
        return value.ref
    if isinstance(value, dict) and isinstance(value.get("$ref"), str):
        return str(value["$ref"])
    return None


class ListenerRule(Tagged):
    listener_arn: Ref
    priority: int = Field(ge=1, le=50000)
    conditions: Items[Condition] = Field(min_length=1)
    actions: Items[Action] = Field(min_length=1)
    # At most one of each type (AWS); kept in type order, which carries no meaning.
    transforms: Items[RuleTransform] = ()

    @field_validator("transforms", mode="after")
    @classmethod
    def _transforms(cls, value: Sequence[RuleTransform]) -> tuple[RuleTransform, ...]:
        types = [t.type for t in value]
        if len(types) != len(set(types)):
            raise ValueError("rule has two transforms of one type; AWS allows one "
                             "host-header-rewrite and one url-rewrite")
        return tuple(sorted(value, key=lambda t: t.type))

    @model_serializer(mode="wrap")
    def _compat(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A rule without transforms serializes as before they existed: its stack's
        # canonical JSON, and checkpoint, stay the same.
        out: dict[str, object] = handler(self)
        if not self.transforms:
            out.pop("transforms", None)
        return out

    @field_validator("conditions", mode="after")
    @classmethod
    def _conditions(cls, value: Sequence[Condition]) -> tuple[Condition, ...]:
        # Conditions are AND-ed: their order carries no meaning, so fix one.
        total = sum(condition_value_count(c) for c in value)
        if total > MAX_CONDITION_VALUES:
            raise ValueError(
                f"rule has {total} condition values; AWS allows at most {MAX_CONDITION_VALUES}"
            )
        singles = [c.field for c in value if c.field not in ("http-header", "query-string")]
        if len(singles) != len(set(singles)):
            raise ValueError("rule repeats a host-header/path-pattern/source-ip/method condition")
        return tuple(sorted(value, key=condition_sort_key))
