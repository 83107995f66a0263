"""The JSON patch a mutating handler answers with: applying it (with the local API server's
RFC 6902 implementation) to the old object gives exactly the new one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.envtest.patch import json_patch
from runtime.webhook.jsonpatch import create_patch

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False,
                                                                 allow_infinity=False)
    | st.text(max_size=3),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b", "a/b", "~c", "", "0"]), children, max_size=4),
    max_leaves=12)
objects = st.dictionaries(st.sampled_from(["a", "b", "spec", "x/y", "~"]), json_values,
                          max_size=4)


def canonical(value: Any) -> str:
    # json.dumps tells true from 1 and 1 from 1.0, which == does not.
    return json.dumps(value, sort_keys=True)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects, objects)
def test_the_patch_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert canonical(json_patch(old, create_patch(old, new))) == canonical(new)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects)
def test_no_change_is_no_patch(obj: dict[str, Any]) -> None:
    assert create_patch(obj, json.loads(json.dumps(obj))) == []


def test_appending_to_a_list_adds_only_the_new_items() -> None:
    old = {"spec": {"readinessGates": [{"conditionType": "a"}]}}
    new = {"spec": {"readinessGates": [{"conditionType": "a"}, {"conditionType": "b"}]}}
    assert create_patch(old, new) == [
        {"op": "add", "path": "/spec/readinessGates/1", "value": {"conditionType": "b"}}]


def test_shrinking_a_list_removes_from_the_end() -> None:
    ops = create_patch({"l": [1, 2, 3, 4]}, {"l": [1, 2]})
    assert ops == [{"op": "remove", "path": "/l/3"}, {"op": "remove", "path": "/l/2"}]


def test_keys_are_escaped_and_types_compared_strictly() -> None:
    old = {"metadata": {"annotations": {"elbv2.k8s.aws/x~y": "1"}}, "n": 1}
    new = {"metadata": {"annotations": {"elbv2.k8s.aws/x~y": "2"}}, "n": True}
    assert create_patch(old, new) == [
        {"op": "replace", "path": "/metadata/annotations/elbv2.k8s.aws~1x~0y", "value": "2"},
        {"op": "replace", "path": "/n", "value": True}]


def test_the_patch_does_not_alias_the_new_object() -> None:
    new = {"spec": {"items": [1]}}
    ops = create_patch({}, new)
    new["spec"]["items"].append(2)
    assert ops == [{"op": "add", "path": "/spec", "value": {"items": [1]}}]
