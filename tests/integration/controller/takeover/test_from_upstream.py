"""Switching controllers without a dropped packet: `aiolbc run` started on a cluster exactly as
upstream's controller leaves it (tests/support/upstream.py) adopts everything as it is, and a
stack aiolbc made is adopted by the same rules after a restart with changed name inputs.

"Without a dropped packet" is read from AWS: no call that creates, deletes or deregisters
anything (the fault proxy's log of every call the controller made), the same load balancer
ARNs and DNS names, and every target registered at every moment (sampled throughout)."""

from __future__ import annotations

from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION
from controller.standins import AWSFaultProxy
from runtime.resources import CONFIGMAPS, INGRESSES, SERVICES
from tests.support.aws import Targets, TargetWatch
from tests.support.cluster import Cluster
from tests.support.objects import annotation
from tests.support.process import ControllerRun
from tests.support.upstream import (
    SERVICE_FINALIZER,
    UPSTREAM_CHECKPOINT,
    Backend,
    UpstreamStack,
    UpstreamWorld,
)
from tests.support.waiting import eventually

# Calls that would cut or move traffic: none may happen on a takeover.
_BREAKING = ("Create", "Delete", "Deregister", "SetSecurityGroups", "SetSubnets",
             "SetIpAddressType")


def _breaking(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating and r.operation.startswith(_BREAKING)]


async def _load_balancers(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {lb["LoadBalancerArn"]: lb for lb in await cluster.aws.load_balancers()}


async def _baseline(cluster: Cluster, stacks: list[UpstreamStack]) -> dict[str, Targets]:
    found = {}
    for stack in stacks:
        for arn in stack.target_groups.values():
            found[arn] = await cluster.aws.registered(arn)
            assert found[arn] == stack.targets[arn]  # as upstream registered them
    return found


async def _bindings(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {b["metadata"]["name"]: b for b in await cluster.bindings()}


async def _converged(cluster: Cluster, ingresses: list[str], services: list[str],
                     before: dict[str, str] | None = None) -> bool:
    """Our checkpoint on every object (new, if `before` says what it was), and every binding
    reconciled by us (its checkpoint no longer upstream's)."""
    before = before or {}
    for res, names in ((INGRESSES, ingresses), (SERVICES, services)):
        for name in names:
            value = await cluster.checkpoint(res, name)
            if not value or value == before.get(name):
                return False
    bindings = await cluster.bindings()
    return bool(bindings) and all(
        annotation(b, CHECKPOINT_ANNOTATION) not in ("", UPSTREAM_CHECKPOINT) for b in bindings)


async def _run_until_converged(cluster: Cluster, ingresses: list[str], services: list[str],
                               before: dict[str, str] | None = None,
                               flags: tuple[str, ...] = ()) -> ControllerRun:
    run = await cluster.run(*flags, through_proxy=True)
    try:
        await eventually(lambda: _converged(cluster, ingresses, services, before),
                         timeout=60, message="aiolbc did not converge")
        await run.settled()
    except BaseException:
        await run.kill()
        raise
    return run


async def test_aiolbc_adopts_what_upstream_left_without_touching_the_traffic(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    world = UpstreamWorld(cluster)
    await world.add_nodes(2)
    # An explicit group with a name only upstream's rule accepts; one target group named by an
    # older upstream release (names are not identity), ip and instance targets.
    group = await world.ingress_group([
        Backend("shop", "/shop", target_type="ip", endpoint_ips=("10.0.5.10", "10.0.5.11")),
        Backend("blog", "/blog", target_type="instance", tg_name="k8s-default-blogsvc-0a1b2c3d4e"),
    ], group="team.-web")
    # An NLB created internet-facing whose Service no longer says so: upstream kept the
    # scheme. Its multi-cluster target group holds another cluster's target too.
    echo = await world.nlb_service("echo", scheme="internet-facing", multi_cluster=True,
                                   endpoint_ips=("10.0.6.10",),
                                   other_cluster_targets=("10.9.9.9",))
    # A NodePort Service upstream serves by annotation; with the ServiceTypeLoadBalancerOnly
    # gate on, aiolbc does not, and leaves it be.
    legacy = await world.nlb_service("legacy", scheme="internal", type_="NodePort",
                                     endpoint_ips=("10.0.7.10",))
    stacks = [group, echo, legacy]
    baseline = await _baseline(cluster, stacks)
    lbs_before = await _load_balancers(cluster)
    tgs_before = {tg["TargetGroupArn"] for tg in await cluster.aws.target_groups()}
    bindings_before = await _bindings(cluster)
    assert len(bindings_before) == 4

    aws_proxy.clear_log()
    async with TargetWatch(cluster.aws, baseline) as watch:
        run = await _run_until_converged(
            cluster, ["shop", "blog"], ["echo"],
            flags=("--feature-gates=ServiceTypeLoadBalancerOnly=true",))
        try:
            await eventually(lambda: _event(cluster, "legacy", "NotServed"),
                             message="no Warning on the Service left alone")
        finally:
            await run.kill()

    assert _breaking(aws_proxy) == []
    # Upstream's frontend, backend and node rules already are what aiolbc wants: adopted as
    # they are, no group created (above) and no rule changed.
    assert [r.operation for r in aws_proxy.log
            if r.operation.endswith("SecurityGroupIngress")] == []
    assert watch.samples > 0
    assert watch.dropped == []
    assert await cluster.aws.registered(echo.target_groups["default/echo:80"]) == {
        ("10.0.6.10", 8080), ("10.9.9.9", 8080)}
    # The same load balancers, DNS names and security groups; the same target groups.
    lbs_after = await _load_balancers(cluster)
    assert set(lbs_after) == set(lbs_before)
    for stack in stacks:
        lb = lbs_after[stack.lb_arn]
        assert lb["DNSName"] == stack.dns_name
        assert sorted(lb.get("SecurityGroups") or []) == sorted(stack.security_groups)
    assert lbs_after[echo.lb_arn]["Scheme"] == "internet-facing"
    assert {tg["TargetGroupArn"] for tg in await cluster.aws.target_groups()} == tgs_before
    assert sorted(await world.node_rules_present()) == sorted(world.node_rules)
    # The same bindings (never recreated), with what upstream wrote besides our fields kept.
    bindings_after = await _bindings(cluster)
    assert {n: b["metadata"]["uid"] for n, b in bindings_after.items()} == {
        n: b["metadata"]["uid"] for n, b in bindings_before.items()}
    for name, binding in bindings_after.items():
        assert binding["spec"]["networking"] == bindings_before[name]["spec"]["networking"]
        assert binding["spec"]["vpcID"] == cluster.seed.vpc_id
    tracking = await cluster.get(CONFIGMAPS, f"aws-lbc-targets-{echo.bindings['default/echo:80']}")
    assert tracking["data"]["targets"] == "10.0.6.10:8080"
    # Status kept; the Service aiolbc does not serve keeps upstream's finalizer.
    for res, name, stack in ((INGRESSES, "shop", group), (SERVICES, "echo", echo)):
        obj = await cluster.get(res, name)
        assert obj["status"]["loadBalancer"]["ingress"] == [{"hostname": stack.dns_name}]
    assert SERVICE_FINALIZER in (await cluster.get(SERVICES, "legacy"))["metadata"]["finalizers"]
    assert annotation(await cluster.get(SERVICES, "legacy"), CHECKPOINT_ANNOTATION) == ""


async def test_a_stack_aiolbc_made_is_adopted_after_a_restart_with_changed_name_inputs(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    await cluster.nlb_service("web", endpoint_ips=("10.0.8.10",))
    await cluster.backend("app-svc", endpoint_ips=("10.0.8.20",))
    await cluster.ingress("app", {"target-type": "ip", "scheme": "internet-facing"},
                          backend="app-svc")
    first = await _run_until_converged(cluster, ["app"], ["web"])
    await first.kill()
    lbs_before = await _load_balancers(cluster)
    tgs = await cluster.aws.target_groups()
    baseline = {tg["TargetGroupArn"]: await cluster.aws.registered(tg["TargetGroupArn"])
                for tg in tgs}
    assert all(baseline.values())
    bindings_before = {n: b["metadata"]["uid"] for n, b in (await _bindings(cluster)).items()}
    checkpoints = {"app": await cluster.checkpoint(INGRESSES, "app"),
                   "web": await cluster.checkpoint(SERVICES, "web")}

    # Inputs of every name: both load balancers get a name annotation, the NLB's target group
    # a health check interval (upstream hashes it into the target group's name).
    await cluster.annotate(SERVICES, "web", {
        "service.beta.kubernetes.io/aws-load-balancer-name": "renamed-web",
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval": "20"})
    await cluster.annotate(INGRESSES, "app", {
        "alb.ingress.kubernetes.io/load-balancer-name": "renamed-app"})
    aws_proxy.clear_log()
    async with TargetWatch(cluster.aws, baseline) as watch:
        second = await _run_until_converged(cluster, ["app"], ["web"], before=checkpoints)
        await second.kill()

    assert _breaking(aws_proxy) == []
    assert watch.dropped == []
    assert [r.operation for r in aws_proxy.log if r.mutating] == ["ModifyTargetGroup"]
    lbs_after = await _load_balancers(cluster)
    assert {a: lb["DNSName"] for a, lb in lbs_after.items()} == {
        a: lb["DNSName"] for a, lb in lbs_before.items()}
    assert sorted(lb["LoadBalancerName"] for lb in lbs_after.values()) == sorted(
        lb["LoadBalancerName"] for lb in lbs_before.values())  # never renamed
    after = {tg["TargetGroupArn"]: tg for tg in await cluster.aws.target_groups()}
    assert set(after) == set(baseline)
    assert sorted(tg["HealthCheckIntervalSeconds"] for tg in after.values()) == [15, 20]
    assert {n: b["metadata"]["uid"] for n, b in (await _bindings(cluster)).items()} == \
        bindings_before


async def _event(cluster: Cluster, name: str, reason: str) -> bool:
    return any(e.get("reason") == reason and e.get("type") == "Warning"
               for e in await cluster.events(name, of=SERVICES))

