"""Listener rule conditions. Values inside one condition are OR-ed, so they are kept sorted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator

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


class HostHeaderCondition(_Valued):
    field: Literal["host-header"] = "host-header"


class PathPatternCondition(_Valued):
    field: Literal["path-pattern"] = "path-pattern"


class HttpHeaderCondition(_Valued):
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
