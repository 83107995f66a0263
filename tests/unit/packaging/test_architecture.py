"""The dependency rules of DESIGN.md, read from the source: controller → runtime and never back,
no controller package imports another controller package, and no import cycles anywhere (type-
only imports and imports inside functions count too)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CONTROLLER_PACKAGES = ("service", "ingress", "targetgroupbinding")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for top in ("runtime", "controller")
            for p in (ROOT / top).rglob("*.py")}


def _imports(path: Path, name: str, known: set[str]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            # `from pkg import submodule` depends on the submodule, not on what the package's
            # `__init__` imports; `from pkg import name` depends on the package.
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = [s for s in subs if s in known]
            if len(targets) < len(subs):
                targets.append(base)
        else:
            continue
        for target in targets:
            if target in known:
                yield target


def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(path, name, known)) - {name} for name, path in modules.items()}


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None




def test_runtime_never_imports_controller() -> None:
    bad = sorted((m, t) for m, targets in graph().items() if m.startswith("runtime")
                 for t in targets if t.startswith("controller"))
    assert not bad, bad


def test_no_controller_package_imports_another() -> None:
    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in CONTROLLER_PACKAGES else None

    bad = sorted((m, t) for m, targets in graph().items()
                 for t in targets
                 if package(m) and package(t) and package(m) != package(t))
    assert not bad, bad


def test_no_import_cycles() -> None:
    cycle = _cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
