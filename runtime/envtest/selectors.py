"""Label and field selectors, with the syntax `labels.Parse` and `fields.ParseSelector` accept."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.envtest.registry import ResourceType
from runtime.envtest.status import StatusError, bad_request

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_OP = re.compile(r"^\s*(!=|==|=|\s+notin\s*|\s+in\s*|>|<)\s*")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "exists", "!", "=", "!=", "in", "notin", ">", "<"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        if not has or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(next(iter(self.values)))
        return number > bound if self.op == ">" else number < bound


LabelSelector = tuple[Requirement, ...]


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
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


def _label_error(text: str, why: str) -> StatusError:
    return bad_request(f"unable to parse requirement: {why}" if text else why)


def parse_label_selector(text: str) -> LabelSelector:
    text = text.strip()
    if not text:
        return ()
    reqs: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise _label_error(text, f"found '', expected: identifier in {text!r}")
        if part.startswith("!"):
            key = part[1:].strip()
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            continue
        m = re.match(r"^([^\s!=<>(),]+)(.*)$", part)
        if m is None:
            raise _label_error(text, f"found '{part}', expected: identifier")
        key, rest = m.group(1), m.group(2)
        _check_key(key)
        if not rest.strip():
            reqs.append(Requirement(key, "exists"))
            continue
        om = _OP.match(rest)
        if om is None:
            raise _label_error(text, f"found '{rest.strip()}', expected: in, notin, =, ==, !=, "
                               "gt, lt")
        op = om.group(1).strip()
        value_text = rest[om.end():].strip()
        if op in ("in", "notin"):
            if not (value_text.startswith("(") and value_text.endswith(")")):
                raise _label_error(text, f"found '{value_text}', expected: '('")
            values = [v.strip() for v in value_text[1:-1].split(",")]
            for v in values:
                _check_value(v)
            reqs.append(Requirement(key, op, frozenset(values)))
            continue
        if op in (">", "<"):
            try:
                int(value_text)
            except ValueError:
                raise _label_error(text, f"for 'Gt', 'Lt' operators, the value must be an "
                                   f"integer: {value_text!r}") from None
        else:
            _check_value(value_text)
        reqs.append(Requirement(key, "=" if op == "==" else op, frozenset([value_text])))
    return tuple(reqs)


def _check_key(key: str) -> None:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise bad_request(f"unable to parse requirement: values[0][{key}]: Invalid value: "
                          f'"{key}": name part must consist of alphanumeric characters, \'-\', '
                          "'_' or '.', and must start and end with an alphanumeric character")


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise bad_request(f'unable to parse requirement: values[0]: Invalid value: "{value}": '
                          "a valid label must be an empty string or consist of alphanumeric "
                          "characters, '-', '_' or '.', and must start and end with an "
                          "alphanumeric character")


def labels_match(selector: LabelSelector, obj: Mapping[str, Any]) -> bool:
    if not selector:
        return True
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(req.matches(labels) for req in selector)


_EXPRESSION_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
_KEY_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
              "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
              "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def selector_problems(selector: Any, path: str) -> list[tuple[str, str, str]]:
    """What ValidateLabelSelector says about a metav1.LabelSelector object, as (field, reason
    type, message) causes; empty when `label_selector` can use it."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [(path, "FieldValueInvalid", "Invalid value: must be an object")]
    causes: list[tuple[str, str, str]] = []
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, dict):
        causes.append((f"{path}.matchLabels", "FieldValueInvalid",
                       "Invalid value: must be a map of strings"))
        labels = {}
    for key, value in labels.items():
        if not _KEY.match(key):
            causes.append((f"{path}.matchLabels", "FieldValueInvalid",
                           f'Invalid value: "{key}": {_KEY_MSG}'))
        if not isinstance(value, str) or len(value) > 63 or not _VALUE.match(value):
            causes.append((f"{path}.matchLabels", "FieldValueInvalid",
                           f'Invalid value: "{value}": {_VALUE_MSG}'))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*causes, (f"{path}.matchExpressions", "FieldValueInvalid",
                          "Invalid value: must be a list")]
    for i, expr in enumerate(expressions):
        where = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, dict):
            causes.append((where, "FieldValueInvalid", "Invalid value: must be an object"))
            continue
        op, values = expr.get("operator"), expr.get("values") or []
        key = expr.get("key")
        if not isinstance(key, str) or not _KEY.match(key):
            causes.append((f"{where}.key", "FieldValueInvalid",
                           f'Invalid value: "{key}": {_KEY_MSG}'))
        if op not in _EXPRESSION_OPS:
            causes.append((f"{where}.operator", "FieldValueInvalid",
                           f'Invalid value: "{op}": not a valid selector operator'))
        elif op in ("In", "NotIn") and not values:
            causes.append((f"{where}.values", "FieldValueRequired", "Required value: must be "
                           "specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append((f"{where}.values", "FieldValueForbidden", "Forbidden: may not be "
                           "specified when `operator` is 'Exists' or 'DoesNotExist'"))
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            causes.append((f"{where}.values", "FieldValueInvalid",
                           "Invalid value: must be a list of strings"))
    return causes


def label_selector(selector: Any) -> LabelSelector:
    """A metav1.LabelSelector object (matchLabels, matchExpressions) as requirements; an empty
    or missing one selects everything. Assumes `selector_problems` found nothing."""
    if not isinstance(selector, dict):
        return ()
    reqs = [Requirement(key, "=", frozenset([value]))
            for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], _EXPRESSION_OPS[expr["operator"]],
                                frozenset(expr.get("values") or ())))
    return tuple(reqs)


def labels_of(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Whether a label set (rather than an object) is selected."""
    return all(req.matches(labels) for req in selector)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    path: tuple[str, ...]
    equal: bool
    value: str


FieldSelector = tuple[FieldRequirement, ...]

# Fields beyond metadata.name/namespace that the real server indexes for these kinds.
_EXTRA_FIELDS: dict[str, frozenset[str]] = {
    "pods": frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                       "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                       "status.podIP", "status.nominatedNodeName"}),
    "secrets": frozenset({"type"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "namespaces": frozenset({"status.phase"}),
    "services": frozenset({"spec.clusterIP", "spec.type"}),
    "events": frozenset({"involvedObject.kind", "involvedObject.namespace",
                         "involvedObject.name", "involvedObject.uid",
                         "involvedObject.apiVersion", "involvedObject.resourceVersion",
                         "involvedObject.fieldPath", "reason", "reportingComponent", "source",
                         "type", "regarding.kind", "regarding.name", "regarding.namespace",
                         "regarding.uid", "reportingController"}),
}


def parse_field_selector(text: str, rt: ResourceType) -> FieldSelector:
    text = text.strip()
    if not text:
        return ()
    allowed = {"metadata.name", "metadata.namespace"} | _EXTRA_FIELDS.get(rt.plural, frozenset())
    reqs = []
    for part in text.split(","):
        part = part.strip()
        m = re.match(r"^([^=!]+)(==|=|!=)(.*)$", part)
        if m is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        fld, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if fld not in allowed:
            raise bad_request(f'field label not supported: {fld}')
        reqs.append(FieldRequirement(tuple(fld.split(".")), op != "!=", value))
    return tuple(reqs)


def _field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    cur: Any = obj
    for step in path:
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(step)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(selector: FieldSelector, obj: Mapping[str, Any]) -> bool:
    return all((_field_value(obj, req.path) == req.value) == req.equal for req in selector)


def matcher(labels: LabelSelector, fields: FieldSelector
            ) -> Callable[[Mapping[str, Any]], bool] | None:
    """A predicate for both selectors, or None when nothing is selected out."""
    if not labels and not fields:
        return None

    def match(obj: Mapping[str, Any]) -> bool:
        return labels_match(labels, obj) and fields_match(fields, obj)

    return match
