"""Listener rule transforms (AWS's `RuleTransform`): a request's host header or URL rewritten
before it reaches the targets, one transform of each type per rule at most."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.model.base import Items, Model

TransformType = Literal["host-header-rewrite", "url-rewrite"]
MAX_REWRITE_LENGTH = 1024  # AWS: Regex and Replace, 1,024 characters each


class Rewrite(Model):
    regex: str = Field(min_length=1, max_length=MAX_REWRITE_LENGTH)
    replace: str = Field(max_length=MAX_REWRITE_LENGTH)


class RuleTransform(Model):
    type: TransformType
    # Applied in order: a list, not a set.
    rewrites: Items[Rewrite] = Field(min_length=1)
