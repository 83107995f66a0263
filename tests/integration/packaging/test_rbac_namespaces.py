"""With `--watch-namespace` listing its namespaces, the controller needs the shipped ClusterRole's
namespaced grants only in those namespaces (docs/security-model.md), as the `namespaced`
component of the installation (manifests/overlays/namespaced/) grants them: the
ClusterRoleBinding dropped, a RoleBinding of the same ClusterRole in each served namespace, and
the cluster-scoped kinds (Nodes, Namespaces, IngressClasses, IngressClassParams, the CRD)
granted cluster-wide by a ClusterRole of their own. `aiolbc run`'s Manager as the
ServiceAccount deploys and deletes an NLB in a served namespace with no request refused, and
reads nothing in a namespace it does not serve."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from controller.aws import AWSClientPool
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.envtest import RequestRecord
from runtime.objects import Obj
from runtime.resources import NAMESPACES, SERVICES
from tests.integration.packaging.test_rbac import (
    CONTROLLER_USER,
    STEADY_LEASE,
    WORKLOADS,
    controller_config,
    installation,
    network_load_balancer,
    running,
)
from tests.support.aws import AwsInspector
from tests.support.paths import MANIFESTS
from tests.support.rbac import KINDS, NAMESPACE, rbac_documents
from tests.support.waiting import eventually

SERVED = (WORKLOADS, "blog")
CLUSTER_SCOPED = {"nodes", "namespaces", "ingressclasses", "ingressclassparams",
                  "customresourcedefinitions"}
COMPONENT = MANIFESTS / "overlays" / "namespaced"


def _cluster_scoped(role: Obj) -> list[Obj]:
    """The ClusterRole's rules narrowed to the cluster-scoped kinds."""
    rules = []
    for rule in role["rules"]:
        resources = [r for r in rule["resources"] if r.split("/")[0] in CLUSTER_SCOPED]
        if resources:
            rules.append({**rule, "resources": resources})
    return rules


def _component(name: str) -> Obj:
    doc: Obj = yaml.safe_load((COMPONENT / name).read_text())
    return doc


def role_binding(namespace: str) -> Obj:
    """The shipped example RoleBinding, for `namespace`."""
    doc = _component("rolebinding.yaml")
    doc["metadata"]["namespace"] = namespace
    return doc


def namespaced_documents() -> list[Obj]:
    """The installation's RBAC as the `namespaced` component leaves it, with the RoleBinding
    of the served namespace `default` (each other served namespace needs its own)."""
    docs = [d for d in rbac_documents()
            if not (d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "aiolbc")]
    return [*docs, _component("clusterrole.yaml"), _component("clusterrolebinding.yaml"),
            role_binding(WORKLOADS)]


def test_the_components_cluster_role_is_the_cluster_scoped_part_of_the_shipped_one() -> None:
    shipped = next(d for d in rbac_documents()
                   if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "aiolbc")
    assert _component("clusterrole.yaml")["rules"] == _cluster_scoped(shipped)


def _reads_elsewhere(log: list[RequestRecord]) -> list[str]:
    return [f"{r.verb} {r.path}" for r in log if r.user == CONTROLLER_USER.name
            and "/namespaces/" in r.path
            and r.path.split("/namespaces/")[1].split("/")[0] not in (*SERVED, NAMESPACE)]


async def test_role_bindings_in_the_served_namespaces_are_enough(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_inspector: AwsInspector, no_retry_backoff: None, tmp_path: Path) -> None:
    docs = namespaced_documents()
    assert not [d for d in docs if d["kind"] == "ClusterRoleBinding"
                and d["roleRef"]["name"] == "aiolbc"]
    config = controller_config(aws_seed, aws_proxy, *STEADY_LEASE,
                               "--watch-namespace", ",".join(SERVED))
    async with installation(docs, seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                            tmp_path=tmp_path) as (c, controller):
        for ns in ("blog", "elsewhere"):
            await c.client.create(NAMESPACES, {"metadata": {"name": ns}})
        await c.client.create(KINDS["RoleBinding"], role_binding("blog"), "blog")
        await c.client.create(SERVICES, {"metadata": {"name": "web", "namespace": "elsewhere"},
                                         "spec": {"type": "ClusterIP",
                                                  "ports": [{"port": 80}]}}, "elsewhere")
        async with running(c, controller, config) as (manager, task):
            await eventually(lambda: asyncio.sleep(0, manager.leading), message="never led")
            await network_load_balancer(c)
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0
        denials = c.server.denials
        assert denials == [], "\n".join(f"{d.verb} {d.path}: {d.message}" for d in denials)
        assert _reads_elsewhere(c.server.request_log) == []
