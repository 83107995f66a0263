"""`aiolbc check` against the local API server, through the real CLI (a subprocess): a cluster
aiolbc would serve as it is (go), one as upstream's controller leaves it (every annotation,
field and flag not honoured named, adoption said per object), the JSON report's schema, and the
exit codes."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.preflight.upstream import DEPLOYMENTS
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.resources import INGRESSCLASSES, INGRESSES, SERVICES
from tests.support import objects
from tests.support.kubectl import Kubectl
from tests.support.paths import CRDS, MANIFESTS, REPO

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version", "go", "exitCode", "counts", "findings"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1},
        "go": {"type": "boolean"},
        "exitCode": {"enum": [0, 1]},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "findings": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["kind", "object", "category", "subject", "message"],
            "properties": {
                "kind": {"type": "string"}, "object": {"type": "string"},
                "category": {"enum": ["not-honoured", "changes", "malformed", "adopted",
                                      "served", "note"]},
                "subject": {"type": "string"}, "message": {"type": "string"}}}},
    },
}


class Checked:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code, self.stdout, self.stderr = code, stdout, stderr

    @property
    def report(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.stdout)
        jsonschema.validate(body, SCHEMA)
        return body

    def of(self, kind: str, name: str) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if (f["kind"], f["object"]) == (kind, name)]


def pointed_at(kubeconfig: Path, url: str, target: Path) -> Path:
    """A copy of `kubeconfig` whose cluster is at `url`."""
    text = kubeconfig.read_text()
    [server] = re.findall(r"server: *(\S+)", text)
    target.write_text(text.replace(server.strip("'\""), url))
    return target


async def check(kubeconfig: Path, *args: str) -> Checked:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.main", "check", "--kubeconfig", str(kubeconfig),
        *args, cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return Checked(proc.returncode, out.decode(), err.decode())


@pytest.fixture
async def server() -> AsyncIterator[EnvTestServer]:
    async with EnvTestServer(crds=[CRDS]) as s:
        yield s


@pytest.fixture
def kubeconfig(server: EnvTestServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
async def kube(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(kubeconfig) as c:
        yield c


def upstream_deployment(*args: str, name: str = "aws-load-balancer-controller") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "aws-load-balancer-controller",
                                         "image": "public.ecr.aws/eks/aws-load-balancer-"
                                                  "controller:v3.5.0",
                                         "args": list(args)}]}}}}


async def create(kube: KubeClient, res: Any, obj: dict[str, Any],
                 namespace: str | None = None) -> None:
    """`obj` as a user would apply it: no resourceVersion or uid of a factory's."""
    for field in ("resourceVersion", "uid"):
        obj["metadata"].pop(field, None)
    await kube.create(res, obj, namespace)


async def served_as_is(kube: KubeClient) -> None:
    await create(kube, INGRESSCLASSES, objects.ingress_class("alb"))
    await create(kube, SERVICES, objects.backend_service("web"), "default")
    await create(kube, INGRESSES, objects.ingress("shop", {"scheme": "internet-facing"}),
                      "default")
    await create(kube, SERVICES, objects.nlb_service("api"), "default")


async def test_a_cluster_served_as_it_is_is_a_go(kubeconfig: Path, kube: KubeClient) -> None:
    await served_as_is(kube)
    # Upstream running with gates aiolbc acts on, in other states: nothing would change.
    await create(kube, DEPLOYMENTS, upstream_deployment(
        "--cluster-name=prod", "--ingress-class=alb",
        "--feature-gates=SubnetDiscoveryByReachability=false,EnableTCPUDPListener=true"),
        "kube-system")
    done = await check(kubeconfig, "--output", "json")
    assert done.code == 0, done.stdout + done.stderr
    body = done.report
    assert body["go"] is True
    assert body["exitCode"] == 0
    assert [f["category"] for f in done.of("Ingress", "default/shop")] == ["served"]
    assert [f["category"] for f in done.of("Service", "default/api")] == ["served"]
    assert done.of("Service", "default/web") == []  # not an NLB: not aiolbc's
    assert "listed" in done.stderr  # progress on stderr, the report alone on stdout


async def test_the_demos_objects_are_a_go(kubeconfig: Path, tmp_path: Path) -> None:
    """manifests/examples, applied with the real kubectl as `aiolbc demo` applies them."""
    home = tmp_path / "kubectl-home"
    home.mkdir()
    await Kubectl(kubeconfig, home)("apply", "-f", str(MANIFESTS / "examples"))
    done = await check(kubeconfig, "-o", "json")
    assert done.code == 0, done.stdout + done.stderr
    served = {(f["kind"], f["object"]) for f in done.report["findings"]
              if f["category"] == "served"}
    kinds = {kind for kind, _ in served}
    assert kinds == {"Ingress", "Service", "TargetGroupBinding"}, served


async def test_a_cluster_as_upstream_leaves_it_names_everything(
        kubeconfig: Path, kube: KubeClient, server: EnvTestServer) -> None:
    await create(kube, INGRESSCLASSPARAMS, objects.class_params(
        "shared", {"scheme": "internal", "minimumLoadBalancerCapacity": {"capacityUnits": 100},
                   "ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-1"}}))
    await create(kube, INGRESSCLASSES, objects.ingress_class("alb", params="shared"))
    await create(kube, SERVICES, objects.backend_service("web"), "default")
    await create(kube, INGRESSES, objects.ingress(
        "shop", {"frontend-nlb-eip-alocations": "eipalloc-1"},
        finalizers=["ingress.k8s.aws/resources"]), "default")
    await create(kube, SERVICES, {**objects.nlb_service(
        "api", {"aws-load-balancer-healthcheck-interval": "ten"})}, "default")
    # A Service key aiolbc does not act on: every one of upstream's is acted on now, so a key
    # upstream does not know either (a typo), which aiolbc names and ignores.
    unacted = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-intervall"
    await create(kube, SERVICES, objects.nlb_service(
        "db", {unacted.removeprefix("service.beta.kubernetes.io/"): "1"},
        finalizers=["service.k8s.aws/resources"]), "default")
    await create(kube, TARGETGROUPBINDINGS, objects.target_group_binding(
        "open", service="web", arn="arn:aws:elasticloadbalancing:us-west-2:123456789012:"
        "targetgroup/t/0123456789abcdef", extra={"networking": {"ingress": [
            {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 80}]}]}}),
        "default")
    # Hostile bytes: a value with a terminal escape and a newline, and a spec no parser takes.
    await create(kube, INGRESSES, objects.ingress(
        "hostile", {"group.order": "1\x1b[2J\nFAKE go"}), "default")
    await create(kube, INGRESSES, objects.ingress(
        "broken", rules=[{"http": {"paths": [{"path": 5, "backend": "web"}]}}]), "default")
    await create(kube, DEPLOYMENTS, upstream_deployment(
        "--cluster-name=prod", "--ingress-class=alb", "--enable-waf-v3", "--sync-period",
        "forever", "--feature-gates=GlobalAcceleratorController=true"), "kube-system")
    server.clear_request_log()
    done = await check(kubeconfig, "-o", "json")
    assert done.code == 1, done.stdout + done.stderr
    # Read-only: list and get, nothing else.
    assert {r.verb for r in server.request_log} == {"list", "get"}
    body = done.report
    assert body["go"] is False
    assert body["exitCode"] == 1

    params = done.of("IngressClassParams", "shared")
    # minimumLoadBalancerCapacity and ipamConfiguration are acted on: nothing to say.
    assert params == []
    shop = {f["category"]: f for f in done.of("Ingress", "default/shop")}
    # Every upstream Ingress key is acted on: a typo upstream does not know either.
    assert "frontend-nlb-eip-alocations" in shop["not-honoured"]["subject"]
    assert shop["adopted"]["message"].startswith("adopted (by upstream's tags)")
    api = done.of("Service", "default/api")
    assert [f["category"] for f in api] == ["not-honoured"]
    assert "healthcheck-interval" in api[0]["message"]
    assert "not served" in api[0]["message"]
    db = {f["category"]: f for f in done.of("Service", "default/db")}
    assert unacted.removeprefix("service.beta.kubernetes.io/") in db["not-honoured"]["subject"]
    assert db["adopted"]["message"].startswith("adopted (by upstream's tags)")
    tgb = done.of("TargetGroupBinding", "default/open")
    assert any(f["subject"] == "spec.networking" and "0.0.0.0/0" in f["message"] for f in tgb)

    flags = {f["subject"]: f for f in done.of("Deployment",
                                               "kube-system/aws-load-balancer-controller")}
    assert flags["--enable-waf-v3"]["category"] == "not-honoured"
    assert "--sync-period" in flags["--sync-period"]["message"]
    assert "GlobalAcceleratorController" in flags[
        "--feature-gates GlobalAcceleratorController=true"]["message"]
    # A gate aiolbc acts on, in upstream's default state unless given: nothing to say.
    assert "--feature-gates SubnetDiscoveryByReachability" not in flags
    # One that matters only for objects reported one by one: a note.
    assert flags["--feature-gates NLBGatewayAPI"]["category"] == "note"
    # One aiolbc acts on in upstream's default state: nothing to say.
    assert "--feature-gates LBCapacityReservation" not in flags

    for name in ("hostile", "broken"):
        assert [f["category"] for f in done.of("Ingress", f"default/{name}")] == [
            "not-honoured"]

    text = await check(kubeconfig)
    assert text.code == 1
    assert "\x1b" not in text.stdout
    assert not any(line.startswith("FAKE") for line in text.stdout.splitlines())
    assert "Ingress default/shop" in text.stdout
    assert "no-go:" in text.stdout.splitlines()[-1]


async def test_exit_codes(kubeconfig: Path, kube: KubeClient, tmp_path: Path) -> None:
    await served_as_is(kube)
    # No upstream Deployment at the default place: a note, still a go.
    done = await check(kubeconfig, "-o", "json")
    assert done.code == 0
    assert [f["category"] for f in done.of("Deployment",
                                           "kube-system/aws-load-balancer-controller")] == ["note"]
    # Named but absent, an unreadable kubeconfig, an unreachable server: could not check.
    assert (await check(kubeconfig, "--upstream-deployment", "lbc/missing")).code == 2
    (tmp_path / "broken").write_text("not: [a kubeconfig")
    broken = await check(tmp_path / "broken")
    assert broken.code == 2
    assert broken.stdout == ""
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    away = await check(pointed_at(kubeconfig, f"http://127.0.0.1:{port}", tmp_path / "away"))
    assert away.code == 2
    assert away.stdout == ""
    assert "127.0.0.1" in away.stderr
