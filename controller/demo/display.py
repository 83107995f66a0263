"""Progress output for the demo: timestamped steps, and a progress line that redraws in place
on a terminal and prints only when it changes otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time


class Display:
    def __init__(self) -> None:
        self._start = time.monotonic()
        self._tty = sys.stdout.isatty()
        self._last_progress = ""
        self._progress_open = False

    def _stamp(self) -> str:
        return f"[{time.monotonic() - self._start:6.2f}s]"

    def _close_progress(self) -> None:
        if self._progress_open:
            print(flush=True)
            self._progress_open = False

    def step(self, message: str) -> None:
        self._close_progress()
        print(f"{self._stamp()} {message}", flush=True)

    def output(self, text: str) -> None:
        self._close_progress()
        for line in text.rstrip("\n").splitlines():
            print(f"           {line}")
        sys.stdout.flush()

    def progress(self, message: str) -> None:
        if message == self._last_progress:
            return
        self._last_progress = message
        if self._tty:
            print(f"\r\x1b[2K{self._stamp()} {message}", end="", flush=True)
            self._progress_open = True
        else:
            print(f"{self._stamp()} {message}", flush=True)


def bar(done: int, total: int, width: int = 20) -> str:
    filled = width if total == 0 else round(width * done / total)
    return "[" + "#" * filled + "." * (width - filled) + f"] {done}/{total}"
