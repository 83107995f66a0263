"""`python -m controller.standins --port N`: the AWS stand-in (moto on 127.0.0.1 with what
moto_fidelity.py corrects) in a process of its own, until SIGTERM or SIGINT. The benchmarks run
AWS apart from the controller, so that the CPU they measure is the controller's alone, and
against the same stand-in the tests use, so that the calls they count are those AWS would see."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from controller.standins.moto_server import MotoStandIn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.standins",
                                     description="the AWS stand-in on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: {args.port} is not a port")
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    try:
        standin = MotoStandIn(port=args.port).start()
    except OSError as exc:
        print(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(standin.url, flush=True)
    try:
        stop.wait()
    finally:
        standin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
