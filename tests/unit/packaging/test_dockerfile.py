"""The Dockerfile, read statically (no image is built here): a pinned slim Python 3.11 base, a
builder stage that installs the package without its extras (test, demo), a final stage that
only copies the virtualenv and runs aiolbc as a numeric non-root user in exec form;
`.dockerignore` keeps the local virtualenv, tests and VCS data out of the build context."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field

import pytest
import yaml

from tests.support.paths import REPO

VENV = "/opt/aiolbc"


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"stage {self.name or self.image} has no {keyword}"
        return found[-1]


def parse_dockerfile(text: str) -> list[Stage]:
    """Instructions with continuation lines joined and comments dropped, grouped by stage."""
    stages: list[Stage] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        instruction = Instruction(keyword.upper(), args.strip(), start)
        if instruction.keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?",
                                 instruction.args, re.IGNORECASE)
            assert match, f"line {start}: cannot read FROM {instruction.args!r}"
            stages.append(Stage(match.group(1), match.group(2)))
        else:
            assert stages, f"line {start}: {keyword} before FROM"
            stages[-1].instructions.append(instruction)
    assert not pending, "Dockerfile ends inside a continuation"
    return stages


def _exec_form(instruction: Instruction) -> list[str]:
    value = json.loads(instruction.args)
    assert isinstance(value, list), f"line {instruction.line}: not the exec (JSON) form"
    return [str(v) for v in value]


def _extra_requirements() -> set[str]:
    """The distributions of every extra (test, demo), the project's own name (an extra that
    includes another) left out."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = set()
    for requirements in project["optional-dependencies"].values():
        for requirement in requirements:
            name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
            assert name
            names.add(name.group(0).lower())
    names.discard(project["name"])
    assert {"moto", "pytest"} <= names
    return names


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile((REPO / "Dockerfile").read_text())


def test_is_multi_stage_on_a_pinned_slim_python_311(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    for stage in stages:
        if any(stage.image == s.name for s in stages):
            continue  # built on an earlier stage
        repo, _, rest = stage.image.partition(":")
        tag, _, digest = rest.partition("@")
        assert repo in ("python", "docker.io/library/python"), stage.image
        # A full version (3.11.N), never a moving tag such as "3.11-slim" or "latest".
        assert re.fullmatch(r"3\.11\.\d+-slim(-[a-z]+)?", tag), stage.image
        assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), stage.image
    # The venv's interpreter links to the base's Python: both stages must use the same one.
    assert stages[0].image == stages[-1].image


def test_builder_installs_the_package_without_extras(stages: list[Stage]) -> None:
    builder, final = stages[0], stages[-1]
    runs = " ".join(i.args for i in builder.all("RUN"))
    assert re.search(rf"{VENV}/bin/(pip|python -m pip) install \.(\s|$)", runs), runs
    assert not re.search(r"install\s[^&;|]*\[", runs), "an extra is installed"
    for name in _extra_requirements():
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", runs, re.IGNORECASE), \
            f"{name}, a dependency of an extra, installed"
    assert final.all("RUN") == [], "the final stage should only copy the built virtualenv"
    copies = [i.args.split() for i in final.all("COPY")]
    assert [f"--from={builder.name}", VENV, VENV] in copies


def test_final_stage_runs_aiolbc_as_non_root(stages: list[Stage]) -> None:
    final = stages[-1]
    user = final.last("USER").args
    uid, _, gid = user.partition(":")
    # Numeric, so the kubelet can check runAsNonRoot without an /etc/passwd lookup.
    assert uid.isdigit(), user
    assert int(uid) != 0, user
    assert not gid or (gid.isdigit() and int(gid) != 0), user
    assert _exec_form(final.last("ENTRYPOINT")) == [f"{VENV}/bin/aiolbc"]
    assert _exec_form(final.last("CMD")) == ["run"]


def test_parser_reads_continuations_and_rejects_shell_form() -> None:
    parsed = parse_dockerfile("FROM python:3.11.9-slim AS b\n# note\nRUN a \\\n  # inner\n"
                              "  && b\nFROM python:3.11.9-slim\nENTRYPOINT aiolbc run\n")
    assert [s.name for s in parsed] == ["b", None]
    assert parsed[0].instructions[0].args == "a && b"
    with pytest.raises(ValueError, match="Expecting value"):
        _exec_form(parsed[1].last("ENTRYPOINT"))


def _ignored(patterns: list[str], path: str) -> bool:
    """Docker's rule: the last matching pattern wins; `!` re-includes."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        core = pattern[1:] if negate else pattern
        parts = path.split("/")
        prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        if any(fnmatch.fnmatchcase(p, core) or fnmatch.fnmatchcase(p, core.removeprefix("**/"))
               or fnmatch.fnmatchcase(p.split("/")[-1], core.removeprefix("**/"))
               for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_sends_only_the_package_sources() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for path in ("pyproject.toml", "README.md", "runtime/manager.py",
                 "controller/app.py", "controller/py.typed"):
        assert not _ignored(patterns, path), path
    for path in (".venv/bin/python", ".git/HEAD", "tests/unit/test_dockerfile.py",
                 "controller/__pycache__/app.cpython-311.pyc", ".mypy_cache/x.json",
                 "manifests/iam-policy.json"):
        assert _ignored(patterns, path), path


def test_expose_names_the_ports_the_installation_uses() -> None:
    final = parse_dockerfile((REPO / "Dockerfile").read_text())[-1]
    exposed = {int(port) for i in final.all("EXPOSE") for port in i.args.split()}
    deployment = next(d for d in yaml.safe_load_all(
        (REPO / "manifests" / "deployment" / "deployment.yaml").read_text())
        if d and d["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    used = {p["containerPort"] for p in container["ports"]}
    # and 8080: plain metrics, the chart's `metricsSecure: false` and the flag's default
    assert exposed == used | {8080}
