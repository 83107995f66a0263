"""Self-managed webhook TLS with two replicas of aiolbc's webhook server: one certificate for
both, its CA in every shipped webhook, admission working through either replica; and when the
Secret is replaced (deleted here, as an administrator forcing a new CA would), both replicas
move to the new certificate and the configurations to its CA."""

from __future__ import annotations

import asyncio
import json

from prometheus_client import CollectorRegistry

from controller.defaults import DEFAULT_WEBHOOK_SECRET_NAME
from runtime.manager import Manager, ManagerOptions
from runtime.resources import SECRETS
from runtime.webhook import WebhookServer
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.waiting import eventually
from tests.support.webhooks import NAMESPACE, WebhookHarness

DENIED = 'admission webhook "vtargetgroupbinding.elbv2.k8s.aws" denied the request'


async def test_two_replicas_serve_one_certificate_and_follow_a_new_one(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    arn = await cluster.target_group("instances", target_type="instance")
    await cluster.service("web")
    await cluster.start(on_setup=hooks.setup)
    standby = Manager(cluster.client, options=ManagerOptions(), registry=CollectorRegistry())
    hooks.setup(standby)
    standby_task = asyncio.create_task(standby.run())
    try:
        first, second = hooks.servers
        await hooks.install(server=first)

        def serving() -> set[str]:
            return {s.certificate.fingerprint for s in hooks.servers if s.certificate}

        async def one_certificate() -> bool:
            return len(serving()) == 1 and all(s.certificate for s in hooks.servers)

        await eventually(one_certificate)
        bad = json.dumps(objects.target_group_binding("bad", service="web", arn=arn,
                                                      namespace="default"))

        async def refused_through(server: WebhookServer) -> bool:
            hooks.route_to(server)
            result = await hooks.kubectl("apply", "-f", "-", input=bad, check=False)
            return DENIED in result.stderr

        assert await refused_through(first)
        assert await refused_through(second)

        before, ca_before = serving(), await hooks.secret_ca()
        await cluster.client.delete(SECRETS, DEFAULT_WEBHOOK_SECRET_NAME, NAMESPACE)

        async def moved() -> bool:
            ca = await hooks.secret_ca()
            return (bool(ca) and ca != ca_before and await hooks.injected()
                    and await one_certificate() and serving() != before)

        await eventually(moved)
        assert await refused_through(second)
        assert await refused_through(first)
    finally:
        standby.stop()
        await asyncio.wait_for(standby_task, 15)
