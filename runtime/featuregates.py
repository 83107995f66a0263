"""Feature gates in Kubernetes' syntax (`--feature-gates=Name=true,Other=false`): a declared set
of named switches with defaults, parsed from one flag value and read by `enabled(name)`.

A program may declare a gate before it acts on it: such a gate is pinned (`pinned=` the state
the program behaves as), and a value other than that is refused rather than silently ignored, so
each gate can be filled in later without its name or syntax changing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Go's strconv.ParseBool, which upstream's flag parser uses.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    name: str
    default: bool
    help: str = ""
    # None: acted on, either state works. Otherwise the one state the program behaves as until
    # it acts on the gate.
    pinned: bool | None = None

    @property
    def acted_on(self) -> bool:
        return self.pinned is None


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The declared gates and the states given on the command line. Hashable, so it can be
    part of settings that key caches."""

    declared: tuple[Gate, ...] = ()
    given: tuple[tuple[str, bool], ...] = ()
    program: str = "the program"  # who "behaves as" a pinned gate, in messages

    @classmethod
    def of(cls, gates: Iterable[Gate], *, program: str) -> FeatureGates:
        declared = tuple(sorted(gates, key=lambda g: g.name))
        names = [g.name for g in declared]
        if len(set(names)) != len(names):
            raise ValueError("a feature gate is declared twice")
        return cls(declared, (), program)

    def gate(self, name: str) -> Gate:
        for gate in self.declared:
            if gate.name == name:
                return gate
        raise KeyError(f"feature gate {name!r} is not declared")

    def enabled(self, name: str) -> bool:
        """The state the program acts in: a pinned gate's pinned state, else the state given,
        else the default."""
        gate = self.gate(name)
        if gate.pinned is not None:
            return gate.pinned
        return dict(self.given).get(name, gate.default)

    @property
    def states(self) -> Mapping[str, bool]:
        return {gate.name: self.enabled(gate.name) for gate in self.declared}

    def parse(self, text: str) -> FeatureGates:
        """`Name=true,Other=false` over these gates; ValueError names the first bad entry."""
        given = dict(self.given)
        for entry in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = (part.strip() for part in entry.partition("="))
            if not sep or not name:
                raise ValueError(f"expected Name=true|false, got {entry!r}")
            known = {gate.name: gate for gate in self.declared}
            if name not in known:
                raise ValueError(f"unknown feature gate {name!r}")
            if value in _TRUE:
                state = True
            elif value in _FALSE:
                state = False
            else:
                raise ValueError(f"feature gate {name}: expected true or false, got {value!r}")
            pinned = known[name].pinned
            if pinned is not None and state != pinned:
                raise ValueError(f"feature gate {name}: not supported yet; {self.program} "
                                 f"behaves as {name}={str(pinned).lower()}")
            given[name] = state
        return FeatureGates(self.declared, tuple(sorted(given.items())), self.program)

    def text(self) -> str:
        """The states given, as they would be typed."""
        return ",".join(f"{name}={str(state).lower()}" for name, state in self.given)

    def describe(self) -> str:
        """One line per gate: its default, whether the program acts on it (else the state it
        is pinned to), and what it switches."""
        width = max((len(g.name) for g in self.declared), default=0) + len("=false")
        lines = []
        for gate in self.declared:
            default = f"{gate.name}={str(gate.default).lower()}"
            status = ("acted on" if gate.pinned is None
                      else f"pinned: {str(gate.pinned).lower()}")
            lines.append(f"  {default:<{width}}  {status:<13}  {gate.help}".rstrip())
        return "\n".join(lines)


__all__ = ["FeatureGates", "Gate"]
