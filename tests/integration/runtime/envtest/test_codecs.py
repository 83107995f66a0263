"""Patch and protobuf codecs on their own: the corners the HTTP tests do not reach."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.envtest import protobuf
from runtime.envtest.patch import json_patch, merge_patch, strategic_merge
from runtime.envtest.status import StatusError


def test_strategic_merge_directives() -> None:
    target: dict[str, Any] = {"metadata": {"finalizers": ["a", "b", "c"]},
              "spec": {"template": {"x": 1, "y": 2},
                       "containers": [{"name": "a", "image": "1"}]}}
    patch = {"$deleteFromPrimitiveList/finalizers": ["b"],
             "$setElementOrder/finalizers": ["a", "c"]}
    assert strategic_merge(target, {"metadata": patch})["metadata"]["finalizers"] == ["a", "c"]
    replaced = strategic_merge(target, {"spec": {"template": {"$patch": "replace", "z": 3}}})
    assert replaced["spec"]["template"] == {"z": 3}
    deleted = strategic_merge(target, {"spec": {"template": {"$patch": "delete"}}})
    assert "template" not in deleted["spec"]
    whole = strategic_merge(target, {"spec": {"containers": [
        {"name": "b", "image": "2"}, {"$patch": "replace"}]}})
    assert whole["spec"]["containers"] == [{"name": "b", "image": "2"}]
    # Lists without a merge key are replaced, as lists without a patch strategy are.
    assert strategic_merge({"spec": {"args": [1, 2]}}, {"spec": {"args": [3]}}) == {
        "spec": {"args": [3]}}
    assert target["metadata"]["finalizers"] == ["a", "b", "c"]  # inputs are not mutated


def test_merge_and_json_patch_corners() -> None:
    assert merge_patch({"a": {"b": 1}}, {"a": None, "c": [1]}) == {"c": [1]}
    doc = {"a": [1, 2], "b": {"c": 1}}
    assert json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3},
                            {"op": "move", "from": "/b/c", "path": "/d"},
                            {"op": "copy", "from": "/d", "path": "/e"},
                            {"op": "remove", "path": "/a/0"}]) == {
        "a": [2, 3], "b": {}, "d": 1, "e": 1}
    assert doc == {"a": [1, 2], "b": {"c": 1}}
    with pytest.raises(StatusError):
        json_patch(doc, {"op": "add"})
    with pytest.raises(StatusError):
        json_patch(doc, [{"op": "replace", "path": "/missing", "value": 1}])


def test_protobuf_rejections() -> None:
    with pytest.raises(StatusError) as info:
        protobuf.decode(b"not protobuf")
    assert info.value.code == 400
    with pytest.raises(StatusError) as info:
        protobuf.decode(protobuf.MAGIC + b"\x0a\xff")
    assert info.value.code == 400
    # An Unknown envelope naming a kind the decoder has no schema for.
    type_meta = b"\x0a\x07apps/v1\x12\x0aDeployment"
    envelope = b"\x0a" + bytes([len(type_meta)]) + type_meta
    with pytest.raises(StatusError) as info:
        protobuf.decode(protobuf.MAGIC + envelope)
    assert info.value.code == 415
