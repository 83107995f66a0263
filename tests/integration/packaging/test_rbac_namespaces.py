"""With `--watch-namespace` listing its namespaces, the controller needs the shipped ClusterRole's
namespaced grants only in those namespaces (docs/security-model.md): the ClusterRoleBinding
replaced by a RoleBinding of the same ClusterRole in each served namespace, and the cluster-scoped
kinds (Nodes, Namespaces, IngressClasses, IngressClassParams, the CRD) granted cluster-wide by a
ClusterRole of their own. `aiolbc run`'s Manager as the ServiceAccount deploys and deletes an
NLB in a served namespace with no request refused, and reads nothing in a namespace it does not
serve."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

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
from tests.support.rbac import KINDS, NAMESPACE, SERVICE_ACCOUNT, rbac_documents
from tests.support.waiting import eventually

SERVED = (WORKLOADS, "blog")
CLUSTER_SCOPED = {"nodes", "namespaces", "ingressclasses", "ingressclassparams",
                  "customresourcedefinitions"}
_RBAC = "rbac.authorization.k8s.io"


def _split(role: Obj) -> tuple[Obj, Obj]:
    """The ClusterRole's rules as (its namespaced grants, its cluster-scoped grants)."""
    namespaced, cluster = copy.deepcopy(role), copy.deepcopy(role)
    namespaced["rules"], cluster["rules"] = [], []
    for rule in role["rules"]:
        for target, keep in ((namespaced, False), (cluster, True)):
            resources = [r for r in rule["resources"]
                         if (r.split("/")[0] in CLUSTER_SCOPED) is keep]
            if resources:
                target["rules"].append({**rule, "resources": resources})
    cluster["metadata"] = {**role["metadata"], "name": "aiolbc-cluster-scoped"}
    return namespaced, cluster


SUBJECT = [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]


def role_binding(namespace: str) -> Obj:
    """The shipped ClusterRole, granted in `namespace` alone."""
    return {"apiVersion": f"{_RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "aiolbc", "namespace": namespace}, "subjects": SUBJECT,
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": "aiolbc"}}


def namespaced_documents() -> list[Obj]:
    """The installation's RBAC with the ClusterRoleBinding of `aiolbc` replaced (the served
    namespace `default`'s RoleBinding; each other served namespace needs its own)."""
    docs: list[Obj] = []
    for doc in rbac_documents():
        if doc["kind"] == "ClusterRoleBinding" and doc["metadata"]["name"] == "aiolbc":
            continue
        if doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == "aiolbc":
            namespaced, cluster = _split(doc)
            docs += [namespaced, cluster, {
                "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "aiolbc-cluster-scoped"}, "subjects": SUBJECT,
                "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole",
                            "name": "aiolbc-cluster-scoped"}}]
            docs.append(role_binding(WORKLOADS))
            continue
        docs.append(doc)
    return docs


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
