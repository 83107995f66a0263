"""Pruning of custom resources by their structural schema, as the real API server prunes."""

from __future__ import annotations

from typing import Any

from runtime.envtest.pruning import prune

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {
                "key": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "any": {"type": "object", "additionalProperties": True},
            "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                         "properties": {"spec": {"type": "object"}}},
            "port": {"x-kubernetes-int-or-string": True},
        }},
    },
}


def test_unknown_fields_go_and_known_ones_stay() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "labels": {"k": "v"}},
        "extra": 1,
        "spec": {"name": "n", "unknown": True, "tags": [{"key": "k", "value": "dropped"}],
                 "labels": {"a": "b"}, "free": {"anything": {"deep": 1}}, "any": {"x": 1},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                              "spec": {"gone": 1}, "other": 2},
                 "port": "http"}}
    prune(obj, SCHEMA)
    assert obj == {
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "labels": {"k": "v"}},
        "spec": {"name": "n", "tags": [{"key": "k"}], "labels": {"a": "b"},
                 "free": {"anything": {"deep": 1}}, "any": {"x": 1},
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                              "spec": {}},
                 "port": "http"}}


def test_without_a_schema_nothing_is_pruned() -> None:
    obj = {"spec": {"x": 1}}
    prune(obj, None)
    assert obj == {"spec": {"x": 1}}
