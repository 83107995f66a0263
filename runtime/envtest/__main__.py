"""`python -m runtime.envtest --port PORT --kubeconfig FILE [--crds PATH ...] [--rbac]
[--token TOKEN=USER[,GROUP...] ...]`: run the local API server until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from runtime.envtest.auth import User, parse_token_spec
from runtime.envtest.server import EnvTestServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime.envtest",
        description="Local Kubernetes API server for tests and demos (plain HTTP, 127.0.0.1).")
    parser.add_argument("--port", type=_port, default=0,
                        help="port to listen on (default: any free port)")
    parser.add_argument("--kubeconfig", type=Path, required=True,
                        help="where to write a kubeconfig for kubectl and clients")
    parser.add_argument("--crds", type=Path, nargs="+", action="extend", default=[],
                        metavar="PATH", help="CRD files or directories to serve at start")
    parser.add_argument("--bookmark-interval", type=_positive, default=60.0, metavar="SECONDS",
                        help="seconds between watch bookmarks (default: 60)")
    parser.add_argument("--history-size", type=int, default=10_000, metavar="EVENTS",
                        help="events kept for watch resumption (default: 10000)")
    parser.add_argument("--rbac", action="store_true",
                        help="require bearer tokens and authorize requests with RBAC; the "
                             "kubeconfig gets the admin (system:masters) token; implies "
                             "--tls, since kubectl sends tokens only over HTTPS")
    parser.add_argument("--tls", action="store_true",
                        help="serve HTTPS with a self-signed certificate the kubeconfig trusts")
    parser.add_argument("--token", type=_token, action="append", default=[],
                        metavar="TOKEN=USER[,GROUP...]",
                        help="an identity, e.g. t1=system:serviceaccount:kube-system:aiolbc "
                             "(service-account groups added) or t2=alice,devs (repeatable)")
    return parser


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, not {value}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def _token(text: str) -> tuple[str, User]:
    try:
        return parse_token_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _StartupError(Exception):
    pass


async def _serve(args: argparse.Namespace) -> None:
    server = EnvTestServer(port=args.port, crds=args.crds,
                           bookmark_interval=args.bookmark_interval,
                           history_size=args.history_size, rbac=args.rbac,
                           tokens=dict(args.token), tls=args.tls or args.rbac)
    try:
        await server.start()
    except OSError as exc:
        raise _StartupError(f"cannot listen on 127.0.0.1:{args.port}: "
                            f"{exc.strerror or exc}") from None
    try:
        try:
            server.write_kubeconfig(args.kubeconfig)
        except OSError as exc:
            raise _StartupError(f"cannot write {args.kubeconfig}: {exc.strerror or exc}"
                                ) from None
        print(server.url, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.history_size < 1:
        parser.error("--history-size must be at least 1")
    for path in args.crds:
        if not path.exists():
            parser.error(f"--crds: {path}: no such file or directory")
    try:
        asyncio.run(_serve(args))
    except (ValueError, _StartupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
