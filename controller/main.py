"""The `aiolbc` command line: `aiolbc version`, `aiolbc demo`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from importlib import metadata

from controller import app, config, demo
from controller.aws import AWSConfigError
from runtime.logging import configure_logging
from runtime.manager import run_main


def _version() -> str:
    try:
        return metadata.version("aiolbc")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aiolbc",
        description="An asyncio AWS Load Balancer Controller: Ingress -> ALB, Service -> NLB, "
        "TargetGroupBinding -> targets.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("version", help="print the version and exit")
    config.add_flags(sub.add_parser("run", help="run the controller"))
    demo.add_arguments(sub.add_parser(
        "demo", help="run the system on local stand-ins (no cluster, no AWS account)"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"aiolbc {_version()}")
        return 0
    if args.command == "run":
        try:
            cfg = config.config_from_args(args)
            configure_logging(level=cfg.log_level)
            return run_main(lambda: app.run(cfg))
        except (config.ConfigError, AWSConfigError) as exc:
            print(f"aiolbc run: {exc}", file=sys.stderr)
            return 2
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
