"""The checkpoint-timestamp as the reconciler reads it: only a plain count of seconds."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis import CHECKPOINT_TIMESTAMP_ANNOTATION
from controller.targetgroupbinding import checkpoint


def _binding(value: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": {CHECKPOINT_TIMESTAMP_ANNOTATION: value}}}


def test_the_written_timestamp_reads_back() -> None:
    written = checkpoint.patch("a/b", 1_700_000_000.7)
    assert checkpoint.written_at(written) == 1_700_000_000.0


@pytest.mark.parametrize("value", [
    "", " 17", "-5", "1.5", "1e9", "١٢٣", "9" * 13, "0x10", None, 17, ["1"]])
def test_anything_else_is_no_timestamp(value: Any) -> None:
    assert checkpoint.written_at(_binding(value)) is None


@pytest.mark.parametrize("obj", [{}, {"metadata": None}, {"metadata": {"annotations": None}}])
def test_missing_is_no_timestamp(obj: dict[str, Any]) -> None:
    assert checkpoint.written_at(obj) is None
