"""The report's verdict, exit code and renderings."""

from __future__ import annotations

import json

from controller.preflight.report import Finding, Report


def test_verdict_and_exit_code() -> None:
    fine = Report.of([Finding("Service", "a/b", "adopted", "", "adopted"),
                      Finding("Deployment", "x/y", "note", "", "n")])
    assert (fine.go, fine.exit_code) == (True, 0)
    bad = Report.of([*fine.findings, Finding("Service", "a/b", "changes", "", "c"),
                     Finding("Ingress", "a/c", "not-honoured", "k", "m")])
    assert (bad.go, bad.exit_code) == (False, 1)
    assert bad.verdict() == "no-go: 1 not-honoured, 1 changes"
    body = json.loads(bad.as_json())
    assert body["counts"] == {"adopted": 1, "changes": 1, "not-honoured": 1, "note": 1}
    # Within an object, what stops a switch comes first.
    assert [f["category"] for f in body["findings"] if f["object"] == "a/b"] == [
        "changes", "adopted"]


def test_text_shows_control_characters_as_escapes() -> None:
    text = Report.of([Finding("Service", "a/b", "not-honoured", "k",
                              "value \x1b[2J\nINJECTED")]).as_text()
    assert "\x1b" not in text
    assert "\\x1b[2J\\nINJECTED" in text
    assert len(text.splitlines()) == 3
