"""The `aiolbc` command line: `aiolbc run`, `aiolbc version` (or `--version`), `aiolbc demo`,
`aiolbc check` (the pre-flight scan before switching from upstream)."""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
from collections.abc import Sequence
from typing import NoReturn

from controller import app, config, demo, preflight
from controller.aws import AWSConfigError
from runtime.client import ApiServerUnavailable
from runtime.logging import configure_logging
from runtime.manager import run_main

# Exit codes: 2 for input that can never work (a flag, the kubeconfig, a port), 1 for a
# failure that may pass (the API server unreachable, leadership lost).
EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _version() -> str:
    return app.version()


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line (it prints the whole usage first otherwise)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aiolbc",
        description="An asyncio AWS Load Balancer Controller: Ingress -> ALB, Service -> NLB, "
        "TargetGroupBinding -> targets.",
    )
    parser.add_argument("--version", action="version", version=f"aiolbc {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="what to do")
    sub.add_parser("version", help="print the version and exit")
    config.add_flags(sub.add_parser("run", help="run the controller"))
    demo.add_arguments(sub.add_parser(
        "demo", help="run the system on local stand-ins (no cluster, no AWS account)"))
    preflight.add_arguments(sub.add_parser(
        "check", help="scan a live cluster before switching from upstream's controller "
        "(read-only): exit 0 go, 1 something would not be honoured or would change, "
        "2 could not check"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"aiolbc {_version()}")
        return 0
    if args.command == "run":
        try:
            cfg = config.config_from_args(args)
            # The first line of every run names the build a log (or a bug report) comes from.
            configure_logging(level=cfg.runtime.log_level, first_line={
                "version": _version(), "python": platform.python_version()})
            return run_main(lambda: app.run(cfg))
        except (config.ConfigError, AWSConfigError) as exc:
            print(f"aiolbc run: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except ApiServerUnavailable as exc:
            print(f"aiolbc run: {exc}", file=sys.stderr)
            return EXIT_FAILED
        except KeyboardInterrupt:  # before the signal handlers are installed
            return 130
    if args.command == "check":
        try:
            return asyncio.run(preflight.run(args))
        except KeyboardInterrupt:
            return 130
    if args.command == "demo":
        try:
            demo.require_extra()
        except demo.DemoExtraMissing as exc:
            print(f"aiolbc demo: {exc}", file=sys.stderr)
            return 2
        try:
            return asyncio.run(demo.run(args))
        except KeyboardInterrupt:
            return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
