"""The `aiolbc` command line: `aiolbc version`, `aiolbc demo`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from importlib import metadata

from controller import demo


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
    demo.add_arguments(sub.add_parser(
        "demo", help="run the system on local stand-ins (no cluster, no AWS account)"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"aiolbc {_version()}")
        return 0
    if args.command == "demo":
        try:
            return asyncio.run(demo.run(args))
        except KeyboardInterrupt:
            return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
