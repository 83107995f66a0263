"""docs/ingress.md and docs/service.md each hold a table of every upstream annotation key and
what aiolbc does with it, rendered from the catalogue (`controller/apis/catalogue.py`) between
two markers, so the pages cannot drift from what the code does. After changing the catalogue:

    .venv/bin/python -m tests.unit.packaging.test_annotation_tables --write
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from controller.apis.catalogue import (
    INGRESS_KEYS,
    RETIRED_KEYS,
    SERVICE_KEYS,
    AnnotationKey,
    Kind,
)
from tests.support.paths import REPO

PAGES: dict[Kind, Path] = {"ingress": REPO / "docs" / "ingress.md",
                           "service": REPO / "docs" / "service.md"}
BEGIN = "<!-- annotation table: generated from controller/apis/catalogue.py -->"
END = "<!-- end of annotation table -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)


def _does(entry: AnnotationKey) -> str:
    if entry.replaced_by is not None:
        return f"refused: not upstream's key, use `{entry.replaced_by}`"
    if entry.acted_on:
        return "acted on"
    if entry.narrows:
        return "refused"
    return "Warning"


def _on_backend(entry: AnnotationKey) -> str:
    if entry.backend == "acted":
        return "acted on (wins over the Ingress's)"
    if entry.backend == "ignored":
        return "Warning"
    return "Warning (Ingress only)" if entry.key.startswith("alb.") else ""


def _for(entry: AnnotationKey) -> str:
    return f"{entry.feature}: {entry.note}" if entry.note and not entry.replaced_by \
        else entry.feature


def _rows(entries: Iterable[AnnotationKey]) -> list[AnnotationKey]:
    return sorted(entries, key=lambda e: e.shown)


def render(kind: Kind) -> str:
    if kind == "ingress":
        lines = ["| annotation | on the Ingress | on a backend Service | narrows access | for |",
                 "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{e.shown}` | {_does(e)} | {_on_backend(e)} | "
                  f"{'yes' if e.narrows else ''} | {_for(e)} |" for e in _rows(INGRESS_KEYS)]
    else:
        lines = ["| annotation | aiolbc | narrows access | for |", "| --- | --- | --- | --- |"]
        lines += [f"| `{e.shown}` | {_does(e)} | {'yes' if e.narrows else ''} | {_for(e)} |"
                  for e in [*_rows(SERVICE_KEYS), *RETIRED_KEYS]]
    return "\n".join([BEGIN, *lines, END])


def _block(text: str) -> str | None:
    found = _BLOCK.findall(text)
    return found[0] if len(found) == 1 else None


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_the_page_holds_the_catalogues_table(kind: Kind) -> None:
    page = PAGES[kind]
    assert _block(page.read_text()) == render(kind), (
        f"{page.name}'s annotation table is not the catalogue's: run "
        "`python -m tests.unit.packaging.test_annotation_tables --write`")


def test_the_tables_name_every_key_and_say_what_happens() -> None:
    ingress, service = render("ingress"), render("service")
    assert ingress.count("\n| `") == 73
    assert service.count("\n| `") == 49 + len(RETIRED_KEYS)
    assert "| `alb.ingress.kubernetes.io/wafv2-acl-arn` | acted on |" in ingress
    assert "| `alb.ingress.kubernetes.io/mutual-authentication` | acted on |" in ingress
    assert ("| `alb.ingress.kubernetes.io/listener-attributes.<protocol>-<port>` | acted on |"
            in ingress)
    assert "| `service.beta.kubernetes.io/load-balancer-source-ranges` | acted on | yes |" \
        in service
    assert ("| `service.beta.kubernetes.io/aws-load-balancer-source-ranges` | refused: not "
            "upstream's key, use `service.beta.kubernetes.io/load-balancer-source-ranges` |") \
        in service


def write() -> None:
    for kind, page in PAGES.items():
        text = page.read_text()
        if _block(text) is None:
            raise SystemExit(f"{page}: put one pair of markers where the table goes:\n"
                             f"{BEGIN}\n{END}")
        page.write_text(_BLOCK.sub(lambda _m, k=kind: render(k), text))  # type: ignore[misc]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    write()
