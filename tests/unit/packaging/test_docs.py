"""docs/ stays true where that can be checked mechanically: every `--flag` it names is a flag of
`aiolbc run`, every annotation key it writes under aiolbc's prefixes is in the annotation
catalogue (upstream's keys, which tests hold the catalogue to, and aiolbc's retired spellings;
the pages' generated tables say what aiolbc does with each), every metric name it gives is
registered somewhere in the source, every relative link resolves (to a file, and to a heading
when it names one), and the index lists every page.

What counts as "named": in prose and inline code, every `--flag`; in fenced code blocks, the
flags of `aiolbc run` command lines (and their continuation lines) and of YAML list items such as
a Deployment's `args`, since other commands' flags (kubectl, the benchmarks) are not ours."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from controller.apis import QUIC_ENABLED_CONTAINERS_ANNOTATION
from controller.apis.catalogue import SERVICE_REVIEWED_PREFIXES, entry_for, reviewed
from controller.main import build_parser
from tests.support.paths import REPO

DOCS = REPO / "docs"
INDEX = DOCS / "README.md"

INGRESS_PREFIX = "alb.ingress.kubernetes.io/"
SERVICE_GROUP = "service.beta.kubernetes.io/"
# Prefixes named as such, not keys.
PREFIXES = (INGRESS_PREFIX, SERVICE_GROUP, *SERVICE_REVIEWED_PREFIXES)
# Prefixes of the metrics the controller serves, and of upstream's own, which it does not: a
# page naming one of those would be naming something that is not there.
METRIC_PREFIXES = ("controller_runtime_", "workqueue_", "rest_client_", "leader_election_",
                   "event_recorder_", "certwatcher_", "aws_api_", "aws_target_", "aiolbc_",
                   "awslbc_")
# What Prometheus appends to a registered name in the series it exposes.
METRIC_SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
_ANNOTATION = re.compile(
    r"(?:alb\.ingress\.kubernetes\.io|service\.beta\.kubernetes\.io)/[A-Za-z0-9.<>*_-]*")
_METRIC = re.compile(r"\b(?:" + "|".join(METRIC_PREFIXES) + r")[a-z0-9_]*[a-z0-9]")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _page_ids() -> list[str]:
    return [str(p.relative_to(DOCS)) for p in pages()]


def split_fences(text: str) -> tuple[list[str], list[str]]:
    """(prose lines, code lines) of a Markdown text; fence markers belong to neither."""
    prose: list[str] = []
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append(line)
    return prose, code


def _command_lines(code: list[str]) -> Iterator[str]:
    """The lines of fenced code whose flags are ours: `aiolbc run` commands with their
    continuation lines, and YAML list items that start with a flag (container args)."""
    continuing = False
    for line in code:
        if continuing or "aiolbc run" in line or re.match(r"\s*-\s+\"?--", line):
            yield line
        continuing = (continuing or "aiolbc run" in line) and line.rstrip().endswith("\\")


def flags_named(text: str) -> set[str]:
    prose, code = split_fences(text)
    found: set[str] = set()
    for line in [*prose, *_command_lines(code)]:
        found.update("--" + m.group(1) for m in _FLAG.finditer(line))
    return found


def annotations_named(text: str) -> set[str]:
    found = set()
    for match in _ANNOTATION.finditer(text):
        key = match.group(0).rstrip(".")
        if key in PREFIXES:
            continue  # a prefix, named as such
        if reviewed(key, "ingress" if key.startswith(INGRESS_PREFIX) else "service"):
            found.add(key)
    return found


def metrics_named(text: str) -> set[str]:
    return set(_METRIC.findall(text))


@cache
def run_flags() -> frozenset[str]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions
                      if isinstance(a, argparse._SubParsersAction))
    run = subparsers.choices["run"]
    return frozenset(s for action in run._actions for s in action.option_strings)


def annotation_known(key: str) -> bool:
    """In the catalogue; a family's member (`actions.web`, `actions.<name>`) included; or
    upstream's one pod annotation under the Service prefix, which the catalogue of Service and
    Ingress keys does not list."""
    if key == QUIC_ENABLED_CONTAINERS_ANNOTATION:
        return True
    return entry_for(key, "ingress" if key.startswith(INGRESS_PREFIX) else "service") is not None


@cache
def source_strings() -> frozenset[str]:
    """Every string constant in the runtime and controller sources."""
    found: set[str] = set()
    for top in ("runtime", "controller"):
        for path in (REPO / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found.add(node.value)
    return frozenset(found)


def metric_known(name: str) -> bool:
    strings = source_strings()
    if name in strings:
        return True
    return any(name.endswith(s) and name.removesuffix(s) in strings for s in METRIC_SUFFIXES)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`),
    spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose, _ = split_fences(path.read_text())
    seen: dict[str, int] = {}
    found = set()
    for line in prose:
        match = _HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    prose, _ = split_fences(path.read_text())
    broken = []
    for target in (m.group(1) for m in _LINK.finditer("\n".join(prose))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


# ---- the checks -----------------------------------------------------------------------------

def test_there_are_pages() -> None:
    assert INDEX.is_file()
    assert len(pages()) > 1


@pytest.mark.parametrize("page", _page_ids())
def test_every_flag_named_is_a_flag_of_aiolbc_run(page: str) -> None:
    unknown = sorted(flags_named((DOCS / page).read_text()) - run_flags())
    assert not unknown, f"{page} names flags `aiolbc run` does not have: {unknown}"


@pytest.mark.parametrize("page", _page_ids())
def test_every_annotation_written_is_in_the_catalogue(page: str) -> None:
    unknown = sorted(k for k in annotations_named((DOCS / page).read_text())
                     if not annotation_known(k))
    assert not unknown, f"{page} writes annotation keys the catalogue does not know: {unknown}"


@pytest.mark.parametrize("page", _page_ids())
def test_every_metric_named_exists_in_the_source(page: str) -> None:
    unknown = sorted(m for m in metrics_named((DOCS / page).read_text()) if not metric_known(m))
    assert not unknown, f"{page} names metrics the source does not register: {unknown}"


@pytest.mark.parametrize("page", _page_ids())
def test_every_relative_link_resolves(page: str) -> None:
    broken = broken_links(DOCS / page)
    assert not broken, f"{page}: {broken}"


def test_the_index_links_every_page() -> None:
    prose, _ = split_fences(INDEX.read_text())
    linked = {(INDEX.parent / m.group(1).partition("#")[0]).resolve()
              for m in _LINK.finditer("\n".join(prose))}
    missing = sorted(str(p.relative_to(DOCS)) for p in pages()
                     if p != INDEX and p.resolve() not in linked)
    assert not missing, f"docs/README.md does not list: {missing}"


# ---- the checks can fail ----------------------------------------------------------------------

def test_the_extractors_find_what_they_must() -> None:
    text = "\n".join([
        "Set `--enable-checkpoints=false` or --no-such-flag; `kubectl` uses -x, not ours.",
        "```sh",
        "kubectl get events -A --field-selector type=Warning",
        "aiolbc run --cluster-name prod \\",
        "           --made-up-flag 3",
        "```",
        "```yaml",
        "args:",
        "  - --sync-period=1h",
        "```",
        "`alb.ingress.kubernetes.io/scheme`, `alb.ingress.kubernetes.io/actions.web`,",
        "`alb.ingress.kubernetes.io/wafv2-acl-arn`, the prefix `alb.ingress.kubernetes.io/`.",
        "`service.beta.kubernetes.io/aws-load-balancer-name`, the prefix",
        "`service.beta.kubernetes.io/aws-load-balancer-`,",
        "`service.beta.kubernetes.io/load-balancer-source-ranges` and",
        "`service.beta.kubernetes.io/azure-load-balancer-internal` (not ours).",
        "`workqueue_depth`, `aiolbc_made_up_total`,",
        "rate(controller_runtime_reconcile_time_seconds_bucket[5m])",
    ])
    assert flags_named(text) == {"--enable-checkpoints", "--no-such-flag", "--cluster-name",
                                 "--made-up-flag", "--sync-period"}
    assert annotations_named(text) == {
        "alb.ingress.kubernetes.io/scheme", "alb.ingress.kubernetes.io/actions.web",
        "alb.ingress.kubernetes.io/wafv2-acl-arn",
        "service.beta.kubernetes.io/aws-load-balancer-name",
        "service.beta.kubernetes.io/load-balancer-source-ranges"}
    assert metrics_named(text) == {"workqueue_depth", "aiolbc_made_up_total",
                                   "controller_runtime_reconcile_time_seconds_bucket"}


def test_the_catalogues_refuse_what_the_code_does_not_know() -> None:
    assert "--enable-checkpoints" in run_flags()
    assert "--help" in run_flags()
    assert "--no-such-flag" not in run_flags()
    assert annotation_known("alb.ingress.kubernetes.io/actions.web")
    assert annotation_known("service.beta.kubernetes.io/aws-load-balancer-name")
    assert annotation_known("alb.ingress.kubernetes.io/wafv2-acl-arn")  # upstream's, refused
    assert annotation_known("service.beta.kubernetes.io/load-balancer-source-ranges")
    assert not annotation_known("alb.ingress.kubernetes.io/wafv3-acl-arn")
    assert not annotation_known("service.beta.kubernetes.io/aws-load-balancer-made-up")
    assert not annotation_known("alb.ingress.kubernetes.io/actions.")
    assert metric_known("controller_runtime_reconcile_time_seconds_bucket")
    assert metric_known("aiolbc_informer_list_watch_failures_total")
    assert not metric_known("aiolbc_made_up_total")
    assert not metric_known("awslbc_top_talkers_made_up")


def test_links_and_anchors_are_checked(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# Page A\n\n## The `flags` (all)\n\n```sh\n# not a heading\n```\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#the-flags-all) [self](#b) [web](https://example.com)\n"
                    "[gone](c.md) [no anchor](a.md#not-a-heading)\n\n# B\n")
    assert broken_links(page) == ["c.md: no such file",
                                  "a.md#not-a-heading: no heading #not-a-heading in a.md"]
