"""The pre-flight report: one line per finding, object by object, read as text or as JSON, and
the go/no-go it adds up to (the exit code)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Final, Literal

# What a finding says about the switch:
# - "not-honoured": an annotation, field or flag aiolbc would ignore, or an object (or the
#   controller's configuration) it would refuse to serve;
# - "changes": aiolbc would serve it, but not as the running upstream controller does;
# - "malformed": the object cannot be read at all (it is not served either);
# - "adopted": its load balancer (or targets) would be taken over in place, by upstream's tags;
# - "served": served, nothing to report (a new load balancer where none was deployed);
# - "note": what the scan could not see and why (no upstream Deployment, a missing CRD).
Category = Literal["not-honoured", "changes", "malformed", "adopted", "served", "note"]
NO_GO: Final[frozenset[str]] = frozenset({"not-honoured", "changes", "malformed"})
# Within an object, what stops a switch first.
ORDER: Final = ("malformed", "not-honoured", "changes", "adopted", "served", "note")
SCHEMA_VERSION: Final = 1

EXIT_GO: Final = 0
EXIT_NO_GO: Final = 1
EXIT_CANNOT_CHECK: Final = 2


_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """One line a terminal shows as it is: a value's control characters (escape sequences,
    newlines) come out as escapes, never as what they would do."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


@dataclass(frozen=True, slots=True)
class Finding:
    """`kind`: Ingress, Service, IngressClassParams, TargetGroupBinding or Deployment (the
    upstream controller's flags); `object`: namespace/name (a name for cluster-scoped kinds);
    `subject`: the annotation, field or flag concerned ("" for the object as a whole)."""

    kind: str
    object: str
    category: Category
    subject: str
    message: str


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> Report:
        return cls(tuple(sorted(findings, key=lambda f: (
            f.kind, f.object, ORDER.index(f.category), f.subject, f.message))))

    @property
    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(f.category for f in self.findings).items()))

    @property
    def go(self) -> bool:
        return not any(f.category in NO_GO for f in self.findings)

    @property
    def exit_code(self) -> int:
        return EXIT_GO if self.go else EXIT_NO_GO

    def verdict(self) -> str:
        counts = self.counts
        if self.go:
            return "go: aiolbc would honour everything it would serve"
        said = ", ".join(f"{counts[c]} {c}" for c in ("not-honoured", "changes", "malformed")
                         if counts.get(c))
        return f"no-go: {said}"

    def as_json(self) -> str:
        return json.dumps({"version": SCHEMA_VERSION, "go": self.go,
                           "exitCode": self.exit_code, "counts": self.counts,
                           "findings": [asdict(f) for f in self.findings]}, indent=2)

    def as_text(self) -> str:
        lines: list[str] = []
        current: tuple[str, str] | None = None
        for f in self.findings:
            if (f.kind, f.object) != current:
                current = (f.kind, f.object)
                lines.append(_printable(f"{f.kind} {f.object}" if f.object else f.kind))
            lines.append(f"  {f.category:<12}  {_printable(f.message)}")
        lines.append(self.verdict())
        return "\n".join(lines)


__all__ = ["EXIT_CANNOT_CHECK", "EXIT_GO", "EXIT_NO_GO", "NO_GO", "SCHEMA_VERSION", "Category",
           "Finding", "Report"]
