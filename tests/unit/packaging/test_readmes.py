"""Every package README is a map that stays true (DESIGN.md: "Each package README opens with a
short table: every module and what it owns (a test keeps it true); behaviour belongs in docs/").

For every package under controller/ and runtime/ (a directory with an `__init__.py`): its
README.md exists, opens with a title line, and its first table, which comes before any section,
names every module of the package and every subpackage (as `sub/`, linking to the subpackage's
own README), and nothing that does not exist. An `__init__.py` of re-exports may go unnamed; one
that defines anything (a facade that loads names lazily, a command's entry point) is a module
like the others and must be named."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO

TOPS = ("controller", "runtime")

_NAME = re.compile(r"`([^`]+)`")
_MODULE = re.compile(r"[a-z_][a-z0-9_]*\.py")
_SUBPACKAGE = re.compile(r"[a-z_][a-z0-9_]*/")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Row:
    names: tuple[str, ...]
    text: str


def packages() -> list[Path]:
    return sorted(init.parent for top in TOPS for init in (REPO / top).rglob("__init__.py")
                  if "__pycache__" not in init.parts)


def _package_ids() -> list[str]:
    return [str(p.relative_to(REPO)) for p in packages()]


def defines_something(init: Path) -> bool:
    """Whether an `__init__.py` is more than re-exports: it defines a function or a class at its
    top level (imports under `if TYPE_CHECKING:` are still re-exports)."""
    tree = ast.parse(init.read_text(), filename=str(init))
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in tree.body)


def required_names(package: Path) -> set[str]:
    modules = {p.name for p in package.glob("*.py")
               if p.name != "__init__.py" or defines_something(p)}
    subpackages = {f"{d.name}/" for d in package.iterdir()
                   if d.is_dir() and (d / "__init__.py").is_file()}
    return modules | subpackages


def first_table(text: str) -> tuple[list[Row], list[str]]:
    """The rows of the first Markdown table outside code fences (header and separator dropped),
    and the prose lines before it."""
    before: list[str] = []
    table: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            break
        before.append(line)
    rows = []
    for line in table[2:]:
        cells = line.strip().strip("|").split("|")
        rows.append(Row(tuple(_NAME.findall(cells[0])), line))
    return rows, before


def problems(package: Path) -> list[str]:
    readme = package / "README.md"
    if not readme.is_file():
        return ["no README.md"]
    text = readme.read_text()
    found: list[str] = []
    if not text.startswith("# "):
        found.append("does not open with a title line")
    rows, before = first_table(text)
    if not rows:
        return [*found, "has no table"]
    if any(line.startswith("## ") for line in before) or any(_FENCE.match(line) for line in before):
        found.append("its table is not the first thing after the title and summary")
    named: set[str] = set()
    for row in rows:
        if not row.names:
            found.append(f"a row names no module: {row.text.strip()}")
        for name in row.names:
            if not (_MODULE.fullmatch(name) or _SUBPACKAGE.fullmatch(name)):
                found.append(f"names something that is not a module or subpackage: `{name}`")
                continue
            named.add(name)
            if name.endswith("/") and f"({name}README.md)" not in row.text:
                found.append(f"the row of `{name}` does not link to {name}README.md")
    required = required_names(package)
    missing = sorted(required - named)
    stale = sorted(n for n in named - required
                   if not (n == "__init__.py" and (package / n).is_file()))
    if missing:
        found.append(f"its table does not name {missing}")
    if stale:
        found.append(f"its table names what does not exist: {stale}")
    return found


def test_there_are_packages() -> None:
    ids = _package_ids()
    assert {"runtime", "controller", "runtime/workqueue", "controller/ingress"} <= set(ids)
    assert len(ids) > 10


@pytest.mark.parametrize("package", _package_ids())
def test_readme_maps_the_package(package: str) -> None:
    found = problems(REPO / package)
    assert not found, f"{package}/README.md: {found}"


# ---- the check can fail -----------------------------------------------------------------------

def _package(tmp_path: Path, readme: str | None) -> Path:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""Re-exports."""\nfrom pkg.alpha import A\n')
    (package / "sub" / "__init__.py").write_text("")
    (package / "alpha.py").write_text("A = 1\n")
    (package / "beta.py").write_text("B = 2\n")
    if readme is not None:
        (package / "README.md").write_text(readme)
    return package


GOOD = """# pkg

What it owns.

| module | what it owns |
| --- | --- |
| `alpha.py` | the As |
| `beta.py` | the Bs |
| [`sub/`](sub/README.md) | the subs |

## For developers

| `gamma.py` | a later table is not the map |
"""


def test_a_true_map_passes(tmp_path: Path) -> None:
    assert problems(_package(tmp_path, GOOD)) == []


def test_a_missing_or_stale_name_fails(tmp_path: Path) -> None:
    missing = _package(tmp_path, GOOD.replace("| `beta.py` | the Bs |\n", ""))
    assert problems(missing) == ["its table does not name ['beta.py']"]
    (missing / "alpha.py").rename(missing / "renamed.py")
    assert problems(missing) == ["its table does not name ['beta.py', 'renamed.py']",
                                 "its table names what does not exist: ['alpha.py']"]


def test_the_shape_is_checked(tmp_path: Path) -> None:
    assert problems(_package(tmp_path / "a", None)) == ["no README.md"]
    unlinked = GOOD.replace("[`sub/`](sub/README.md)", "`sub/`")
    assert problems(_package(tmp_path / "b", unlinked)) == [
        "the row of `sub/` does not link to sub/README.md"]
    late = GOOD.replace("What it owns.", "What it owns.\n\n## Intro\n")
    assert problems(_package(tmp_path / "c", late)) == [
        "its table is not the first thing after the title and summary"]
    untitled = GOOD.removeprefix("# pkg\n")
    assert problems(_package(tmp_path / "d", untitled)) == ["does not open with a title line"]


def test_an_init_that_defines_something_must_be_named(tmp_path: Path) -> None:
    package = _package(tmp_path, GOOD)
    (package / "__init__.py").write_text("def __getattr__(name): ...\n")
    assert problems(package) == ["its table does not name ['__init__.py']"]
    named = GOOD.replace("| `alpha.py` |", "| `__init__.py` | the facade |\n| `alpha.py` |")
    (package / "README.md").write_text(named)
    assert problems(package) == []


def test_the_test_helpers_table_names_every_support_module() -> None:
    """tests/README.md's table of support/ is the one place a test author looks for a helper."""
    text = (REPO / "tests" / "README.md").read_text()
    support = REPO / "tests" / "support"
    modules = {p.name for p in support.glob("*.py") if p.name != "__init__.py"}
    missing = sorted(m for m in modules if f"| `{m}` |" not in text)
    assert not missing, f"tests/README.md's support table does not name {missing}"
    fixtures = sorted(p.name for p in (support / "fixtures").glob("*.py")
                      if p.name != "__init__.py" and f"({p.name})" not in text)
    assert not fixtures, f"tests/README.md's fixtures row does not name {fixtures}"


# ---- tables say each thing once -----------------------------------------------------------------

# Tables whose first column is a value that repeats by design (a condition's status).
_REPEATING_FIRST_COLUMNS = {"status"}


def _repeated_rows(text: str) -> list[str]:
    """First cells that more than one row of the same table starts with: two versions of one
    row (a module, a flag group) left side by side, one of them stale."""
    repeated: list[str] = []
    for table in re.findall(r"(?:^\|.*\n)+", text + "\n", re.MULTILINE):
        rows = [line.split("|")[1].strip() for line in table.splitlines()]
        if not rows or rows[0].lower() in _REPEATING_FIRST_COLUMNS:
            continue
        cells = [c for c in rows[1:] if c.strip("-: ")]
        repeated += sorted({c for c in cells if cells.count(c) > 1})
    return repeated


def _markdown_files() -> list[Path]:
    skip = {".venv", ".git", "node_modules"}
    return sorted(p for p in REPO.rglob("*.md") if not skip & set(p.relative_to(REPO).parts))


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_table_says_a_thing_twice(path: Path) -> None:
    assert _repeated_rows(path.read_text()) == []


def test_a_repeated_row_is_found() -> None:
    text = "| module | does |\n| --- | --- |\n| `a.py` | old |\n| `b.py` | x |\n| `a.py` | new |\n"
    assert _repeated_rows(text) == ["`a.py`"]
    assert _repeated_rows(text.replace("module", "status")) == []
