"""docs/upgrade.md says, per version, which model builder versions it runs, since a changed
builder version makes the first start after an upgrade reconcile every object of that kind at
normal priority. Its newest row must be the code's versions: bumping `MODEL_VERSION` (Service)
or `BUILDER_VERSION` (Ingress) without saying so on the page fails here."""

from __future__ import annotations

import itertools
import re

from controller.ingress.model import BUILDER_VERSION
from controller.service.model import MODEL_VERSION
from tests.support.paths import REPO

PAGE = REPO / "docs" / "upgrade.md"
_ROW = re.compile(r"^\| (unreleased|\d+\.\d+\.\d+) \| (\d+) \| (\d+) \| ([^|]+) \| ([^|]+) \|$",
                  re.MULTILINE)


def rows(text: str) -> list[tuple[str, int, int, str, str]]:
    return [(m[0], int(m[1]), int(m[2]), m[3].strip(), m[4].strip()) for m in _ROW.findall(text)]


def problems(text: str, *, service: int, ingress: int) -> list[str]:
    found = rows(text)
    if not found:
        return ["no table of builder versions"]
    newest = found[0]
    issues = []
    if (newest[1], newest[2]) != (service, ingress):
        issues.append(f"the newest row says Service {newest[1]}, Ingress {newest[2]}; the code "
                      f"builds Service {service}, Ingress {ingress}")
    for newer, older in itertools.pairwise(found):
        changed = (newer[1] != older[1], newer[2] != older[2])
        says = (newer[3] == "yes", newer[4] == "yes")
        if changed != says:
            issues.append(f"{newer[0]}: 're-verified' must say yes exactly where the builder "
                          f"version differs from {older[0]}'s")
    return issues


def test_the_page_states_the_builder_versions_of_this_build() -> None:
    assert problems(PAGE.read_text(), service=MODEL_VERSION, ingress=BUILDER_VERSION) == []


def test_a_bumped_version_or_a_wrong_claim_is_caught() -> None:
    text = PAGE.read_text()
    assert problems(text, service=MODEL_VERSION + 1, ingress=BUILDER_VERSION)
    claim = text.replace("| unreleased | 4 | 4 | no | no |", "| unreleased | 5 | 4 | no | no |")
    assert claim != text
    assert problems(claim, service=5, ingress=BUILDER_VERSION)
    assert problems("# Upgrading\n", service=1, ingress=1) == ["no table of builder versions"]
