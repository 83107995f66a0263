"""Canonical JSON and digests.

Canonical form: `{"id", "kind", "context", "resources": {<type>: {<id>: <resource>}}}` with
sorted keys, compact separators, ASCII escapes, set-valued lists sorted by the models, `$ref`s
instead of deploy-time values, and OIDC client credentials replaced by `[REDACTED]` (their
Secret's version stands for them). Python dict insertion order and pydantic field order
therefore never change the bytes, and nothing secret is ever digested.
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
    return {"id": stack.id, "kind": stack.kind,
            "context": stack.context.model_dump(mode="json", by_alias=True),
            "resources": resources}


def canonical_json(stack: Stack) -> bytes:
    return dumps(stack_document(stack))


def checkpoint_digest(stack: Stack) -> str:
    """The digest a checkpoint uses: the canonical JSON's, which covers everything the
    deployer acts on (write-only credentials through their Secret's version)."""
    return digest(canonical_json(stack))
