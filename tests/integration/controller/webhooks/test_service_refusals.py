"""The Service webhook (opt-in, never denying) tells `kubectl apply` what the reconciler will
refuse a Service with: the same text as its Warning Event and condition."""

from __future__ import annotations

import json

from controller.annotations import quote
from controller.service.status import CONDITION_TYPE
from runtime.objects import Obj
from runtime.resources import SERVICES
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.waiting import eventually
from tests.support.webhooks import WebhookHarness, configurations

P = "service.beta.kubernetes.io/"
DNS = [service_port(53, 5353, "dns", protocol="UDP"), service_port(53, 5353, "dns-tcp")]


def _with_service_hook(docs: list[Obj]) -> list[Obj]:
    """The shipped configurations, the Service mutator also called on updates."""
    mutating = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")
    [hook] = [h for h in mutating["webhooks"] if h["name"] == "mservice.elbv2.k8s.aws"]
    hook["rules"][0]["operations"] = ["CREATE", "UPDATE"]
    return docs


async def test_a_service_the_reconciler_refuses_is_told_so_at_apply(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    said = ("service default/dns port 53: TCP and UDP on one port need a TCP_UDP listener; set "
            f'annotation {P}aws-load-balancer-enable-tcp-udp-listener: "true" (or start the '
            "controller with --feature-gates=EnableTCPUDPListener=true)")
    await cluster.start(on_setup=lambda m: hooks.setup(m, service_mutator=True))
    await hooks.install(configs=_with_service_hook(configurations()))
    svc = objects.nlb_service("dns", namespace="default", ports=DNS)
    result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(svc), check=False)
    assert result.returncode == 0, result.stderr  # admitted: the reconciler refuses
    assert f"Warning: {said}" in result.stderr

    async def refused() -> bool:
        cond = condition(await cluster.get(SERVICES, "dns"), CONDITION_TYPE)
        return cond is not None and cond["message"] == said

    await eventually(refused, message="the reconciler did not say the same")
    # Fixed, nothing more is said.
    fixed = objects.nlb_service("dns", {"aws-load-balancer-enable-tcp-udp-listener": "true"},
                                namespace="default", ports=DNS)
    result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(fixed), check=False)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr


async def test_static_addresses_upstream_refuses_are_told_at_apply(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    said = (f"service default/eips: annotation {P}aws-load-balancer-eip-allocations: EIP "
            "allocations can be set for an internet-facing load balancer only (its scheme is "
            "internal)")
    await cluster.start(on_setup=lambda m: hooks.setup(m, service_mutator=True))
    await hooks.install(configs=_with_service_hook(configurations()))
    svc = objects.nlb_service("eips", {"aws-load-balancer-scheme": "internal",
                                       "aws-load-balancer-eip-allocations": "eipalloc-1"},
                              namespace="default")
    result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(svc), check=False)
    assert result.returncode == 0, result.stderr
    assert f"Warning: {said}" in result.stderr

    async def refused() -> bool:
        cond = condition(await cluster.get(SERVICES, "eips"), CONDITION_TYPE)
        return cond is not None and cond["message"] == said

    await eventually(refused, message="the reconciler did not say the same")


async def test_a_bad_weighted_action_is_told_at_apply_as_the_reconciler_says(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    raw = json.dumps({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "canary", "servicePort": 80}, {"serviceName": "b", "servicePort": 80}]}})
    said = (f"annotation {P}actions.TCP-80: {quote(raw)} is invalid (forwardConfig: weight "
            "must be set when routing to multiple target groups)")
    await cluster.start(on_setup=lambda m: hooks.setup(m, service_mutator=True))
    await hooks.install(configs=_with_service_hook(configurations()))
    svc = objects.nlb_service("web", {"actions.TCP-80": raw}, namespace="default")
    result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(svc), check=False)
    assert result.returncode == 0, result.stderr
    assert f"Warning: {said}" in result.stderr

    async def refused() -> bool:
        cond = condition(await cluster.get(SERVICES, "web"), CONDITION_TYPE)
        return cond is not None and cond["message"] == said

    await eventually(refused, message="the reconciler did not say the same")
