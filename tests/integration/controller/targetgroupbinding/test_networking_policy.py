"""A namespace user cannot widen the security groups every namespace shares through a
TargetGroupBinding's `spec.networking`: the attempt found (every TCP port and UDP from
anywhere, ssh from another team's load balancer group, on the node group) is refused at
reconcile (Warning Event, `Ready=False`) and at admission (the API server's answer to a create,
which `kubectl apply` prints) with the same words, and nothing reaches AWS; the same binding is
served once an administrator grants the namespace
(`--targetgroupbinding-networking-unrestricted-namespaces`). The shop's own load balancer,
whose managed binding admits the backend group, is served and admitted throughout. The whole
controller runs as its ServiceAccount with the shipped RBAC, set up from `aiolbc run` flags;
the webhooks run on a replica of their own with the policy those flags give, and the API
server calls them as a real one does."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from controller import app
from controller.apis import TARGETGROUPBINDINGS
from controller.config import parse_config
from controller.networking.policy import NetworkingPolicy
from runtime.errors import AlreadyExists, ApiError
from runtime.objects import Obj
from runtime.resources import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    NAMESPACES,
    VALIDATINGWEBHOOKCONFIGURATIONS,
)
from tests.support.aws import Rules
from tests.support.cluster import Cluster
from tests.support.objects import condition, target_group_binding
from tests.support.tenancy import ATTACKER, Tenancy, warnings
from tests.support.waiting import eventually
from tests.support.webhooks import CONFIGURATION, NAMESPACE, WebhookHarness, configurations

GRANT = "--targetgroupbinding-networking-unrestricted-namespaces"
OURS = "elbv2.k8s.aws/cluster=test-cluster,elbv2.k8s.aws/targetGroupBinding=shared"
ATTACKER_POD = "10.0.4.66"  # a pod subnet's: its interface is in the node group
VALIDATING = "vtargetgroupbinding.elbv2.k8s.aws"


def _escalation(shop_group: str) -> dict[str, Any]:
    return {"networking": {"ingress": [
        {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]},
        {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}],
         "ports": [{"protocol": "UDP"}]},
        {"from": [{"securityGroup": {"groupID": shop_group}}], "ports": [{"port": 22}]}]}}


def _policy(t: Tenancy, *flags: str) -> NetworkingPolicy:
    """The policy `aiolbc run` with these flags serves at admission."""
    seed = t.admin.seed
    config = parse_config(["--cluster-name", seed.cluster_name, "--aws-region", seed.region,
                           "--aws-vpc-id", seed.vpc_id, *flags])
    policy = app.targetgroupbinding_settings(config, region=seed.region).networking_policy
    assert policy is not None
    return policy


class Webhooks:
    """aiolbc's webhook server on a replica of its own (as administrator), the shipped
    configurations created by the administrator (kubectl sends no token over plain HTTP, which
    this API server speaks; the API server's answers are the same)."""

    def __init__(self, t: Tenancy, directory: Path) -> None:
        self.admin = t.admin.client
        self.replica = Cluster(server=t.server, client=t.admin.client, pool=t.admin.pool,
                               seed=t.admin.seed, aws=t.aws, controllers=(),
                               namespace=t.admin.namespace)
        self.hooks = WebhookHarness(self.replica, None, directory)

    async def serve(self, policy: NetworkingPolicy) -> None:
        if self.replica.task is not None:
            await self.replica.kill()
        await self.replica.start(on_setup=lambda m: self.hooks.setup(m, networking=policy))
        server = self.hooks.servers[-1]
        await eventually(server.ready)
        self.hooks.route_to(server)

    async def install(self) -> None:
        with contextlib.suppress(AlreadyExists):
            await self.admin.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        for doc in configurations():
            resource = (VALIDATINGWEBHOOKCONFIGURATIONS
                        if doc["kind"] == "ValidatingWebhookConfiguration"
                        else MUTATINGWEBHOOKCONFIGURATIONS)
            with contextlib.suppress(AlreadyExists):
                await self.admin.create(resource, doc)
        await eventually(self.hooks.injected)

    async def remove_validation(self) -> None:
        await self.admin.delete(VALIDATINGWEBHOOKCONFIGURATIONS, CONFIGURATION)


async def _denial(attacker: Cluster, obj: Obj) -> str:
    try:
        await attacker.create(TARGETGROUPBINDINGS, obj)
    except ApiError as exc:
        return exc.message
    raise AssertionError(f"{obj['metadata']['name']} was admitted")


async def _shop_group(t: Tenancy) -> str:
    async def found() -> str | None:
        groups = await t.aws.security_groups(("tag:service.k8s.aws/stack", "shop/web"))
        return str(groups[0]["GroupId"]) if groups else None
    return str(await eventually(found))


async def _node_rules(t: Tenancy) -> Rules:
    return await t.aws.group_rules(t.admin.seed.node_security_group_id)


async def _refusal(attacker: Cluster, name: str) -> str:
    async def told() -> str | None:
        obj = await attacker.get(TARGETGROUPBINDINGS, name)
        ready = condition(obj, "Ready") or {}
        events = warnings(await attacker.events(name), "NetworkingNotAllowed")
        if events and ready.get("status") == "False" \
                and ready.get("reason") == "NetworkingNotAllowed":
            assert events[0]["message"] == ready["message"]
            assert not obj["metadata"].get("finalizers"), "refused before anything was written"
            return str(ready["message"])
        return None
    return str(await eventually(told, message=f"{name} was not refused"))


async def test_spec_networking_cannot_open_the_node_group_beyond_the_namespace(
        tenancy: Tenancy, attacker: Cluster, tmp_path: Path) -> None:
    t = tenancy
    webhooks = Webhooks(t, tmp_path)
    await webhooks.serve(_policy(t))
    await webhooks.install()
    # The shop's NLB: its managed binding (backend group on the target port) is admitted and
    # served under the policy.
    await t.admin.nlb_service("web", endpoint_ips=["10.0.1.1"])
    await t.start()
    shop_group = await _shop_group(t)
    backend = str((await eventually(
        lambda: t.aws.backend_security_groups("test-cluster")))[0]["GroupId"])
    await eventually(lambda: _has(t, ("tcp", 8080, 8080, backend, OURS)))
    await t.admin.settled()
    before = await _node_rules(t)
    tg = await attacker.target_group("grab-tg")
    await attacker.backend("grab-pods", endpoint_ips=[ATTACKER_POD])
    t.proxy.clear_log()

    # At reconcile: written while no webhook validates bindings (as during an outage, the
    # webhooks failing open).
    await webhooks.remove_validation()
    await attacker.binding("grab", service="grab-pods", arn=tg, extra=_escalation(shop_group))
    told = await _refusal(attacker, "grab")
    assert told.startswith("spec.networking.ingress[0].from[0]: ipBlock 0.0.0.0/0: ")
    assert GRANT in told
    await t.admin.settled()
    assert await _node_rules(t) == before
    assert t.mutations() == []
    assert await t.aws.registered(tg) == set()

    # At admission: the same words; nothing written.
    await webhooks.install()
    again = target_group_binding("grab-again", service="grab-pods", arn=tg,
                                 extra=_escalation(shop_group))
    assert f'admission webhook "{VALIDATING}" denied the request: {told}' in await _denial(
        attacker, again)
    # Each part alone is refused too.
    for part in _escalation(shop_group)["networking"]["ingress"][1:]:
        alone = target_group_binding("grab-part", service="grab-pods", arn=tg,
                                     extra={"networking": {"ingress": [part]}})
        assert "denied the request: spec.networking.ingress[0]" in await _denial(
            attacker, alone)
    assert await attacker.find(TARGETGROUPBINDINGS, "grab-again") is None
    assert await attacker.find(TARGETGROUPBINDINGS, "grab-part") is None
    await t.admin.settled()
    assert t.mutations() == []
    assert await _node_rules(t) == before
    assert await t.admin.stop() == 0

    # An administrator grants the namespace: the same binding is served, and admitted.
    await webhooks.serve(_policy(t, GRANT, ATTACKER))
    await t.start(GRANT, ATTACKER)
    wanted = {("tcp", 0, 65535, "0.0.0.0/0", OURS), ("udp", 0, 65535, "0.0.0.0/0", OURS),
              ("udp", 0, 65535, "::/0", OURS), ("tcp", 22, 22, shop_group, OURS)}

    async def opened() -> bool:
        return await _node_rules(t) == before | wanted
    await eventually(opened, message="the granted binding's rules were not placed")
    await eventually(lambda: _registered(t, tg, {(ATTACKER_POD, 8080)}))
    other_tg = await attacker.target_group("grab-tg-2")
    again["spec"]["targetGroupARN"] = other_tg
    await attacker.create(TARGETGROUPBINDINGS, again)
    assert await t.admin.stop() == 0
    await webhooks.replica.close()


async def _has(t: Tenancy, rule: tuple[str, int, int, str, str]) -> bool:
    return rule in await _node_rules(t)


async def _registered(t: Tenancy, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await t.aws.registered(arn) == expected
