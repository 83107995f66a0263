"""Inbound rules in one normal form, whoever wrote them.

EC2 groups rules that share protocol and ports into one `IpPermission` with several sources;
`expand` splits every permission into one `Permission` per source (upstream's expansion), and
`to_api` writes them back one source each. Two permissions are the same rule when protocol,
ports and source are equal; descriptions are not part of a rule's identity (AWS refuses a second
rule that differs only in its description), they only say who owns it. Owned rules carry
`key=value` labels in their description, upstream's convention
(`elbv2.k8s.aws/targetGroupBinding=shared` on the targets' groups).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from controller.model import IngressRule

SourceKind = Literal["cidr", "cidr6", "prefix-list", "group"]

# EC2 accepts protocol numbers and names and answers with what it was given for these; the
# same rule must compare equal either way.
_PROTOCOL_NAMES = {"6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6", "all": "-1"}
_LABEL = re.compile(r"([^\s,=]+)=([^\s,=]+)(?:,|$)")
_SOURCE_FIELDS: dict[SourceKind, tuple[str, str]] = {
    "cidr": ("IpRanges", "CidrIp"),
    "cidr6": ("Ipv6Ranges", "CidrIpv6"),
    "prefix-list": ("PrefixListIds", "PrefixListId"),
    "group": ("UserIdGroupPairs", "GroupId"),
}


def normal_protocol(protocol: str) -> str:
    lowered = protocol.lower()
    return _PROTOCOL_NAMES.get(lowered, lowered)


@dataclass(frozen=True, order=True, slots=True)
class Permission:
    protocol: str
    from_port: int
    to_port: int
    source_kind: SourceKind
    source: str
    description: str = ""

    @property
    def rule(self) -> tuple[str, int, int, str, str]:
        """The rule's identity: everything but the description."""
        return self.protocol, self.from_port, self.to_port, self.source_kind, self.source

    @property
    def labels(self) -> dict[str, str]:
        return dict(_LABEL.findall(self.description))

    def has_labels(self, wanted: Mapping[str, str]) -> bool:
        labels = self.labels
        return all(labels.get(k) == v for k, v in wanted.items())

    def show(self) -> str:
        ports = (f"{self.from_port}" if self.from_port == self.to_port
                 else f"{self.from_port}-{self.to_port}")
        return f"{self.protocol}/{ports} from {self.source}"


def description_for(labels: Mapping[str, str]) -> str:
    """The description carrying `labels`, sorted by key, as upstream writes it."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def from_model(rule: IngressRule, *, description: str = "") -> Permission:
    if rule.cidr_ipv4 is not None:
        kind: SourceKind = "cidr"
        source = rule.cidr_ipv4
    elif rule.cidr_ipv6 is not None:
        kind, source = "cidr6", rule.cidr_ipv6
    else:
        kind, source = "prefix-list", str(rule.prefix_list_id)
    return Permission(normal_protocol(rule.protocol), rule.from_port, rule.to_port, kind, source,
                      description)


def _ports(permission: Mapping[str, Any]) -> tuple[int, int]:
    protocol = normal_protocol(str(permission.get("IpProtocol", "-1")))
    if protocol == "-1":
        return -1, -1
    return int(permission.get("FromPort", -1)), int(permission.get("ToPort", -1))


def expand(permissions: Iterable[Mapping[str, Any]]) -> Iterator[Permission]:
    """One `Permission` per source of each `IpPermission` DescribeSecurityGroups returned."""
    for permission in permissions:
        protocol = normal_protocol(str(permission.get("IpProtocol", "-1")))
        low, high = _ports(permission)
        for kind, (list_key, item_key) in _SOURCE_FIELDS.items():
            for item in permission.get(list_key) or []:
                source = item.get(item_key)
                if source:
                    yield Permission(protocol, low, high, kind, str(source),
                                     str(item.get("Description") or ""))


def to_api(permissions: Iterable[Permission], *, with_descriptions: bool = True
           ) -> list[dict[str, Any]]:
    """`IpPermissions` for Authorize/RevokeSecurityGroupIngress, one source each."""
    out: list[dict[str, Any]] = []
    for p in sorted(permissions):
        list_key, item_key = _SOURCE_FIELDS[p.source_kind]
        item: dict[str, Any] = {item_key: p.source}
        if with_descriptions and p.description:
            item["Description"] = p.description
        entry: dict[str, Any] = {"IpProtocol": p.protocol, list_key: [item]}
        if p.protocol != "-1":
            entry["FromPort"] = p.from_port
            entry["ToPort"] = p.to_port
        out.append(entry)
    return out


__all__ = ["Permission", "SourceKind", "description_for", "expand", "from_model",
           "normal_protocol", "to_api"]
