"""Logging setup: JSON lines, levels, stdlib routing and reconcile context."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from runtime.logging import (
    LogLevelError,
    bind_reconcile,
    configure_logging,
    get_logger,
    parse_level,
)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    noisy = {name: logging.getLogger(name).level for name in ("aiohttp.access", "botocore")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, lvl in noisy.items():
        logging.getLogger(name).setLevel(lvl)
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line]


def test_json_lines_carry_reconcile_context_only_inside_the_block() -> None:
    out = io.StringIO()
    configure_logging(level="info", stream=out)  # StringIO is not a terminal → JSON
    log = get_logger("ingress")
    with bind_reconcile("ingress", "shop/web", "r-1") as reconcile_id:
        assert reconcile_id == "r-1"
        log.info("building model", rules=3)
        logging.getLogger("controller.deploy").warning("stdlib line %s", "inside")
    log.info("idle")
    first, second, third = lines(out)
    assert first["msg"] == "building model"
    assert first["rules"] == 3
    assert (first["controller"], first["key"], first["reconcile_id"]) == (
        "ingress", "shop/web", "r-1")
    assert first["level"] == "info"
    assert first["logger"] == "ingress"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", first["timestamp"])
    assert second["msg"] == "stdlib line inside"
    assert second["reconcile_id"] == "r-1"
    assert second["level"] == "warning"
    assert "reconcile_id" not in third


async def test_context_follows_tasks_and_does_not_leak_between_reconciles() -> None:
    out = io.StringIO()
    configure_logging(stream=out, json=True)
    log = get_logger("service")

    async def reconcile(key: str) -> None:
        with bind_reconcile("service", key):
            await asyncio.sleep(0)
            await asyncio.create_task(child())
            log.info("done")

    async def child() -> None:
        log.info("child step")

    await asyncio.gather(reconcile("ns/a"), reconcile("ns/b"))
    records = lines(out)
    assert len(records) == 4
    for key in ("ns/a", "ns/b"):
        mine = [r for r in records if r["key"] == key]
        assert [r["msg"] for r in mine] == ["child step", "done"]
        assert len({r["reconcile_id"] for r in mine}) == 1
    assert len({r["reconcile_id"] for r in records}) == 2


def test_levels_and_library_noise() -> None:
    out = io.StringIO()
    configure_logging(level="warn", stream=out, json=True)
    log = get_logger("x")
    log.info("hidden")
    log.warning("shown")
    configure_logging(level="DEBUG", stream=out, json=True)  # reconfiguring replaces the handler
    log.debug("debug shown")
    logging.getLogger("aiohttp.access").info("GET /metrics 200")
    logging.getLogger("botocore").debug("credentials found")
    logging.getLogger("botocore").warning("retrying")
    assert [r["msg"] for r in lines(out)] == ["shown", "debug shown", "retrying"]


def test_exceptions_are_rendered_into_the_json_line() -> None:
    out = io.StringIO()
    configure_logging(stream=out, json=True)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        get_logger("x").exception("reconcile failed")
    (record,) = lines(out)
    assert "RuntimeError: boom" in record["exception"]


def test_console_format_on_request() -> None:
    out = io.StringIO()
    configure_logging(stream=out, json=False)
    get_logger("x").info("hello", key="ns/a")
    text = out.getvalue()
    assert "hello" in text
    assert "key=ns/a" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.splitlines()[0])


@pytest.mark.parametrize(("value", "level"), [("info", logging.INFO), ("Debug", logging.DEBUG),
                                              ("warn", logging.WARNING),
                                              ("error", logging.ERROR)])
def test_parse_level(value: str, level: int) -> None:
    assert parse_level(value) == level


def test_bad_level_is_one_clear_error() -> None:
    with pytest.raises(LogLevelError, match=r"invalid log level 'verbose': expected one of "
                                            r"debug, info, warn, error"):
        configure_logging(level="verbose")


def test_first_line_fields_go_to_the_first_line_written_only() -> None:
    out = io.StringIO()
    configure_logging(level="info", stream=out, first_line={"version": "9.9.9"})
    log = structlog.get_logger("t")
    log.debug("filtered out: not written, so not the first line")
    log.info("serving", version_of_something="x")
    logging.getLogger("library").warning("a stdlib line")
    log.info("later")
    written = lines(out)
    assert [line["msg"] for line in written] == ["serving", "a stdlib line", "later"]
    assert written[0]["version"] == "9.9.9"
    assert all("version" not in line for line in written[1:])
