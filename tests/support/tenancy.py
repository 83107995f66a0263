"""A cluster shared by tenants, for the tests of what a namespace user can make the controller
do: the local API server with authorization on, the whole controller (every controller of
`aiolbc run`, set up from flags) running as its ServiceAccount with only the shipped RBAC, and
moto behind the fault proxy (so `mutations()` are the controller's own writes to AWS).

`Tenancy.admin` is the cluster as its administrator sees it, working in the victim team's
namespace `shop`; `tenant(namespace)` is a `Cluster` whose client is a ServiceAccount with
rights in that namespace only (the attacker works in `attacker`). Every `Cluster` here shares
the API server, the controller's AWS pool and the test's own AWS view.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.aws import AWSClientPool
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import NAMESPACES
from tests.support.aws import AwsInspector, rule_paths, rule_target_groups
from tests.support.cluster import Cluster
from tests.support.rbac import KINDS, authorized_server, rbac_documents

VICTIM = "shop"
ATTACKER = "attacker"
VICTIM_LABELS = {"team": "shop"}
_RBAC = "rbac.authorization.k8s.io"
# What a namespace user may do in their own namespace (EndpointSlices stand for the pods they
# run; a real endpoint controller would write them).
TENANT_RULES = [
    {"apiGroups": ["", "networking.k8s.io", "discovery.k8s.io", "elbv2.k8s.aws"],
     "resources": ["services", "endpointslices", "ingresses", "targetgroupbindings", "secrets",
                   "configmaps", "events"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
]
# (priority, paths, forwarded target group ARNs) of one listener rule.
RuleRow = tuple[int, list[str], list[str]]


@dataclass
class Tenancy:
    admin: Cluster  # the administrator, in namespace VICTIM; runs the controller
    controller: KubeClient  # the controller's ServiceAccount
    proxy: AWSFaultProxy
    directory: Path
    _clients: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    @property
    def server(self) -> EnvTestServer:
        return self.admin.server

    @property
    def aws(self) -> AwsInspector:
        return self.admin.aws

    async def start(self, *flags: str) -> Manager:
        """The whole controller, from `aiolbc run` flags (ip targets by default), as its
        ServiceAccount."""
        return await self.admin.start_app("--default-target-type", "ip", *flags,
                                          client=self.controller)

    async def namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        await self.admin.client.create(NAMESPACES, {"metadata": {"name": name,
                                                                 "labels": labels or {}}})

    async def tenant(self, namespace: str, user: str = "mallory") -> Cluster:
        """The cluster as a ServiceAccount that may work in `namespace` only."""
        admin = self.admin.client
        await admin.create(KINDS["Role"], {"metadata": {"name": f"tenant-{user}"},
                                           "rules": TENANT_RULES}, namespace)
        await admin.create(KINDS["RoleBinding"], {
            "metadata": {"name": f"tenant-{user}"},
            "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": f"tenant-{user}"},
            "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": namespace}]},
            namespace)
        token = self.server.add_service_account(namespace, user)
        kubeconfig = self.server.write_kubeconfig(self.directory / f"{namespace}-{user}",
                                                  token=token)
        client = await self._clients.enter_async_context(
            await KubeClient.from_kubeconfig(kubeconfig))
        return Cluster(server=self.server, client=client, pool=self.admin.pool,
                       seed=self.admin.seed, aws=self.aws, namespace=namespace)

    def mutations(self) -> list[tuple[str, dict[str, Any]]]:
        """The controller's mutating AWS calls since the proxy log was last cleared."""
        return [(r.operation, r.params) for r in self.proxy.log if r.mutating]

    async def rules(self, lb_arn: str, port: int = 80) -> list[RuleRow]:
        """The rules of the load balancer's listener on `port`, but the default one."""
        listener = (await self.aws.listeners(lb_arn)).get(port)
        if listener is None:
            return []
        return [(int(r["Priority"]), rule_paths(r), rule_target_groups(r))
                for r in await self.aws.rules(str(listener["ListenerArn"]))]

    async def close(self) -> None:
        await self.admin.close()
        await self._clients.aclose()


@contextlib.asynccontextmanager
async def tenancy(*, seed: AwsSeed, pool: AWSClientPool, aws: AwsInspector,
                  proxy: AWSFaultProxy, directory: Path) -> AsyncIterator[Tenancy]:
    """The shared cluster with the namespaces `shop` (labelled `team: shop`) and `attacker`."""
    async with authorized_server(rbac_documents(), directory) as (server, admin, controller):
        world = Tenancy(admin=Cluster(server=server, client=admin, pool=pool, seed=seed,
                                      aws=aws, namespace=VICTIM),
                        controller=controller, proxy=proxy, directory=directory)
        try:
            await world.namespace(VICTIM, VICTIM_LABELS)
            await world.namespace(ATTACKER)
            yield world
        finally:
            await world.close()


def warnings(events: list[Obj], reason: str | None = None) -> list[Obj]:
    """The Warning Events among `events` (with that reason, if given)."""
    return [e for e in events if e.get("type") == "Warning"
            and (reason is None or e.get("reason") == reason)]
