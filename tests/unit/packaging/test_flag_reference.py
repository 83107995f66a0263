"""docs/configuration.md holds the reference of every `aiolbc run` flag (name, default, help) and
of the feature gates, rendered from the declarations (`flag(...)` in each settings section,
`controller/config/featuregates.py`) between two markers, so the page cannot drift from what
the controller accepts. After adding or changing a flag:

    .venv/bin/python -m tests.unit.packaging.test_flag_reference --write
"""

from __future__ import annotations

import argparse
import re
import sys

from controller.config import ControllerConfig, add_flags
from controller.config.featuregates import GATES
from runtime import flags
from tests.support.paths import REPO

PAGE = REPO / "docs" / "configuration.md"
BEGIN = "<!-- flag reference: generated from the flag declarations -->"
END = "<!-- end of flag reference -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)


def _cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(declared: flags.Flag, default: object) -> str:
    if default is flags.REQUIRED:
        return "required"
    shown = "" if default is None else declared.show(default)
    return f"`{_cell(shown)}`" if shown else "(none)"


def _groups() -> list[tuple[str, list[str]]]:
    """`aiolbc run --help`'s groups: (title, flag names in declaration order)."""
    parser = argparse.ArgumentParser(prog="aiolbc run")
    add_flags(parser)
    found = []
    for group in parser._action_groups:
        names = [a.option_strings[0] for a in group._group_actions
                 if a.option_strings and a.option_strings[0] != "-h"]
        if names:
            title = group.title or ""
            found.append(("general" if title == "options" else title, names))
    return found


def render() -> str:
    declared = {f.name: f for f in flags.flags_of(ControllerConfig)}
    defaults = flags.defaults_of(ControllerConfig)
    lines = [BEGIN]
    for title, names in _groups():
        lines += ["", f"### {title[0].upper()}{title[1:]}", "",
                  "| flag | default | what it does |", "| --- | --- | --- |"]
        lines += [f"| `{n}` | {_default(declared[n], defaults[n])} | {_cell(declared[n].help)} |"
                  for n in names]
    lines += ["", "### Feature gates", "",
              "`--feature-gates=Name=true,Other=false`, with upstream's names and defaults. A "
              "gate aiolbc does not act on yet is pinned to what aiolbc does; the other value "
              "stops start-up.", "", "```text", GATES.describe(), "```", "", END]
    return "\n".join(lines)


def _block(text: str) -> str | None:
    found = _BLOCK.findall(text)
    return found[0] if len(found) == 1 else None


def test_the_page_holds_the_declared_flags() -> None:
    assert _block(PAGE.read_text()) == render(), (
        "docs/configuration.md's flag reference is not the declarations': run "
        "`python -m tests.unit.packaging.test_flag_reference --write`")


def test_the_reference_names_every_flag_once_with_its_default() -> None:
    text = render()
    rows = re.findall(r"^\| `(--[a-z0-9-]+)` \| ([^|]+) \|", text, re.MULTILINE)
    assert sorted(n for n, _ in rows) == sorted(f.name for f in flags.flags_of(ControllerConfig))
    assert len(rows) == len({n for n, _ in rows})
    defaults = dict(rows)
    assert defaults["--cluster-name"] == "required"
    assert defaults["--ingress-class"] == "`alb`"
    assert defaults["--enable-waf"] == "`true`"
    assert defaults["--targetgroupbinding-max-exponential-backoff-delay"] == "`16m40s`"
    assert "EndpointsFailOpen=true" in text


def test_a_stale_page_is_caught() -> None:
    current = render()
    stale = current.replace("| `--enable-shield` | `true` |", "| `--enable-shield` | `false` |")
    assert stale != current
    assert _block(f"intro\n{stale}\nafter\n") != current
    assert _block(f"{current}\n{current}") is None  # two tables: which one is true?


def write() -> None:
    text = PAGE.read_text()
    if _block(text) is None:
        raise SystemExit(f"{PAGE}: put one pair of markers where the reference goes:\n"
                         f"{BEGIN}\n{END}")
    PAGE.write_text(_BLOCK.sub(lambda _m: render(), text))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    write()
