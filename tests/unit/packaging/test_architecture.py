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


def test_the_graph_reads_the_source() -> None:
    """A wrong root once made every rule above pass without reading a module."""
    edges = graph()
    assert len(edges) > 200
    assert "runtime.reconcile" in edges["runtime.handlers"]


# ---- one wiring shape -------------------------------------------------------------------------

ENQUEUEING = {"enqueue", "defer", "enqueue_after"}
HANDLER_TYPES = {"Enqueuer", "EnqueueForObject", "EnqueueFromMap"}


def _controller_sources() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text()) for name, path in _modules().items()
            if name.startswith("controller.") and not name.startswith("controller.standins")}


def test_events_become_requests_only_through_the_runtime_handlers() -> None:
    """No class in controller/ implements the runtime's handler protocol to enqueue work: a
    watch's predicates, map function and priority function are given to the builder, which
    makes the stock handler (controller-runtime's builder `doWatch`)."""
    bad: list[str] = []
    for name, tree in _controller_sources().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ENQUEUEING):
                bad.append(f"{name}:{node.lineno} calls .{node.func.attr}()")
            if isinstance(node, ast.Name) and node.id in HANDLER_TYPES:
                bad.append(f"{name}:{node.lineno} uses {node.id}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Controller"):
                bad.append(f"{name}:{node.lineno} makes a Controller outside the builder")
            if isinstance(node, ast.Attribute) and node.attr == "watch":
                bad.append(f"{name}:{node.lineno} registers a handler with .watch()")
    assert not bad, bad


def _builder_chain_ends(function: ast.FunctionDef) -> bool:
    """`setup` returns `ControllerBuilder(...)....complete(...)`."""
    for node in ast.walk(function):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Call)):
            continue
        call: ast.expr = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "complete"):
            continue
        while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            call = call.func.value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "ControllerBuilder"):
            return True
    return False


def test_every_controller_is_wired_through_the_builder() -> None:
    for package in CONTROLLER_PACKAGES:
        tree = _controller_sources()[f"controller.{package}.wiring"]
        setups = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "setup"]
        assert len(setups) == 1, package
        assert _builder_chain_ends(setups[0]), f"{package}: setup() is not a builder chain"


# ---- settings stay small ------------------------------------------------------------------

MAX_SETTINGS_FIELDS = 25


def _dataclass_fields(cls: ast.ClassDef) -> int:
    return sum(1 for node in cls.body if isinstance(node, ast.AnnAssign)
               and not (isinstance(node.annotation, ast.Name)
                        and node.annotation.id == "ClassVar"))


def test_no_settings_class_has_more_than_about_25_fields() -> None:
    """Settings are nested per concern (kopf's OperatorSettings): the flat configuration that
    had 57 fields is what this keeps from coming back."""
    big: list[str] = []
    checked = 0
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(
                    ("Settings", "Config", "Options")):
                checked += 1
                fields = _dataclass_fields(node)
                if fields > MAX_SETTINGS_FIELDS:
                    big.append(f"{name}.{node.name}: {fields} fields")
    assert checked > 20
    assert not big, big
