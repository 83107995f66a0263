"""TargetGroupBinding checkpoints, in upstream's format (v2.9.1+) so that upstream and aiolbc
read each other's annotations: `<sha256(sorted endpoint ids, comma-joined)>/<sha256(spec json)>`,
each base64url without padding. "" is never a valid value, which is why it is the reset marker
written before any register/deregister: a crash between the two leaves no false match behind."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION, CHECKPOINT_TIMESTAMP_ANNOTATION
from controller.targetgroupbinding.endpointsets import EndpointSet, endpoints_digest
from controller.targetgroupbinding.targets import Endpoint


def sha256_b64(data: str) -> str:
    digest = hashlib.sha256(data.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def compute(endpoints: EndpointSet | Iterable[Endpoint], spec: dict[str, Any]) -> str:
    """An `EndpointSet` brings its endpoint digest along (computed once per set)."""
    digest = endpoints.digest if isinstance(endpoints, EndpointSet) else endpoints_digest(
        e.checkpoint_id for e in endpoints)
    spec_json = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return f"{digest}/{sha256_b64(spec_json)}"


def stored(obj: dict[str, Any]) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(CHECKPOINT_ANNOTATION) or "")


def written_at(obj: dict[str, Any]) -> float | None:
    """The checkpoint-timestamp (Unix seconds), None when missing or not a whole number."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(CHECKPOINT_TIMESTAMP_ANNOTATION)
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        return None
    return float(raw)


def patch(value: str, timestamp: float) -> dict[str, Any]:
    """Merge patch writing the checkpoint and its Unix-seconds timestamp."""
    return {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: value,
        CHECKPOINT_TIMESTAMP_ANNOTATION: str(int(timestamp)),
    }}}
