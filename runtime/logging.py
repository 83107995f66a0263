"""Structured logging: structlog for our code, with the standard library routed through the same
renderer so aiohttp's or botocore's records come out in the same format.

JSON lines when stderr is not a terminal (a Pod's log), a readable console format otherwise.
Timestamps are ISO 8601 in UTC. `bind_reconcile` puts the controller, the object key and a
reconcile id into context variables, so every line logged inside one reconcile — by any module,
including tasks it starts — carries them.
"""

from __future__ import annotations

import logging
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor

__all__ = [
    "LEVELS",
    "LogLevelError",
    "bind_reconcile",
    "configure_logging",
    "get_logger",
    "new_reconcile_id",
    "parse_level",
]

LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

# Libraries whose INFO/DEBUG lines would drown ours (aiohttp logs every access, botocore every
# credential lookup); they log at WARNING and above only.
NOISY_LOGGERS = ("aiohttp", "aiohttp.access", "aiohttp.client", "aiohttp.server",
                 "aiohttp.web", "botocore", "aiobotocore", "boto3", "urllib3", "werkzeug",
                 "kubernetes_asyncio")

_HANDLER_MARK = "_aiolbc_handler"


class LogLevelError(ValueError):
    """A `--log-level` value that is not one of LEVELS."""


def parse_level(level: str | int) -> int:
    """`--log-level` (debug|info|warn|error, any case) → a logging level."""
    if isinstance(level, int):
        return level
    value = LEVELS.get(level.strip().lower())
    if value is None:
        raise LogLevelError(f"invalid log level {level!r}: expected one of debug, info, warn, "
                            "error")
    return value


class _FirstLine:
    """Adds `fields` to the first line the process writes, whatever it is (a process names its
    build there without a line of its own, which would break "bad input is one line")."""

    def __init__(self, fields: Mapping[str, object]) -> None:
        self._fields: dict[str, object] | None = dict(fields)
        self._lock = threading.Lock()

    def __call__(self, logger: object, method: str, event: EventDict) -> EventDict:
        if self._fields is None:
            return event
        with self._lock:
            fields, self._fields = self._fields, None
        if fields:
            event.update({k: v for k, v in fields.items() if k not in event})
        return event


def configure_logging(*, level: str | int = "info", json: bool | None = None,
                      stream: TextIO | None = None,
                      first_line: Mapping[str, object] | None = None) -> None:
    """Install the process's logging. Safe to call again (the previous handler is replaced).
    `json=None` picks JSON unless `stream` (default stderr) is a terminal; `first_line` adds
    its fields to the first line written (e.g. the version)."""
    numeric = parse_level(level)
    stream = stream if stream is not None else sys.stderr
    if json is None:
        json = not _isatty(stream)

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    if first_line:
        shared.append(_FirstLine(first_line))
    renderer: Processor
    final: list[Processor]
    if json:
        renderer = structlog.processors.JSONRenderer()
        final = [structlog.processors.format_exc_info, structlog.processors.EventRenamer("msg")]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=_isatty(stream))
        final = []

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: module-level loggers created before configuration must follow it.
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final,
                    renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    setattr(handler, _HANDLER_MARK, True)

    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _HANDLER_MARK, False):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, numeric))


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def get_logger(name: str | None = None, **initial: Any) -> Any:
    """A structlog logger; `name` shows as `logger`."""
    return structlog.get_logger(name, **initial)


def new_reconcile_id() -> str:
    """A fresh id for one reconcile (controller-runtime uses a UUID, `reconcileID`)."""
    return str(uuid.uuid4())


@contextmanager
def bind_reconcile(controller: str, key: str, reconcile_id: str | None = None) -> Iterator[str]:
    """Within the block, every log line of this task (and of tasks it creates) carries
    `controller`, `key` and `reconcile_id`. Yields the reconcile id."""
    reconcile_id = reconcile_id or new_reconcile_id()
    with structlog.contextvars.bound_contextvars(controller=controller, key=key,
                                                 reconcile_id=reconcile_id):
        yield reconcile_id
