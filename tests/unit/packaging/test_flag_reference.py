"""docs/configuration.md holds the reference of every `aiolbc run` flag (name, default, help, and
the Helm chart's value that sets it) and of the feature gates, rendered from the declarations
(`flag(...)` in each settings section, `controller/config/featuregates.py`) and the chart's
Deployment template between two markers, so the page cannot drift from what the controller
accepts. After adding or changing a flag or a chart value:

    .venv/bin/python -m tests.unit.packaging.test_flag_reference --write
"""

from __future__ import annotations

import argparse
import re
import sys

from controller.config import ControllerConfig, add_flags
from controller.config.featuregates import GATES
from runtime import flags
from runtime.featuregates import FeatureGates
from tests.support.paths import REPO

PAGE = REPO / "docs" / "configuration.md"
TEMPLATE = REPO / "charts" / "aiolbc" / "templates" / "deployment.yaml"
# Values the template passes through a helper or a nested `with` rather than `.Values.x` on the
# flag's own block.
_CHART_INDIRECT = {
    "--cluster-name": "clusterName", "--webhook-bind-port": "webhookBindPort",
    "--metrics-bind-addr": "metricsBindAddr", "--metrics-secure": "metricsSecure",
    "--enable-checkpoints": "checkpoints.enabled",
    "--checkpoint-verify-qps": "checkpoints.verifyQPS",
    "--checkpoint-verify-burst": "checkpoints.verifyBurst",
    "--checkpoint-max-wait": "checkpoints.maxWait",
    "--checkpoint-verify-aws-qps": "checkpoints.verifyAwsQPS",
    "--checkpoint-verify-aws-burst": "checkpoints.verifyAwsBurst"}
BEGIN = "<!-- flag reference: generated from the flag declarations -->"
END = "<!-- end of flag reference -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)


def _cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def chart_values() -> dict[str, str]:
    """Flag -> the chart value that sets it (flags the chart always sets as it must, such as
    the webhook's bind host, have none: `extraArgs` can still add any flag)."""
    template = TEMPLATE.read_text()
    found = {f"--{flag}": value for value, flag in re.findall(
        r"\.Values\.([A-Za-z0-9_.]+)[^\n]*\}\}\n\s*- --([a-z0-9-]+)=", template)}
    found.update((f, v) for f, v in _CHART_INDIRECT.items() if f"- {f}=" in template)
    return found


def _default(declared: flags.Flag, default: object) -> str:
    if default is flags.REQUIRED:
        return "required"
    if isinstance(default, FeatureGates):
        return "upstream's (below)"
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
    chart = chart_values()
    lines = [BEGIN]
    for title, names in _groups():
        lines += ["", f"### {title[0].upper()}{title[1:]}", "",
                  "| flag | default | what it does | chart value |", "| --- | --- | --- | --- |"]
        lines += [f"| `{n}` | {_default(declared[n], defaults[n])} | {_cell(declared[n].help)} | "
                  + (f"`{chart[n]}` |" if n in chart else "|") for n in names]
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
    assert "| `--aws-vpc-tags` | (none) |" in text
    assert text.count(" | `vpcTags` |") == 1


def test_every_chart_value_is_on_its_flags_row() -> None:
    chart = chart_values()
    assert chart["--aws-vpc-tags"] == "vpcTags"
    assert chart["--enable-checkpoints"] == "checkpoints.enabled"
    assert chart["--required-secrets-label"] == "clusterSecretsPermissions.requiredSecretsLabel"
    flag_names = {f.name for f in flags.flags_of(ControllerConfig)}
    assert set(chart) <= flag_names
    text = render()
    for flag, value in chart.items():
        assert re.search(rf"^\| `{flag}` \|.*\| `{re.escape(value)}` \|$", text, re.MULTILINE), flag


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
