"""Per-listener settings of a group: mutual TLS and listener attributes, merged over the members
that listen on a port as upstream merges them (pkg/ingress/model_builder.go,
model_build_listener.go).

- Mutual TLS applies to HTTPS listen ports only; members that set it for a port must set the
  same, or the group does not build (naming both members). With the `EnhancedDefaultBehavior`
  gate an HTTPS listener no member configures gets mode `off`, so removing the annotation turns
  mutual TLS off; without it such a listener is left as AWS has it (upstream's legacy).
- Listener attributes: IngressClassParams `listeners[]` (of the port's first member's class)
  win over the `listener-attributes.<PROTOCOL>-<port>` annotations; members whose annotations
  disagree on a key the params do not set make the group fail, naming both.
A setting naming a port or listener the member does not have is reported, never silently
dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.ingress.annotations import IngressAnnotations
from controller.ingress.groups import Member
from controller.ingress.merge import BuildError
from controller.ingress.schemas import ListenPort
from controller.model import MutualAuthentication

MemberPorts = Sequence[tuple[Member, IngressAnnotations, tuple[ListenPort, ...]]]


@dataclass(frozen=True)
class ListenerSettings:
    mutual_authentication: Mapping[int, MutualAuthentication] = field(default_factory=dict)
    attributes: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def listener_settings(members: MemberPorts, ports: Mapping[int, str], *,
                      enhanced_defaults: bool) -> ListenerSettings:
    mtls: dict[int, MutualAuthentication] = {}
    attributes: dict[int, Mapping[str, str]] = {}
    warnings: list[str] = []
    for member, ann, own in members:
        names = {f"{lp.protocol}-{lp.port}" for lp in own}
        https = {lp.port for lp in own if lp.protocol == "HTTPS"}
        stray = sorted(set(ann.mutual_authentication or {}) - https)
        if stray:
            warnings.append(f"Ingress {member.key}: annotation {PREFIX}mutual-authentication "
                            f"names port(s) {', '.join(map(str, stray))}, not HTTPS listen "
                            "ports of it: mutual TLS applies to HTTPS listeners only")
        warnings.extend(f"Ingress {member.key}: annotation {PREFIX}listener-attributes.{name} "
                        f"names no listener of it (its listeners: {', '.join(sorted(names))})"
                        for name in sorted(set(ann.listener_attributes) - names))
    for port, protocol in sorted(ports.items()):
        on_port = [(m, a) for m, a, own in members if any(lp.port == port for lp in own)]
        if protocol == "HTTPS":
            chosen = _mutual_authentication(port, on_port)
            if chosen is None and enhanced_defaults:
                chosen = MutualAuthentication(mode="off")
            if chosen is not None:
                mtls[port] = chosen
        merged = _attributes(port, protocol, on_port)
        if merged:
            attributes[port] = merged
    return ListenerSettings(mtls, attributes, tuple(warnings))


def _mutual_authentication(port: int, on_port: Sequence[tuple[Member, IngressAnnotations]]
                           ) -> MutualAuthentication | None:
    chosen: MutualAuthentication | None = None
    owner = ""
    for member, ann in on_port:
        value = (ann.mutual_authentication or {}).get(port)
        if value is None:
            continue
        if chosen is None:
            chosen, owner = value, member.key
        elif value != chosen:
            raise BuildError(f"annotation {PREFIX}mutual-authentication conflicts within the "
                             f"group for port {port}: {owner} has {_show_mtls(chosen)}, "
                             f"{member.key} has {_show_mtls(value)}")
    return chosen


def _show_mtls(value: MutualAuthentication) -> str:
    parts = [f"mode={value.mode}"]
    if value.trust_store:
        parts.append(f"trustStore={value.trust_store}")
    if value.ignore_client_certificate_expiry is not None:
        parts.append("ignoreClientCertificateExpiry="
                     f"{str(value.ignore_client_certificate_expiry).lower()}")
    if value.advertise_trust_store_ca_names is not None:
        parts.append(f"advertiseTrustStoreCaNames={value.advertise_trust_store_ca_names}")
    return "'" + ",".join(parts) + "'"


def _attributes(port: int, protocol: str, on_port: Sequence[tuple[Member, IngressAnnotations]]
                ) -> dict[str, str]:
    if not on_port:
        return {}
    first = on_port[0][0]
    params = first.info.params if first.info else None
    from_class = (params.listener_attributes(protocol, port) if params is not None else None) or {}
    merged: dict[str, str] = {}
    owners: dict[str, str] = {}
    name = f"{protocol}-{port}"
    for member, ann in on_port:
        for key, value in sorted((ann.listener_attributes.get(name) or {}).items()):
            if key in merged and merged[key] != value and key not in from_class:
                raise BuildError(
                    f"annotation {PREFIX}listener-attributes.{name} conflicts within the group "
                    f"on attribute {key}: {owners[key]} has '{merged[key]}', {member.key} has "
                    f"'{value}'")
            merged[key] = value
            owners.setdefault(key, member.key)
    return {**merged, **from_class}
