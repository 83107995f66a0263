"""One family for bad input. Every parser and model builder raises a subclass of `InvalidInput`
for anything a user must fix (an annotation, a spec, a class parameter, a model AWS would
refuse): its `str()` is one line meant for the object's Warning Event and status condition, the
reconcile makes no AWS call for that object, and it is not retried until the object changes.

`condition_reason` is the status condition reason of each member (upstream's names where it
has them): the toolkit in `controller/reconcilers.py` reports every member the same way."""

from __future__ import annotations

from typing import ClassVar


class InvalidInput(ValueError):
    condition_reason: ClassVar[str] = "InvalidInput"


class MissingReference(InvalidInput):
    """Bad input that can resolve itself: an object the input names does not exist (yet).
    Admission allows it, with a warning, since objects applied together arrive in any order;
    the reconciler reports it like any other bad input until the object appears."""


def first_line(exc: Exception) -> str:
    """One line for a model's construction error: pydantic's first error with its location
    (the rest would repeat it), else the exception's first line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            msg = str(first.get("msg", exc)).removeprefix("Value error, ")
            return f"{loc}: {msg}" if loc else msg
        except Exception:
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
