"""The local stand-ins the demo runs on: the Kubernetes API server (runtime/envtest) and moto
for AWS, both on loopback, plus the real kubectl pointed at the API server."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.envtest import EnvTestServer

if TYPE_CHECKING:
    from controller.standins import AWSFaultProxy, AwsSeed

REGION = "us-west-2"
CLUSTER = "demo"
# Target health as AWS reports it, at demo speed: checks pass 2 s after registration (AWS: at
# least healthy threshold x interval), draining lasts 5 s (AWS default: 300 s).
HEALTH_CHECK_SECONDS = 2.0
DRAINING_SECONDS = 5.0
INSTALL_HINT = "pip install 'aiolbc[demo]'"
# Top-level modules the `demo` extra brings; an ImportError naming another module is a bug,
# not a missing extra, and must not be reported as one.
_EXTRA_MODULES = frozenset({"moto", "flask", "flask_cors", "werkzeug", "boto3"})


class DemoExtraMissing(Exception):
    """`aiolbc demo` cannot run here: the `demo` extra is not installed."""


def find_kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise DemoExtraMissing(f"kubectl not found; install the demo extra: {INSTALL_HINT}")
    return found


def import_standins() -> None:
    """Import the local AWS stand-ins, on demand, so that `aiolbc run` never needs the `demo`
    extra; a missing extra becomes `DemoExtraMissing`."""
    try:
        importlib.import_module("controller.standins")
    except ImportError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in _EXTRA_MODULES:
            raise
        raise DemoExtraMissing(f"the local AWS stand-ins need {missing}, which is not "
                               f"installed; install the demo extra: {INSTALL_HINT}") from exc


def require_extra() -> None:
    """Fail early, with one line, if anything the demo needs at run time is missing."""
    import_standins()
    find_kubectl()


class Kubectl:
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


@dataclass
class StandIns:
    server: EnvTestServer
    kubeconfig: Path
    kubectl: Kubectl
    # The request-logging proxy in front of moto, for the controllers; it answers target
    # health as AWS does.
    aws_url: str
    moto_url: str  # moto itself, for the demo's own looks (kept out of the proxy's log)
    seed: AwsSeed
    proxy: AWSFaultProxy  # no faults: its log shows every AWS call


@contextlib.asynccontextmanager
async def standins(workdir: Path, *, port: int = 0) -> AsyncIterator[StandIns]:
    import_standins()
    from controller.standins import AWSFaultProxy, MotoStandIn, TargetHealthSettings

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto = MotoStandIn().start()
    try:
        seed = await asyncio.to_thread(moto.seed, cluster_name=CLUSTER, region=REGION)
        async with EnvTestServer(port=port, bookmark_interval=1.0) as server, \
                AWSFaultProxy(moto.url, target_health=TargetHealthSettings(
                    health_check_delay=HEALTH_CHECK_SECONDS,
                    deregistration_delay=DRAINING_SECONDS)) as proxy:
            kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
            yield StandIns(server=server, kubeconfig=kubeconfig,
                           kubectl=Kubectl(find_kubectl(), kubeconfig, workdir),
                           aws_url=proxy.url, moto_url=moto.url, seed=seed, proxy=proxy)
    finally:
        await asyncio.to_thread(moto.stop)
