"""The running upstream controller's flags (its Deployment's container arguments) against
aiolbc's flag declarations (`runtime/flags.py`, `controller/config/`): flags aiolbc does not
have (`aiolbc run` would not start with them), values it would refuse, and feature gates pinned
to another state than the one upstream runs with. The configuration they load into, or
aiolbc's defaults, decides what the object scan counts as served."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from controller.config import ControllerConfig
from controller.config.featuregates import GATES
from controller.preflight.report import Category, Finding
from runtime import flags
from runtime.flags import Flag, FlagError
from runtime.objects import Obj, as_dict, as_list, key_of
from runtime.resources import Resource

DEPLOYMENTS: Final = Resource("apps", "v1", "deployments", "Deployment")
DEFAULT_DEPLOYMENT: Final = "kube-system/aws-load-balancer-controller"
CONTAINER: Final = "aws-load-balancer-controller"
GATES_FLAG: Final = "--feature-gates"
# What the scan runs with when the upstream flags give no cluster name (it names nothing the
# scan reads: no AWS call is made).
PLACEHOLDER_CLUSTER: Final = "cluster"
# Pinned gates whose other state matters only for objects the scan reports one by one (what
# those objects ask for is their own line): a note here, not a change of what is served.
_PER_OBJECT: Final[Mapping[str, str]] = {
    "ALBGatewayAPI": "Gateways", "NLBGatewayAPI": "Gateways", "GatewayListenerSet": "Gateways",
}


@dataclass(frozen=True, slots=True)
class UpstreamFlags:
    """The flags as given (flag name -> text, Go's `-x`, `--x=v`, `--x v` and bare booleans
    read as Go reads them), and the findings about them."""

    texts: Mapping[str, str]
    findings: tuple[Finding, ...]


def container_args(deployment: Obj) -> list[str]:
    """The arguments of upstream's container (by name, else the first): `args`, and `command`
    after the program. Anything that is not a string is left out."""
    containers = [as_dict(c) for c in as_list(
        as_dict(as_dict(as_dict(deployment.get("spec")).get("template")).get("spec"))
        .get("containers"))]
    chosen = next((c for c in containers if c.get("name") == CONTAINER),
                  containers[0] if containers else {})
    command = [a for a in as_list(chosen.get("command")) if isinstance(a, str)]
    args = [a for a in as_list(chosen.get("args")) if isinstance(a, str)]
    return [*command[1:], *args]


def _split(argv: Sequence[str], declared: Mapping[str, Flag]) -> list[tuple[str, str | None]]:
    """(flag, text) pairs in Go's syntax; a text of None is a bare flag (a boolean, or a flag
    missing its value)."""
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            pairs.append(("", arg))
            continue
        name, eq, value = ("--" + arg.lstrip("-")).partition("=")
        if eq:
            pairs.append((name, value))
            continue
        known = declared.get(name)
        boolean = known is not None and known.boolean
        if not boolean and i < len(argv) and not argv[i].startswith("-"):
            pairs.append((name, argv[i]))
            i += 1
        else:
            pairs.append((name, "true" if boolean else None))
    return pairs


def read_flags(deployment: Obj) -> UpstreamFlags:
    where = key_of(deployment)
    declared = {f.name: f for f in flags.flags_of(ControllerConfig)}

    def line(category: Category, subject: str, message: str) -> Finding:
        return Finding(kind="Deployment", object=where, category=category, subject=subject,
                       message=message)

    findings: list[Finding] = []
    texts: dict[str, str] = {}
    asked = ""
    for name, text in _split(container_args(deployment), declared):
        if not name:
            findings.append(line("not-honoured", str(text), f"argument {text!r} is not a flag; "
                                 "aiolbc run would not start with it"))
            continue
        known = declared.get(name)
        if known is None:
            findings.append(line("not-honoured", name, f"{name} is not a flag of aiolbc; "
                                 "aiolbc run would not start with it (remove it)"))
            continue
        if text is None:
            findings.append(line("not-honoured", name, f"{name}: no value given"))
            continue
        if name == GATES_FLAG:
            asked = text
            refused = _gate_problems(text)
            findings.extend(line("not-honoured", f"{GATES_FLAG} {p}", m) for p, m in refused)
            text = ",".join(e for e in _entries(text) if e not in dict(refused))
        else:
            try:
                problem = known.problem(known.read(text))
            except FlagError as exc:
                problem = str(exc)
            if problem:
                findings.append(line("not-honoured", name, f"refused: {problem}"))
                continue
        texts[name] = text
    findings.extend(_pinned(asked, line))
    return UpstreamFlags(texts=texts, findings=tuple(findings))


def _entries(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _gate_problems(text: str) -> list[tuple[str, str]]:
    """Each `Name=bool` entry aiolbc refuses, on its own, with the parser's words."""
    problems = []
    for entry in _entries(text):
        try:
            GATES.parse(entry)
        except ValueError as exc:
            problems.append((entry, f"{GATES_FLAG}: refused: {exc}"))
    return problems


def _pinned(text: str, line: Callable[[Category, str, str], Finding]) -> list[Finding]:
    """Gates aiolbc does not act on whose state upstream runs with is not the one aiolbc
    behaves as: upstream's default ones (a given one that differs is refused above)."""
    given = {e.partition("=")[0].strip() for e in _entries(text)}
    found = []
    for gate in GATES.declared:
        if gate.pinned is None or gate.name in given or gate.default == gate.pinned:
            continue
        said = (f"feature gate {gate.name} ({gate.help}): upstream runs with "
                f"{gate.name}={str(gate.default).lower()}, aiolbc behaves as "
                f"{gate.name}={str(gate.pinned).lower()}")
        if gate.name in _PER_OBJECT:
            found.append(line("note", f"{GATES_FLAG} {gate.name}", f"{said}; "
                              f"{_PER_OBJECT[gate.name]} are reported one by one"))
        else:
            found.append(line("changes", f"{GATES_FLAG} {gate.name}", said))
    return found


def config_of(texts: Mapping[str, str]) -> tuple[ControllerConfig, str | None]:
    """The configuration `aiolbc run` would have with these flags, and why it would refuse
    them together (a rule across flags), falling back to the defaults then."""
    given = dict(texts)
    given.setdefault("--cluster-name", PLACEHOLDER_CLUSTER)
    try:
        return flags.load(ControllerConfig, given), None
    except (FlagError, ValueError) as exc:
        problem = str(exc)
    try:
        return flags.load(ControllerConfig, {"--cluster-name": given["--cluster-name"]}), problem
    except (FlagError, ValueError):
        return flags.load(ControllerConfig, {"--cluster-name": PLACEHOLDER_CLUSTER}), problem


__all__ = ["DEFAULT_DEPLOYMENT", "DEPLOYMENTS", "UpstreamFlags", "config_of",
           "container_args", "read_flags"]
