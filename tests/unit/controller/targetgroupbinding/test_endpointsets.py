"""The per-EndpointSlice memo of ip endpoints gives exactly what computing from scratch gives,
follows updates and deletes of slices, and forgets Services no binding uses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.targetgroupbinding import checkpoint
from controller.targetgroupbinding.endpointsets import EndpointSet, SliceMemo, endpoints_digest
from controller.targetgroupbinding.targets import Endpoint, Target, ip_endpoints
from tests.support.objects import endpoint, endpoint_slice

PORT = {"name": "http", "port": 80}
SPEC = {"targetGroupARN": "arn:tg", "serviceRef": {"name": "web", "port": 80}}


def _slice(name: str, ips: list[str], *, rv: str = "1", not_ready: tuple[str, ...] = (),
           uid: str | None = None) -> dict[str, Any]:
    obj = endpoint_slice("web", ips, name=name, not_ready=not_ready,
                         ports=(("http", 8080), ("admin", 9000)))
    obj["metadata"].update(uid=uid or f"uid-{name}", resourceVersion=rv)
    return obj


def _from_scratch(slices: list[dict[str, Any]], port: dict[str, Any] = PORT,
                  ip_address_type: str = "ipv4") -> tuple[list[Endpoint], str]:
    endpoints = ip_endpoints(port, slices, ip_address_type=ip_address_type)
    return endpoints, checkpoint.compute(endpoints, SPEC)


def _check(got: EndpointSet, slices: list[dict[str, Any]]) -> None:
    endpoints, value = _from_scratch(slices)
    assert list(got) == endpoints
    assert checkpoint.compute(got, SPEC) == value


def test_memo_gives_what_computing_from_scratch_gives() -> None:
    slices = [_slice("web-a", ["10.0.0.1", "10.0.0.2", "10.0.0.3"], not_ready=("10.0.0.2",)),
              _slice("web-b", ["10.0.1.1"])]
    got = SliceMemo().ip_endpoints("default/web", PORT, slices)
    _check(got, slices)
    assert got.targets == {Target("10.0.0.1", 8080), Target("10.0.0.3", 8080),
                           Target("10.0.1.1", 8080)}
    assert len(got) == 3


def test_a_slice_update_is_seen_and_only_changed_slices_are_parsed_again() -> None:
    memo = SliceMemo()
    a, b = _slice("web-a", ["10.0.0.1"]), _slice("web-b", ["10.0.1.1"])
    first = memo.ip_endpoints("default/web", PORT, [a, b])
    assert memo.ip_endpoints("default/web", PORT, [b, a]) is first  # nothing changed
    b2 = _slice("web-b", ["10.0.1.1", "10.0.1.2"], rv="2")
    second = memo.ip_endpoints("default/web", PORT, [a, b2])
    _check(second, [a, b2])
    assert second.digest != first.digest
    # A pod replaced at the same IP (new uid) changes the checkpoint, not the targets.
    replaced = _slice("web-b", [], rv="3")
    replaced["endpoints"] = [endpoint("10.0.1.1", uid="new-pod"), endpoint("10.0.1.2")]
    third = memo.ip_endpoints("default/web", PORT, [a, replaced])
    assert third.targets == second.targets
    assert third.digest != second.digest
    _check(third, [a, replaced])


def test_a_new_version_with_the_same_endpoints_keeps_the_set_and_its_digest() -> None:
    memo = SliceMemo()
    a = _slice("web-a", ["10.0.0.1", "10.0.0.2", "10.0.0.3"], not_ready=("10.0.0.3",))
    b = _slice("web-b", ["10.0.1.1"])
    first = memo.ip_endpoints("default/web", PORT, [a, b])
    # Its pods listed in another order, and a pod that serves nowhere gone: same endpoints.
    reordered = _slice("web-a", ["10.0.0.2", "10.0.0.1"], rv="2")
    assert memo.ip_endpoints("default/web", PORT, [reordered, b]) is first
    _check(first, [reordered, b])
    # The next real change is seen against that version.
    grown = _slice("web-a", ["10.0.0.2", "10.0.0.1", "10.0.0.4"], rv="3")
    second = memo.ip_endpoints("default/web", PORT, [grown, b])
    assert second.digest != first.digest
    _check(second, [grown, b])
    # The same endpoints under another slice (uid) are another part: combined afresh, and
    # the later slice (by uid) is the one whose endpoints count, as from scratch.
    moved = _slice("web-c", ["10.0.0.2", "10.0.0.1", "10.0.0.4"], uid="uid-web-0")
    third = memo.ip_endpoints("default/web", PORT, [moved, b])
    assert third is not second
    _check(third, [moved, b])


def test_a_deleted_slice_takes_its_endpoints_along() -> None:
    memo = SliceMemo()
    a, b = _slice("web-a", ["10.0.0.1"]), _slice("web-b", ["10.0.1.1"])
    memo.ip_endpoints("default/web", PORT, [a, b])
    after = memo.ip_endpoints("default/web", PORT, [a])
    assert after.targets == {Target("10.0.0.1", 8080)}
    _check(after, [a])
    # Back again (a relist): its endpoints are back too.
    assert memo.ip_endpoints("default/web", PORT, [a, b]).targets == {
        Target("10.0.0.1", 8080), Target("10.0.1.1", 8080)}
    assert len(memo.ip_endpoints("default/web", PORT, [])) == 0


def test_port_name_and_address_family_are_part_of_the_key() -> None:
    memo = SliceMemo()
    slices = [_slice("web-a", ["10.0.0.1"])]
    http = memo.ip_endpoints("default/web", PORT, slices)
    admin = memo.ip_endpoints("default/web", {"name": "admin", "port": 9000}, slices)
    v6 = memo.ip_endpoints("default/web", PORT, slices, ip_address_type="ipv6")
    assert http.targets == {Target("10.0.0.1", 8080)}
    assert admin.targets == {Target("10.0.0.1", 9000)}
    assert len(v6) == 0


def test_slices_without_uid_or_version_are_computed_not_memoized() -> None:
    memo = SliceMemo()
    bare = endpoint_slice("web", ["10.0.0.1"])
    assert memo.ip_endpoints("default/web", PORT, [bare]).targets == {Target("10.0.0.1", 8080)}
    bare["endpoints"].append(endpoint("10.0.0.2"))  # same (missing) identity, new content
    assert len(memo.ip_endpoints("default/web", PORT, [bare])) == 2
    assert len(memo) == 0


def test_entries_of_services_no_binding_uses_are_dropped() -> None:
    used = {"default/web", "default/api"}
    memo = SliceMemo(in_use=lambda: used)
    memo.ip_endpoints("default/web", PORT, [_slice("web-a", ["10.0.0.1"])])
    memo.ip_endpoints("default/api", PORT, [_slice("api-a", ["10.0.2.1"])])
    assert len(memo) == 2
    used.discard("default/web")
    memo.ip_endpoints("default/db", PORT, [])  # a new entry prunes the unused ones first
    assert len(memo) == 2  # api and db
    memo.retain({"default/db"})
    assert len(memo) == 1


def test_a_target_in_two_slices_counts_once() -> None:
    a = _slice("web-a", ["10.0.0.1", "10.0.0.2"], uid="u1")
    b = _slice("web-b", [], uid="u2")
    b["endpoints"] = [endpoint("10.0.0.2", uid="moved")]
    got = SliceMemo().ip_endpoints("default/web", PORT, [b, a])
    assert len(got) == 2
    _check(got, [a, b])  # the slice with the greater uid wins, as the later one from scratch


def test_endpoint_set_of_any_endpoints() -> None:
    endpoints = [Endpoint(Target("i-2", 30080), "i-2:30080:2"),
                 Endpoint(Target("i-1", 30080), "i-1:30080:1")]
    got = EndpointSet.of(endpoints + endpoints[:1])
    assert list(got) == sorted(endpoints)
    assert got.digest == endpoints_digest(["i-1:30080:1", "i-2:30080:2"])
    assert checkpoint.compute(got, SPEC) == checkpoint.compute(endpoints, SPEC)


ips = st.sampled_from([f"10.0.0.{i}" for i in range(1, 13)])
slice_contents = st.lists(st.tuples(ips, st.booleans()), max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), slice_contents), min_size=1, max_size=12))
def test_any_sequence_of_slice_changes_matches_computing_from_scratch(
        steps: list[tuple[int, list[tuple[str, bool]]]]) -> None:
    """Each step replaces (or, when empty, deletes) one of four slices with a new version."""
    memo = SliceMemo()
    slices: dict[int, dict[str, Any]] = {}
    for version, (index, content) in enumerate(steps, start=1):
        if content:
            obj = _slice(f"web-{index}", [], rv=str(version), uid=f"uid-{index}")
            obj["endpoints"] = [endpoint(ip, ready=ready, uid=f"pod-{ip}-{index}")
                                for ip, ready in content]
            slices[index] = obj
        else:
            slices.pop(index, None)
        ordered = [slices[i] for i in sorted(slices)]  # by uid, the memo's order
        _check(memo.ip_endpoints("default/web", PORT, list(reversed(ordered))), ordered)
