"""Listeners and listener rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator

from controller.model.actions import Action
from controller.model.base import Items, Model, Ref, Tagged
from controller.model.ruleconditions import MAX_CONDITION_VALUES, Condition, condition_sort_key

ListenerProtocol = Literal["HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP"]
AlpnPolicy = Literal["HTTP1Only", "HTTP2Only", "HTTP2Optional", "HTTP2Preferred", "None"]


class CertificateDiscovery(Model):
    """Placeholder resolved by the resolve stage: ACM certificates covering these hosts, and,
    when `authorities` is given (`--allowed-certificate-authority-arns`), issued by one of those
    private CAs only. An empty `authorities` is left out of the canonical JSON, so stacks that
    do not restrict discovery keep their checkpoints."""

    hosts: Items[str] = Field(min_length=1)
    authorities: Items[str] = Field(default=(), exclude_if=lambda value: not value)
    # With --enable-secret-certificates: certificates imported from a namespace's TLS Secret
    # (tagged `elbv2.k8s.aws/secret`) are that namespace's, never discovered for another group.
    # Left out of the canonical JSON when false, like `authorities`.
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

    @field_validator("conditions", mode="after")
    @classmethod
    def _conditions(cls, value: Sequence[Condition]) -> tuple[Condition, ...]:
        # Conditions are AND-ed: their order carries no meaning, so fix one.
        total = sum(len(c.values) for c in value)
        if total > MAX_CONDITION_VALUES:
            raise ValueError(
                f"rule has {total} condition values; AWS allows at most {MAX_CONDITION_VALUES}"
            )
        singles = [c.field for c in value if c.field not in ("http-header", "query-string")]
        if len(singles) != len(set(singles)):
            raise ValueError("rule repeats a host-header/path-pattern/source-ip/method condition")
        return tuple(sorted(value, key=condition_sort_key))
