"""Listener rule conditions. Values inside one condition are OR-ed, so they are kept sorted.

Host-header, path-pattern and http-header conditions match `values` (wildcards) or
`regex_values` (regular expressions), exactly one of the two (AWS's RegexValues). A condition
without regular expressions serializes as it did before they existed, so the canonical JSON,
and every checkpoint, of a stack that uses none stays the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from controller.model.base import Items, Model, sorted_unique
from controller.model.limits import MAX_CONDITION_VALUE_LENGTH


class _Valued(Model):
    values: Items[str] = Field(min_length=1)

    @field_validator("values", mode="before")
    @classmethod
    def _sorted(cls, value: object) -> object:
        return sorted_unique(value)

    @field_validator("values", mode="after")
    @classmethod
    def _lengths(cls, value: Sequence[str]) -> Sequence[str]:
        for item in value:
            if not item or len(item) > MAX_CONDITION_VALUE_LENGTH:
                raise ValueError(f"condition value {item[:40]!r}: want 1.."
                                 f"{MAX_CONDITION_VALUE_LENGTH} characters")
        return value


def _checked(values: Sequence[str]) -> Sequence[str]:
    for item in values:
        if not item or len(item) > MAX_CONDITION_VALUE_LENGTH:
            raise ValueError(f"condition value {item[:40]!r}: want 1.."
                             f"{MAX_CONDITION_VALUE_LENGTH} characters")
    return values


class _Matched(Model):
    """Wildcard values or regular expressions: one of the two, never both (AWS)."""

    values: Items[str] = ()
    regex_values: Items[str] = ()

    @field_validator("values", "regex_values", mode="before")
    @classmethod
    def _sorted(cls, value: object) -> object:
        return sorted_unique(value)

    @field_validator("values", "regex_values", mode="after")
    @classmethod
    def _lengths(cls, value: Sequence[str]) -> Sequence[str]:
        return _checked(value)

    @field_validator("regex_values", mode="after")
    @classmethod
    def _one(cls, value: Sequence[str], info: ValidationInfo) -> Sequence[str]:
        values = info.data.get("values", ())
        if bool(values) == bool(value):
            raise ValueError("a condition takes exactly one of values and regex values")
        return value

    @property
    def count(self) -> int:
        return len(self.values) + len(self.regex_values)

    @model_serializer(mode="wrap")
    def _compat(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        out: dict[str, object] = handler(self)
        if not self.regex_values:
            out.pop("regex_values", None)
        return out


class HostHeaderCondition(_Matched):
    field: Literal["host-header"] = "host-header"


class PathPatternCondition(_Matched):
    field: Literal["path-pattern"] = "path-pattern"


class HttpHeaderCondition(_Matched):
    field: Literal["http-header"] = "http-header"
    header_name: str = Field(min_length=1, max_length=40)


class SourceIpCondition(_Valued):
    field: Literal["source-ip"] = "source-ip"


class HttpRequestMethodCondition(_Valued):
    field: Literal["http-request-method"] = "http-request-method"


class QueryStringKeyValue(Model):
    key: str | None = Field(default=None, max_length=MAX_CONDITION_VALUE_LENGTH)
    value: str = Field(min_length=1, max_length=MAX_CONDITION_VALUE_LENGTH)


class QueryStringCondition(Model):
    field: Literal["query-string"] = "query-string"
    values: Items[QueryStringKeyValue] = Field(min_length=1)

    @field_validator("values", mode="after")
    @classmethod
    def _sorted(cls, value: Sequence[QueryStringKeyValue]) -> tuple[QueryStringKeyValue, ...]:
        unique = {(kv.key or "", kv.value): kv for kv in value}
        return tuple(unique[k] for k in sorted(unique))


Condition = Annotated[
    HostHeaderCondition
    | PathPatternCondition
    | HttpHeaderCondition
    | SourceIpCondition
    | HttpRequestMethodCondition
    | QueryStringCondition,
    Field(discriminator="field"),
]

MAX_CONDITION_VALUES = 5


def condition_sort_key(condition: Condition) -> str:
    return condition.model_dump_json()


def condition_value_count(condition: Condition) -> int:
    """What AWS counts against a rule's limit of condition values (regular expressions too)."""
    if isinstance(condition, _Matched):
        return condition.count
    return len(condition.values)
