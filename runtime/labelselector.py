"""Label selectors in the text form `labels.Parse` accepts (`env=prod,tier in (a,b),!legacy`),
matched on the client side: for a selector the process applies itself, such as which Namespaces
a manager serves (runtime/namespaces.py), where asking the API server to filter would lose the
moment an object stops matching.

`parse` raises `ValueError` with one line naming what is wrong; an empty text selects
everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}"
                  r"[A-Za-z0-9])?")
_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_SET = re.compile(r"(\S+)\s+(in|notin)\s*\((.*)\)")
_COMPARE = re.compile(r"([^\s!=<>]+)\s*(==|=|!=|>|<)\s*(\S*)")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "exists", "!", "in", "notin", ">", "<"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        value = labels.get(self.key)
        has = self.key in labels and isinstance(value, str)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op == "in":
            return has and value in self.values
        if self.op == "notin":
            return not has or value not in self.values
        if not has:
            return False
        try:
            number, bound = int(str(value)), int(next(iter(self.values)))
        except ValueError:
            return False
        return number > bound if self.op == ">" else number < bound


@dataclass(frozen=True, slots=True)
class Selector:
    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, obj: Any) -> bool:
        """Whether `obj` (an object as the API serves it, hostile JSON included) carries
        labels this selector admits."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return all(r.matches(labels if isinstance(labels, dict) else {})
                   for r in self.requirements)

    def __str__(self) -> str:
        return self.text


def _split(text: str) -> list[str]:
    """On commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _key(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not a label key (a name of at most 63 alphanumeric "
                         "characters, '-', '_' or '.', with an optional DNS prefix and '/')")
    return key


def _value(value: str) -> str:
    if not _VALUE.fullmatch(value):
        raise ValueError(f"{value!r} is not a label value (at most 63 alphanumeric "
                         "characters, '-', '_' or '.', starting and ending with an "
                         "alphanumeric character)")
    return value


def _requirement(part: str) -> Requirement:
    if not part:
        raise ValueError("an empty requirement (two commas, or a comma at an end)")
    if part.startswith("!"):
        return Requirement(_key(part[1:].strip()), "!")
    found = _SET.fullmatch(part)
    if found:
        values = frozenset(_value(v.strip()) for v in found.group(3).split(","))
        return Requirement(_key(found.group(1)), found.group(2), values)
    found = _COMPARE.fullmatch(part)
    if found:
        key, op, value = _key(found.group(1)), found.group(2), found.group(3)
        if op in (">", "<"):
            if not re.fullmatch(r"-?\d+", value):
                raise ValueError(f"{part!r}: '{op}' needs an integer")
            return Requirement(key, op, frozenset([value]))
        return Requirement(key, "notin" if op == "!=" else "in", frozenset([_value(value)]))
    if re.fullmatch(r"[^\s!=<>(),]+", part):
        return Requirement(_key(part), "exists")
    raise ValueError(f"{part!r} is not a requirement (key, !key, key=value, key!=value, "
                     "key in (a,b), key notin (a,b))")


def parse(text: str) -> Selector:
    stripped = text.strip()
    if not stripped:
        return Selector("", ())
    return Selector(stripped, tuple(_requirement(p.strip()) for p in _split(stripped)))


def problem(text: str) -> str | None:
    """Why `text` is not a label selector (a flag's check), or None."""
    try:
        parse(text)
    except ValueError as exc:
        return f"{text!r} is not a label selector: {exc}"
    return None


__all__ = ["Requirement", "Selector", "parse", "problem"]
