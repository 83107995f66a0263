"""Canonical JSON and digests.

Canonical form: `{"id", "kind", "resources": {<type>: {<id>: <resource>}}}` with sorted keys,
compact separators, ASCII escapes, set-valued lists sorted by the models, `$ref`s instead of
deploy-time values, and OIDC client credentials replaced by `[REDACTED]`. Python dict insertion
order and pydantic field order therefore never change the bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from controller.model.base import RESOURCE_TYPES
from controller.model.stack import Stack


def dumps(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def digest(data: bytes) -> str:
    """base64url(sha256(data)) without padding: 43 characters."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def stack_document(stack: Stack, *, reveal_secrets: bool = False) -> dict[str, Any]:
    ctx = {"reveal_secrets": reveal_secrets}
    resources: dict[str, dict[str, Any]] = {}
    for rtype in RESOURCE_TYPES:
        items = stack.resources_of(rtype)
        if items:
            resources[rtype] = {
                rid: res.model_dump(mode="json", by_alias=True, context=ctx)
                for rid, res in items.items()
            }
    return {"id": stack.id, "kind": stack.kind, "resources": resources}


def canonical_json(stack: Stack) -> bytes:
    return dumps(stack_document(stack))


def secret_digest(stack: Stack) -> str:
    """Digest of the redacted material alone, so a rotated client secret changes a checkpoint
    while the canonical JSON (which may be logged) stays free of it."""
    return digest(dumps([list(item) for item in stack.secret_material()]))


def checkpoint_digest(stack: Stack) -> str:
    """One digest over the canonical JSON with the secret digest folded in."""
    return digest(canonical_json(stack) + b"\n" + secret_digest(stack).encode())
