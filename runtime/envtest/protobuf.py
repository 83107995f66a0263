"""Decoding of the protobuf request bodies kubectl's typed commands send (`kubectl create
namespace|configmap|secret|serviceaccount|service`, `kubectl auth can-i|whoami`). Only those
kinds are known; any other
protobuf body gets 415, after which a client must send JSON.

Wire format: the 4-byte magic `k8s\\0`, then a `runtime.Unknown` message (typeMeta = 1,
raw = 2) whose `raw` is the object's own message. Field numbers follow k8s.io/api's
generated.proto for the fields listed here; unlisted fields are skipped.
"""

from __future__ import annotations

import base64
from typing import Any

from runtime.envtest.status import StatusError, bad_request

MAGIC = b"k8s\x00"

# message name → field number → (JSON name, type). Types: "string", "bytes", "bool", "int",
# "strings" (repeated string), "map" (string→string), "bytemap" (string→bytes, base64 in JSON),
# "intorstr", a message name, or "[]" + a message name.
_Field = tuple[str, str]
_SCHEMAS: dict[str, dict[int, _Field]] = {
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"),
                   3: ("namespace", "string"), 11: ("labels", "map"),
                   12: ("annotations", "map"), 13: ("ownerReferences", "[]OwnerReference"),
                   14: ("finalizers", "strings")},
    "OwnerReference": {1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
                       5: ("apiVersion", "string"), 6: ("controller", "bool"),
                       7: ("blockOwnerDeletion", "bool")},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 2: ("data", "map"),
                  3: ("binaryData", "bytemap"), 4: ("immutable", "bool")},
    "Secret": {1: ("metadata", "ObjectMeta"), 2: ("data", "bytemap"), 3: ("type", "string"),
               4: ("stringData", "map"), 5: ("immutable", "bool")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "strings")},
    "ServiceAccount": {1: ("metadata", "ObjectMeta"), 2: ("secrets", "[]ObjectReference"),
                       3: ("imagePullSecrets", "[]LocalObjectReference"),
                       4: ("automountServiceAccountToken", "bool")},
    "ObjectReference": {1: ("kind", "string"), 2: ("namespace", "string"),
                        3: ("name", "string"), 4: ("uid", "string"),
                        5: ("apiVersion", "string")},
    "LocalObjectReference": {1: ("name", "string")},
    "Service": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ServiceSpec")},
    "ServiceSpec": {1: ("ports", "[]ServicePort"), 2: ("selector", "map"),
                    3: ("clusterIP", "string"), 4: ("type", "string"),
                    5: ("externalIPs", "strings"), 7: ("sessionAffinity", "string"),
                    8: ("loadBalancerIP", "string"), 9: ("loadBalancerSourceRanges", "strings"),
                    10: ("externalName", "string"), 11: ("externalTrafficPolicy", "string"),
                    18: ("clusterIPs", "strings")},
    "ServicePort": {1: ("name", "string"), 2: ("protocol", "string"), 3: ("port", "int"),
                    4: ("targetPort", "intorstr"), 5: ("nodePort", "int"),
                    6: ("appProtocol", "string")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "string")},
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"),
                                2: ("spec", "SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", "string"), 2: ("verb", "string"),
                           3: ("group", "string"), 4: ("version", "string"),
                           5: ("resource", "string"), 6: ("subresource", "string"),
                           7: ("name", "string")},
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta")},
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
}
KINDS = frozenset({"ConfigMap", "Secret", "Namespace", "ServiceAccount", "Service",
                   "SelfSubjectAccessReview", "SelfSubjectReview"})


class _Malformed(ValueError):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise _Malformed("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Malformed("varint too long")


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise _Malformed("truncated field")
            out.append((number, buf[pos:pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _Malformed(f"unsupported wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _message(buf: bytes, name: str) -> dict[str, Any]:
    schema = _SCHEMAS[name]
    obj: dict[str, Any] = {}
    for number, value in _fields(buf):
        spec = schema.get(number)
        if spec is None:
            continue
        key, kind = spec
        # Go encodes every scalar, zero or not; its JSON omits zero values, so drop them here.
        if kind in ("int", "bool"):
            if not isinstance(value, int):
                raise _Malformed(f"{key}: expected a number")
            if value:
                obj[key] = True if kind == "bool" else _signed(value)
            continue
        if not isinstance(value, bytes):
            raise _Malformed(f"{key}: expected length-delimited data")
        if kind == "string":
            if value:
                obj[key] = value.decode()
        elif kind == "bytes":
            obj[key] = value
        elif kind == "strings":
            obj.setdefault(key, []).append(value.decode())
        elif kind in ("map", "bytemap"):
            entry = dict(_fields(value))
            k, v = entry.get(1, b""), entry.get(2, b"")
            if not isinstance(k, bytes) or not isinstance(v, bytes):
                raise _Malformed(f"{key}: bad map entry")
            text = base64.b64encode(v).decode() if kind == "bytemap" else v.decode()
            obj.setdefault(key, {})[k.decode()] = text
        elif kind == "intorstr":
            ios = _message(value, "IntOrString")
            obj[key] = ios.get("strVal", "") if ios.get("type") == 1 else ios.get("intVal", 0)
        elif kind.startswith("[]"):
            obj.setdefault(key, []).append(_message(value, kind[2:]))
        else:
            obj[key] = _message(value, kind)
    return obj


def decode(raw: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object, or a StatusError (415 for unknown kinds)."""
    if not raw.startswith(MAGIC):
        raise bad_request("the body of the request was in an unknown format: missing protobuf "
                          "magic prefix")
    try:
        envelope = _message(raw[len(MAGIC):], "Unknown")
        type_meta = envelope.get("typeMeta", {})
        kind = type_meta.get("kind", "")
        if kind not in KINDS:
            raise StatusError(415, f"the body of the request was in an unknown format - "
                              f"accepted media types include: application/json, "
                              f"application/yaml (protobuf is understood only for "
                              f"{', '.join(sorted(KINDS))}, not {kind or 'this kind'})")
        obj = _message(envelope.get("raw", b""), kind)
    except (_Malformed, UnicodeDecodeError) as exc:
        raise bad_request(f"the body of the request could not be decoded as protobuf: {exc}"
                          ) from None
    return {"apiVersion": type_meta.get("apiVersion", "v1"), "kind": kind, **obj}
