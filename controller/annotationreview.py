"""What an object's annotations under aiolbc's prefixes get, key by key, from the catalogue
(`controller/apis/catalogue.py`): nothing (acted on), a Warning (a known key aiolbc does not act
on, or an unknown key, with the nearest known key as a suggestion), or a refusal (fail closed):
a key that narrows who can reach the load balancer and cannot be honoured stops the object
before any AWS call, as any bad input does.

Which unknown keys narrow access: the retired keys (`catalogue.RETIRED_KEYS`), and an unknown key
whose nearest known key narrows access where it was found: the owner most likely meant that
key, and serving the object without it could open the load balancer wider than they asked.

Pure: the model builders call `check` (their pure stage, so checkpoints, admission and the
reconcilers agree), and the findings that are warnings travel with the build's result.
"""

from __future__ import annotations

import difflib
import functools
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from controller.apis.catalogue import (
    INGRESS_KEYS,
    NLB_PREFIX,
    SERVICE_KEYS,
    AnnotationKey,
    Kind,
    entry_for,
    reviewed,
)
from controller.apis.names import INGRESS_ANNOTATION_PREFIX, SERVICE_ANNOTATION_PREFIX
from controller.errors import InvalidInput

# Where a key was found: on an Ingress, on an Ingress's backend Service (its
# `alb.ingress.kubernetes.io/` keys), or on a Service served as an NLB.
Where = Literal["ingress", "backend", "service"]
Reason = Literal["UnsupportedAnnotation", "UnknownAnnotation"]

UNSUPPORTED: Final = "UnsupportedAnnotation"
UNKNOWN: Final = "UnknownAnnotation"
# At most this many findings are reported one by one per object (Events, a condition); the rest
# are counted in one more line, so that a Service with a thousand made-up keys stays readable.
MAX_REPORTED: Final = 10
# More unknown keys than this on one object refuse it (see `review`).
MAX_UNKNOWN: Final = 50
# How alike a key and a known key must be (difflib's ratio) for the one to be suggested.
SUGGESTION_CUTOFF: Final = 0.6
_NARROWS = "it would narrow who can reach the load balancer, so nothing is deployed for this"


class UnsupportedAnnotation(InvalidInput):
    """A key that narrows who can reach the load balancer and cannot be honoured."""

    condition_reason = "UnsupportedAnnotation"


@dataclass(frozen=True, slots=True)
class Finding:
    """One key's report: the Event reason, one line naming the key, and whether it refuses."""

    key: str
    reason: Reason
    message: str
    refused: bool = False


def _kind(where: Where) -> Kind:
    return "service" if where == "service" else "ingress"


def _narrows_here(entry: AnnotationKey, where: Where) -> bool:
    # On a backend Service only what upstream reads there can narrow anything.
    return entry.narrows and (where != "backend" or entry.backend is not None)


def _acted_here(entry: AnnotationKey, where: Where) -> bool:
    return entry.backend == "acted" if where == "backend" else entry.acted_on


def _distinctive(key: str) -> str:
    """The part of a key that tells it apart: without the prefix every key of a kind shares
    (and `aws-load-balancer-`, which most Service keys share), which would otherwise make any
    two keys look alike."""
    for prefix in (NLB_PREFIX, SERVICE_ANNOTATION_PREFIX, INGRESS_ANNOTATION_PREFIX):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def _candidates(where: Where) -> dict[str, AnnotationKey]:
    entries = SERVICE_KEYS if where == "service" else INGRESS_KEYS
    return {_distinctive(e.stem): e for e in entries if reviewed(e.key, _kind(where))}


_CANDIDATES: Final = {w: _candidates(w) for w in ("ingress", "backend", "service")}


def suggestion(key: str, where: Where) -> AnnotationKey | None:
    """The known key most like `key` (families by their common start), or None when none is
    alike enough."""
    found = _nearest(_distinctive(key), where)
    return _CANDIDATES[where][found] if found is not None else None


@functools.lru_cache(maxsize=4096)
def _nearest(distinctive: str, where: Where) -> str | None:
    # Cached: the same object is built at enqueue time, at reconcile and at admission.
    found = difflib.get_close_matches(distinctive, list(_CANDIDATES[where]), n=1,
                                      cutoff=SUGGESTION_CUTOFF)
    return found[0] if found else None


def _held(where: Where) -> str:
    return f"{_NARROWS} {'Service' if where == 'service' else 'Ingress'} until it is"


def _not_acted_on(key: str, entry: AnnotationKey, value: object, where: Where) -> Finding:
    if where == "backend" and entry.backend is None:
        return Finding(key, UNSUPPORTED, f"annotation {key} is read on the Ingress, not on a "
                       "backend Service; it is ignored here")
    if _narrows_here(entry, where):
        return Finding(key, UNSUPPORTED, f"annotation {key} asks for {entry.feature}, which "
                       f"aiolbc does not support; {_held(where)} removed", refused=True)
    why = entry.note or f"aiolbc does not support {entry.feature}"
    return Finding(key, UNSUPPORTED, f"annotation {key} is not acted on ({why}); it is ignored")


def _retired(key: str, entry: AnnotationKey, where: Where) -> Finding:
    return Finding(key, UNKNOWN, f"annotation {key} is not read, and upstream has no such key: "
                   f"{entry.note}; {_held(where)} removed (move its value there)", refused=True)


def _unknown(key: str, where: Where) -> Finding:
    near = suggestion(key, where)
    if near is None:
        return Finding(key, UNKNOWN, f"annotation {key} is not a known annotation; it is "
                       "ignored")
    if _narrows_here(near, where):
        return Finding(key, UNKNOWN, f"annotation {key} is not a known annotation (did you "
                       f"mean {near.shown}?); {_held(where)} corrected or removed",
                       refused=True)
    return Finding(key, UNKNOWN, f"annotation {key} is not a known annotation (did you mean "
                   f"{near.shown}?); it is ignored")


def review_key(key: str, value: object, where: Where) -> Finding | None:
    """One key's finding; None when it is acted on where it was found, or not ours at all."""
    if not reviewed(key, _kind(where)):
        return None
    entry = entry_for(key, _kind(where))
    if entry is None:
        return _unknown(key, where)
    if entry.replaced_by is not None:
        return _retired(key, entry, where)
    if _acted_here(entry, where):
        return None
    return _not_acted_on(key, entry, value, where)


def review(annotations: Mapping[str, Any], *, where: Where) -> tuple[Finding, ...]:
    """Every finding of an object's annotations, in key order (one message per object, the
    same each time). More unknown keys than `MAX_UNKNOWN` are one refusal: each costs a
    search for the nearest known key, and an object's owner may not make every build slow."""
    unknown = [k for k in annotations if isinstance(k, str) and reviewed(k, _kind(where))
               and entry_for(k, _kind(where)) is None]
    if len(unknown) > MAX_UNKNOWN:
        kind = "Service" if where == "service" else "Ingress"
        return (Finding("", UNKNOWN, f"{len(unknown)} annotations under aiolbc's prefixes are "
                        f"not known, and at most {MAX_UNKNOWN} are checked (any may be a "
                        "mistyped key that narrows who can reach the load balancer); nothing "
                        f"is deployed for this {kind} until there are no more than "
                        f"{MAX_UNKNOWN}", refused=True),)
    found = (review_key(key, value, where) for key, value in annotations.items()
             if isinstance(key, str))
    return tuple(sorted((f for f in found if f is not None), key=lambda f: f.key))


def check(annotations: Mapping[str, Any], *, where: Where) -> tuple[Finding, ...]:
    """The warnings; raises `UnsupportedAnnotation` with the first refusal's message."""
    findings = review(annotations, where=where)
    for finding in findings:
        if finding.refused:
            raise UnsupportedAnnotation(finding.message)
    return findings


def summarized(findings: Sequence[Finding], *, limit: int = MAX_REPORTED) -> list[Finding]:
    """The first `limit` findings, and one that counts the rest."""
    shown = list(findings[:limit])
    rest = findings[limit:]
    if rest:
        shown.append(Finding("", UNKNOWN if all(f.reason == UNKNOWN for f in rest)
                             else UNSUPPORTED,
                             f"{len(rest)} more annotations under aiolbc's prefixes are not "
                             "acted on; they are ignored"))
    return shown


class FindingLog:
    """Which findings each object (by UID) was last told about by this process, so that a
    verification or a retry does not tell it again; a finding that goes away and comes back is
    told again. Bounded: the objects seen longest ago are forgotten first."""

    def __init__(self, *, size: int = 10_000) -> None:
        self._size = size
        self._told: OrderedDict[str, frozenset[str]] = OrderedDict()

    def new(self, uid: str, findings: Sequence[Finding]) -> list[Finding]:
        """The findings `uid` has not been told about; `findings` become what it was told."""
        told = self._told.pop(uid, frozenset())
        current = frozenset(f.message for f in findings)
        if current:
            self._told[uid] = current
            while len(self._told) > self._size:
                self._told.popitem(last=False)
        return [f for f in findings if f.message not in told]


__all__ = [
    "MAX_REPORTED",
    "MAX_UNKNOWN",
    "SUGGESTION_CUTOFF",
    "UNKNOWN",
    "UNSUPPORTED",
    "Finding",
    "FindingLog",
    "UnsupportedAnnotation",
    "Where",
    "check",
    "review",
    "review_key",
    "suggestion",
    "summarized",
]
