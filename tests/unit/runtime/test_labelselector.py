"""Label selectors in text form, matched on the client side."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.labelselector import parse, problem


def labelled(**labels: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


@pytest.mark.parametrize(("selector", "labels", "matches"), [
    ("", {}, True),
    ("team=shop", {"team": "shop"}, True),
    ("team==shop", {"team": "shop"}, True),
    ("team=shop", {"team": "blog"}, False),
    ("team=shop", {}, False),
    ("team!=shop", {}, True),
    ("team!=shop", {"team": "shop"}, False),
    ("team in (shop, blog)", {"team": "blog"}, True),
    ("team notin (shop,blog)", {"team": "blog"}, False),
    ("team notin (shop,blog)", {}, True),
    ("team", {"team": ""}, True),
    ("!team", {"team": ""}, False),
    ("!team", {}, True),
    ("tier>2", {"tier": "3"}, True),
    ("tier<2", {"tier": "x"}, False),
    ("team=shop,env!=test", {"team": "shop", "env": "test"}, False),
    ("team=shop,env!=test", {"team": "shop", "env": "prod"}, True),
    ("example.com/team=shop", {"example.com/team": "shop"}, True),
])
def test_matches(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse(selector).matches(labelled(**labels)) is matches


@pytest.mark.parametrize("obj", [None, [], {"metadata": []}, {"metadata": {"labels": "x"}},
                                 {"metadata": {"labels": {"team": 7}}}])
def test_hostile_objects_match_as_unlabelled(obj: Any) -> None:
    assert parse("team=shop").matches(obj) is False
    assert parse("!team").matches(obj) is True


@pytest.mark.parametrize("text", ["team=a b", "team in (a", "=shop", "Team/x=y", "a,,b",
                                  "tier>x", "team in (a,b c)", "a" * 64, "team=" + "v" * 64])
def test_problems_are_one_line(text: str) -> None:
    found = problem(text)
    assert found is not None
    assert found.startswith(f"{text!r} is not a label selector: ")
    assert "\n" not in found
