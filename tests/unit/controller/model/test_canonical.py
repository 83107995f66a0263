"""Canonical JSON: stable across construction order, sensitive to every value, secrets apart."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from controller.model import REDACTED, Stack, canonical_json, checkpoint_digest, digest
from tests.unit.controller.model.stacks import stack_documents

# Lists whose order carries no meaning (AWS treats them as sets).
_SET_KEYS = {"subnets", "security_groups", "values", "target_groups", "conditions", "hosts"}
_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _shuffled(value: Any, rng: random.Random, key: str = "") -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng, k) for k, v in items}
    if isinstance(value, list):
        items = [_shuffled(v, rng) for v in value]
        if key in _SET_KEYS:
            rng.shuffle(items)
        elif key == "certificates" and len(items) > 2:
            rest = items[1:]
            rng.shuffle(rest)  # only the first (default) certificate's position matters
            items = [items[0], *rest]
        return items
    return value


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    elif value is not None:
        yield path


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


_ALTERNATIVES = ["internal", "internet-facing", "HTTP", "HTTPS", "ip", "instance", "ipv4",
                 "dualstack", "HTTP_301", "HTTP_302", "HTTP1", "HTTP2", "GRPC", "elb",
                 "internal-elb", "traffic-port", "200", "201", "service"]


def _mutations(old: Any) -> list[Any]:
    if isinstance(old, bool):
        return [not old]
    if isinstance(old, int):
        return [old + 1, old - 1]
    assert isinstance(old, str)
    return [old + "x", *(a for a in _ALTERNATIVES if a != old)]


@_SETTINGS
@given(stack_documents(), st.randoms(use_true_random=False))
def test_construction_order_never_changes_the_bytes(doc: dict[str, Any],
                                                    rng: random.Random) -> None:
    a = Stack.model_validate(doc)
    b = Stack.model_validate(_shuffled(copy.deepcopy(doc), rng))
    assert canonical_json(a) == canonical_json(b)
    assert digest(canonical_json(a)) == digest(canonical_json(b))


@_SETTINGS
@given(stack_documents(), st.data())
def test_any_single_value_change_changes_the_digest(doc: dict[str, Any],
                                                    data: st.DataObject) -> None:
    before = Stack.model_validate(doc)
    path = data.draw(st.sampled_from(sorted(_leaves(doc), key=repr)))
    old = _get(doc, path)
    mutated = None
    for candidate in _mutations(old):
        trial = copy.deepcopy(doc)
        _set(trial, path, candidate)
        try:
            mutated = Stack.model_validate(trial)
        except ValidationError:
            continue
        break
    assume(mutated is not None)
    assert mutated is not None
    # A change inside a set that only reorders or merges it is not a change.
    assume(before.model_dump(context={"reveal_secrets": True})
           != mutated.model_dump(context={"reveal_secrets": True}))
    if path[-1] in ("client_id", "client_secret"):
        # Credentials are never digested: their Secret's version stands for them.
        assert canonical_json(mutated) == canonical_json(before)
        assert checkpoint_digest(mutated) == checkpoint_digest(before)
    else:
        assert digest(canonical_json(mutated)) != digest(canonical_json(before))
        assert checkpoint_digest(mutated) != checkpoint_digest(before)


@_SETTINGS
@given(stack_documents())
def test_secret_is_redacted_and_stood_for_by_its_version(doc: dict[str, Any]) -> None:
    rule = doc["listener_rules"]["443:1"]
    oidc = {"type": "authenticate-oidc", "issuer": "https://idp",
            "authorization_endpoint": "https://a", "token_endpoint": "https://t",
            "user_info_endpoint": "https://u", "client_id": "my-client",
            "client_secret": "s3cret-one", "credentials_version": "uid-1/100"}
    rule["actions"] = [oidc, *(a for a in rule["actions"] if a["type"] == "forward")]
    first = Stack.model_validate(doc)
    oidc["client_secret"] = "s3cret-two"
    second = Stack.model_validate(doc)
    oidc["credentials_version"] = "uid-1/101"  # what a rotation of the Secret gives
    third = Stack.model_validate(doc)
    text = canonical_json(first).decode()
    assert "s3cret" not in text
    assert "my-client" not in text
    assert REDACTED in text
    assert canonical_json(first) == canonical_json(second)
    assert checkpoint_digest(first) == checkpoint_digest(second)
    assert checkpoint_digest(first) != checkpoint_digest(third)


@_SETTINGS
@given(stack_documents())
def test_canonical_form_is_sorted_compact_and_ref_only(doc: dict[str, Any]) -> None:
    stack = Stack.model_validate(doc)
    raw = canonical_json(stack)
    parsed = json.loads(raw)
    assert json.dumps(parsed, sort_keys=True, separators=(",", ":")).encode() == raw
    assert set(parsed) == {"id", "kind", "context", "resources"}
    assert "arn:aws" not in raw.decode()
    assert '{"$ref":"#/resources/AWS::ElasticLoadBalancingV2::LoadBalancer/LoadBalancer/' \
           'status/loadBalancerARN"}' in raw.decode()
    d = digest(canonical_json(stack))
    assert len(d) == 43
    assert "=" not in d
    assert "+" not in d
    assert "/" not in d
    assert d == digest(raw)
