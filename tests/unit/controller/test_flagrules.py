"""The rules AWS and Kubernetes apply, as the flags check them: exact boundaries, the tracking
keys the deployer really writes, and one line of reason for any input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import flagrules
from controller.deploy.tags import CLUSTER_TAG, resource_tag, stack_tag


def test_the_reserved_keys_are_the_ones_the_deployer_writes() -> None:
    written = {CLUSTER_TAG} | {f(kind) for kind in ("ingress", "service")
                               for f in (stack_tag, resource_tag)}
    assert written <= flagrules.TRACKING_TAG_KEYS
    # Upstream also reserves the backend security group's resource key.
    assert flagrules.TRACKING_TAG_KEYS - written == {"elbv2.k8s.aws/resource"}


@pytest.mark.parametrize(("key", "ok"), [
    ("k" * 128, True), ("k" * 129, False), ("", False),
    ("aws:x", False), ("AWS:x", False), ("aws", True), ("xaws:", True),
    ("a b_c.d:e/f=g+h-i@j", True), ("ünïcödé", True), ("数字", True),
    ("a*b", False), ("a#b", False), ("a\tb", False), ("a,b", False),
])
def test_tag_keys(key: str, ok: bool) -> None:
    assert (flagrules.tag_key_problem(key) is None) is ok


@pytest.mark.parametrize(("value", "ok"), [
    ("", True), ("v" * 256, True), ("v" * 257, False), ("aws:x", True), ("a|b", False),
])
def test_tag_values(value: str, ok: bool) -> None:
    assert (flagrules.tag_value_problem("k", value) is None) is ok


def test_the_tag_count_leaves_room_for_the_tracking_tags() -> None:
    assert flagrules.MAX_DEFAULT_TAGS == 47
    assert flagrules.tags_problem({f"k{i}": "" for i in range(47)}) is None
    assert "48 tags" in (flagrules.tags_problem({f"k{i}": "" for i in range(48)}) or "")


@pytest.mark.parametrize(("name", "label", "subdomain", "qualified"), [
    ("a", True, True, True),
    ("a-b", True, True, True),
    ("a.b", False, True, True),
    ("-a", False, False, False),
    ("a-", False, False, False),
    ("A", False, False, True),
    ("a_b", False, False, True),
    ("a" * 63, True, True, True),
    ("a" * 64, False, True, False),
    ("example.com/x", False, False, True),
    ("example.com/", False, False, False),
    ("/x", False, False, False),
    ("Example.com/x", False, False, False),
    ("a/b/c", False, False, False),
])
def test_kubernetes_names(name: str, label: bool, subdomain: bool, qualified: bool) -> None:
    assert (flagrules.dns_label_problem(name) is None) is label
    assert (flagrules.dns_subdomain_problem(name) is None) is subdomain
    assert (flagrules.qualified_name_problem(name) is None) is qualified


def test_subdomains_stop_at_253_characters() -> None:
    name = ".".join(["a" * 63] * 4)[:253]
    assert flagrules.dns_subdomain_problem(name) is None
    assert flagrules.dns_subdomain_problem(name + "a") is not None


@pytest.mark.parametrize(("name", "ok"), [
    ("prod", True), ("prod-eu_1", True), ("k8s.example.com", True), ("1st", True),
    ("c" * 100, True), ("c" * 101, False), ("", False), ("-prod", False), (".prod", False),
    ("prod/eu", False), ("prod eu", False),
])
def test_cluster_names(name: str, ok: bool) -> None:
    assert (flagrules.cluster_name_problem(name) is None) is ok


@pytest.mark.parametrize(("region", "ok"), [
    ("us-west-2", True), ("ap-southeast-5", True), ("us-gov-east-1", True),
    ("cn-northwest-1", True), ("us-iso-east-1", True), ("eusc-de-east-1", True),
    ("us-west", False), ("uswest2", False), ("us_west_2", False), ("US-WEST-2", False),
    ("us-west-2 ", False), ("", False),
])
def test_regions(region: str, ok: bool) -> None:
    assert (flagrules.region_problem(region) is None) is ok


@given(st.text(max_size=300))
def test_any_input_gets_at_most_one_line(text: str) -> None:
    checks = (flagrules.tag_key_problem(text), flagrules.tag_value_problem("k", text),
              flagrules.dns_label_problem(text), flagrules.dns_subdomain_problem(text),
              flagrules.qualified_name_problem(text), flagrules.cluster_name_problem(text),
              flagrules.region_problem(text))
    for problem in checks:
        assert problem is None or "\n" not in problem
