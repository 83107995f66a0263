"""botocore's data (service models, endpoint data) as the controller loads it: once per process,
and only what it uses.

Once: a botocore session parses its service models and endpoint data the first time a client
needs them, and caches them in its own loader. The controller has one session, but whoever
makes several (a test process makes one per AWS pool and per stand-in client) would parse the
same files again each time, most of the CPU of a suite of integration tests. Sessions given a
shared loader parse each file once; what a loader returns is only read by botocore.

Only what it uses (`trimmed=True`, the client pool's loader): EC2's service model describes
some 750 operations, of which the controller calls ten, and botocore's endpoint data covers
every AWS service. Decoded whole they are about 21 MB of Python objects, a tenth of the
controller's memory on a large cluster, and freeing them afterwards gives little back (their
memory is interleaved with what stays). So the file is read as raw JSON (msgspec) and only the
operations in `TRIMMED_OPERATIONS`, the shapes they reach, and the endpoint data of the services
in `ENDPOINT_SERVICES` are ever decoded; documentation strings, which only botocore's
docstrings read, are left out of every model. The operations the code calls are derived from
the source by the IAM policy test, which also checks that each is in `TRIMMED_OPERATIONS`.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any, TypeVar

import msgspec
from botocore.loaders import JSONFileLoader, Loader, create_loader

S = TypeVar("S")

# Service (botocore client name) → the only operations its trimmed model describes.
TRIMMED_OPERATIONS: Mapping[str, frozenset[str]] = {
    "ec2": frozenset({
        "AuthorizeSecurityGroupIngress", "CreateSecurityGroup", "CreateTags",
        "DeleteSecurityGroup", "DeleteTags", "DescribeInstances", "DescribeNetworkInterfaces",
        "DescribeRouteTables", "DescribeSecurityGroups", "DescribeSubnets", "DescribeVpcs",
        "RevokeSecurityGroupIngress", "UpdateSecurityGroupRuleDescriptionsIngress",
    }),
}
# Endpoint prefixes whose endpoint data the trimmed loader keeps: the services the controller
# makes clients of, and STS (credentials). Another service would get its partition's defaults.
ENDPOINT_SERVICES: frozenset[str] = frozenset({
    "acm", "ec2", "elasticloadbalancing", "iam", "route53", "shield", "sts", "tagging",
    "waf-regional", "wafv2",
})

_RAW_MAP = msgspec.json.Decoder(dict[str, msgspec.Raw])


class TrimmingFileLoader(JSONFileLoader):  # type: ignore[misc]
    """botocore's JSON file loader, giving trimmed service models and endpoint data (see the
    module's docstring); every other file as botocore reads it."""

    def __init__(self, operations: Mapping[str, frozenset[str]] = TRIMMED_OPERATIONS,
                 endpoint_services: frozenset[str] = ENDPOINT_SERVICES) -> None:
        self._operations = operations
        self._endpoint_services = endpoint_services

    def load_file(self, file_path: str) -> Any:
        parts = PurePath(file_path).parts
        if parts[-1] == "service-2" and len(parts) >= 3:
            payload = _read(file_path)
            return None if payload is None else trim_model(
                payload, self._operations.get(parts[-3]))
        if parts[-1] == "endpoints":
            payload = _read(file_path)
            return None if payload is None else trim_endpoints(payload,
                                                               self._endpoint_services)
        return super().load_file(file_path)


def _read(path: str) -> bytes | None:
    """The file's bytes, as botocore looks for it: `.json`, then `.json.gz`."""
    if os.path.isfile(path + ".json"):
        with open(path + ".json", "rb") as plain:
            return plain.read()
    if os.path.isfile(path + ".json.gz"):
        with gzip.open(path + ".json.gz", "rb") as packed:
            return packed.read()
    return None


def trim_model(payload: bytes, operations: Iterable[str] | None) -> dict[str, Any]:
    """A service model with only `operations` (all when None) and the shapes they reach, and
    no documentation."""
    top = _RAW_MAP.decode(payload)
    model: dict[str, Any] = {key: msgspec.json.decode(value) for key, value in top.items()
                             if key not in ("operations", "shapes", "documentation")}
    raw_ops = _RAW_MAP.decode(top["operations"]) if "operations" in top else {}
    raw_shapes = _RAW_MAP.decode(top["shapes"]) if "shapes" in top else {}
    wanted = raw_ops.keys() if operations is None else [o for o in operations if o in raw_ops]
    ops = {name: _undocumented(msgspec.json.decode(raw_ops[name])) for name in sorted(wanted)}
    shapes: dict[str, Any] = {}
    pending = [ref["shape"] for op in ops.values() for ref in _shape_refs(op)]
    while pending:
        name = pending.pop()
        if name in shapes or name not in raw_shapes:
            continue
        shape = shapes[name] = _undocumented(msgspec.json.decode(raw_shapes[name]))
        pending.extend(ref["shape"] for ref in _member_refs(shape))
    model["operations"] = ops
    model["shapes"] = shapes
    return model


def _shape_refs(operation: dict[str, Any]) -> list[dict[str, Any]]:
    refs = [operation[k] for k in ("input", "output") if isinstance(operation.get(k), dict)]
    refs.extend(e for e in operation.get("errors") or () if isinstance(e, dict))
    return [r for r in refs if isinstance(r.get("shape"), str)]


def _member_refs(shape: dict[str, Any]) -> list[dict[str, Any]]:
    members = shape.get("members")
    refs = list(members.values()) if isinstance(members, dict) else []
    refs.extend(shape[k] for k in ("member", "key", "value") if isinstance(shape.get(k), dict))
    return [r for r in refs if isinstance(r, dict) and isinstance(r.get("shape"), str)]


def _undocumented(node: dict[str, Any]) -> dict[str, Any]:
    """An operation or shape without its documentation, nor that of its members."""
    node.pop("documentation", None)
    members = node.get("members")
    if isinstance(members, dict):
        for member in members.values():
            if isinstance(member, dict):
                member.pop("documentation", None)
    return node


def trim_endpoints(payload: bytes, services: frozenset[str]) -> dict[str, Any]:
    """botocore's endpoint data with only `services` in each partition."""
    data: dict[str, Any] = msgspec.json.decode(payload)
    for partition in data.get("partitions") or ():
        known = partition.get("services")
        if isinstance(known, dict):
            partition["services"] = {k: v for k, v in known.items() if k in services}
    return data


_loaders: dict[tuple[Any, bool], Loader] = {}
_lock = threading.Lock()  # stand-in clients are made on other threads too


def with_shared_loader(session: S, *, trimmed: bool = False) -> S:
    """`session` (botocore's or aiobotocore's) reading data through the process's loader for
    its data path (`AWS_DATA_PATH`), the trimmed one when `trimmed`."""
    data_path = session.get_config_variable("data_path")  # type: ignore[attr-defined]
    with _lock:
        loader = _loaders.get((data_path, trimmed))
        if loader is None:
            loader = create_loader(data_path)
            if trimmed:
                loader.file_loader = TrimmingFileLoader()
            _loaders[(data_path, trimmed)] = loader
    session.register_component("data_loader", loader)  # type: ignore[attr-defined]
    return session


__all__ = ["ENDPOINT_SERVICES", "TRIMMED_OPERATIONS", "TrimmingFileLoader", "trim_endpoints",
           "trim_model", "with_shared_loader"]
