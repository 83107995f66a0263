"""runtime/envtest stands on its own, like controller-runtime's pkg/envtest: it imports nothing
from the runtime but the clock, and its modules import each other without cycles — type-only
(`if TYPE_CHECKING:`) imports included. Read from the source, so nothing is imported here."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO

ROOT = REPO
PACKAGE = "runtime.envtest"
ALLOWED_OUTSIDE = {"runtime.clock"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(package: str) -> dict[str, Path]:
    base = ROOT.joinpath(*package.split("."))
    return {_module_name(path): path for path in sorted(base.rglob("*.py"))}


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _imports(module: str, path: Path, modules: set[str]) -> set[str]:
    """Every `runtime...` module that `module` imports, wherever the import statement sits."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, path, node)
            for alias in node.names:
                # `from runtime.envtest import discovery` names a module, not the package.
                child = f"{target}.{alias.name}"
                found.add(child if child in modules else target)
    return {name for name in found if name == "runtime" or name.startswith("runtime.")}


def _graph() -> dict[str, set[str]]:
    sources = _sources(PACKAGE)
    modules = set(sources)
    return {name: _imports(name, path, modules) for name, path in sources.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle inside the package, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            if state.get(dep) == "open":
                return [*stack[stack.index(dep):], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _inside(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def test_graph_sees_every_module_and_guarded_imports(tmp_path: Path) -> None:
    graph = _graph()
    assert {f"{PACKAGE}.server", f"{PACKAGE}.api", f"{PACKAGE}.store"} <= set(graph)
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\n"
                     "from runtime.envtest import store\n"
                     "if TYPE_CHECKING:\n"
                     "    from runtime.envtest.api import ObjectAPI\n"
                     "def late() -> None:\n"
                     "    import runtime.workqueue\n")
    assert _imports(f"{PACKAGE}.probe", probe, set(graph)) == {
        f"{PACKAGE}.store", f"{PACKAGE}.api", "runtime.workqueue"}


def test_cycle_detector_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles_inside_envtest() -> None:
    cycle = _cycle({name: {d for d in deps if _inside(d)} for name, deps in _graph().items()})
    assert cycle is None, " -> ".join(cycle or [])


def test_envtest_depends_on_nothing_in_the_runtime_but_the_clock() -> None:
    outside = {dep for deps in _graph().values() for dep in deps if not _inside(dep)}
    assert outside <= ALLOWED_OUTSIDE, sorted(outside - ALLOWED_OUTSIDE)
    # ... and the clock itself stands alone, so the dependency stops there.
    clock = ROOT / "runtime" / "clock.py"
    assert _imports("runtime.clock", clock, set()) == set()
