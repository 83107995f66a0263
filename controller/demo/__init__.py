"""`aiolbc demo`: the whole system on embedded local stand-ins, no cluster and no AWS account.

1. Starts the local Kubernetes API server and moto (AWS) on loopback, applies the CRDs and
   the examples with the real kubectl, and plays the part of the kubelet (EndpointSlices, Nodes).
2. Runs two controller replicas with leader election and shows what they do: who leads, load
   balancer DNS names, targets registered.
3. Kills the leader (no lease release, as SIGKILL), changes the workload at once, and shows the
   standby taking over: unchanged objects matched by their checkpoints wait in the paced LOW
   lane while the real change is applied first.
4. Rolls a Deployment (played, as its kubelet) behind an NLB to a new revision with pod
   readiness gates, injected by the replicas' webhook: the load balancer never has fewer
   healthy targets than replicas, and old pods serve until their targets drained.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import tempfile
import time
from pathlib import Path

from controller.defaults import DEFAULT_WEBHOOK_SERVICE_NAME as WEBHOOK_SERVICE
from controller.demo.display import Display
from controller.demo.replica import CONTROLLER_NAMESPACE, Replica, replica_flags
from controller.demo.rollout import rollout_with_gates
from controller.demo.standins import DemoExtraMissing, StandIns, require_extra, standins
from controller.demo.workload import Workload
from runtime.logging import configure_logging

__all__ = ["DemoExtraMissing", "add_arguments", "require_extra", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0,
                        help="port of the local API server (default: any free port)")
    parser.add_argument("--manifests", type=Path, default=None,
                        help="directory holding crds/ and examples/ (default: ./manifests)")
    parser.add_argument("--objects", type=int, default=20,
                        help="extra unchanged TargetGroupBindings, to watch checkpoints work")
    parser.add_argument("--hold", action=argparse.BooleanOptionalAction, default=None,
                        help="keep running at the end until Ctrl-C "
                             "(default: when attached to a terminal)")


def _find_manifests(explicit: Path | None) -> Path:
    candidates = [explicit] if explicit else [
        Path.cwd() / "manifests", Path(__file__).resolve().parents[2] / "manifests"]
    for candidate in candidates:
        if candidate is not None and (candidate / "crds").is_dir():
            return candidate
    raise SystemExit(f"aiolbc demo: no manifests directory with crds/ found (looked in "
                     f"{', '.join(str(c) for c in candidates)}); pass --manifests DIR")


async def _interrupted() -> None:
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
    # The narration is the output; the replicas' own logs would drown it.
    configure_logging(level="error")
    manifests = _find_manifests(args.manifests)
    if args.objects < 0:
        raise SystemExit("aiolbc demo: --objects must be >= 0")
    hold = args.hold if args.hold is not None else sys.stdin.isatty()
    with tempfile.TemporaryDirectory(prefix="aiolbc-demo-") as tmp:
        async with standins(Path(tmp), port=args.port) as local:
            main = asyncio.create_task(_demo(local, manifests, args.objects, hold, Path(tmp)))
            interrupted = asyncio.create_task(_interrupted())
            done, _ = await asyncio.wait({main, interrupted},
                                         return_when=asyncio.FIRST_COMPLETED)
            if main in done:
                interrupted.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await interrupted
                return main.result()
            main.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await main
            print("interrupted; stopped cleanly", flush=True)
            return 0


async def _demo(local: StandIns, manifests: Path, objects: int, hold: bool,
                workdir: Path) -> int:
    display = Display()
    display.step(f"local Kubernetes API server on {local.server.url}; moto (AWS) on "
                 f"{local.aws_url}; VPC {local.seed.vpc_id}")
    display.step(f"kubectl apply -f {manifests / 'crds'}")
    display.output(await local.kubectl("apply", "-f", str(manifests / "crds")))
    await local.kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd", "--all")
    display.step(f"kubectl apply -f {manifests / 'examples'}")
    display.output(await local.kubectl("apply", "-f", str(manifests / "examples")))
    display.step(f"kubectl apply -f {manifests / 'webhook'} (the admission webhooks; the "
                 "replicas inject their CA)")
    await local.kubectl("create", "namespace", CONTROLLER_NAMESPACE)
    display.output(await local.kubectl("apply", "-f", str(manifests / "webhook")))

    flags = replica_flags(local.kubeconfig, local.aws_url, local.seed.vpc_id)
    workload = Workload(local)
    await workload.setup(objects=objects, display=display)

    replicas = [Replica("replica-a", flags, workdir), Replica("replica-b", flags, workdir)]
    try:
        for replica in replicas:
            await replica.start()
        # The webhook Service of a cluster routes to a ready replica; here, the first one.
        local.server.map_service(CONTROLLER_NAMESPACE, WEBHOOK_SERVICE, 443,
                                 replicas[0].webhook_port)
        display.step("started two controller replicas, `aiolbc run` processes "
                     f"(pids {', '.join(str(r.pid) for r in replicas)}) with leader election "
                     "(lease 3s, renew 2s, retry 0.5s)")
        leader = await workload.wait_for_leader(replicas, display)
        await workload.wait_converged(display)
        await workload.report_security_groups(display)
        await workload.report_health(display)

        standby = next(r for r in replicas if r is not leader)
        display.step(f"SIGKILL to the leader {leader.name} (no lease release) and scaling "
                     "deployment/web to 3 pods at the same moment")
        killed_at = time.monotonic()
        await leader.kill()
        local.server.map_service(CONTROLLER_NAMESPACE, WEBHOOK_SERVICE, 443, standby.webhook_port)
        new_ip = await workload.scale_web()
        await workload.wait_leader(standby, display, since=killed_at)
        took_over = time.monotonic()
        await workload.report_takeover(new_ip, display, standby, took_over=took_over)
        await workload.report_health(display)
        await rollout_with_gates(local, await workload.kube(), display)
        display.step("kubectl get targetgroupbindings,services,ingresses -A")
        display.output(await local.kubectl("get", "targetgroupbindings,services,ingresses",
                                           "-A"))
        if hold:
            display.step(f"running; try: KUBECONFIG={local.kubeconfig} kubectl get all -A "
                         "(Ctrl-C to stop)")
            await asyncio.Event().wait()
        display.step(f"SIGTERM to {standby.name}: it finishes in-flight work and releases "
                     "the lease")
        code = await standby.stop()
        display.step(f"{standby.name} exited with code {code}")
    except BaseException:
        for replica in replicas:
            if replica.alive:
                display.output(f"--- last lines of {replica.name}'s log ---\n"
                               + replica.tail())
        raise
    finally:
        for replica in replicas:
            await replica.abandon()
        await workload.close()
    display.step("stopped cleanly")
    return 0
