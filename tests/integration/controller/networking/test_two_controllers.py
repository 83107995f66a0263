"""Two controllers of one cluster (`--controller-id`), against one API server and one VPC: the
default one serving IngressClass `alb` and `service.k8s.aws/nlb`, the other `internal` and
`service.k8s.aws/nlb-internal`, both with targets behind the seeded node group. Each writes
its rules under its own description, on its own backend group, and once both converged
neither grants nor revokes a single rule, through restarts (a first pass looks at every group
holding a rule of its own) and resyncs of everything."""

from __future__ import annotations

import dataclasses

from controller.apis import ALB_CONTROLLER, CONTROLLER_LABEL
from controller.aws import tag_dict
from controller.networking.ruleowners import description
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.resources import INGRESSES, SERVICES, Resource
from tests.support.cluster import (
    INGRESS,
    SERVICE,
    TARGETGROUPBINDING,
    Cluster,
)
from tests.support.fixtures.cluster import MakeCluster
from tests.support.objects import hostname
from tests.support.waiting import eventually

INTERNAL = ("--controller-id=internal", "--ingress-class=internal",
            "--load-balancer-class=service.k8s.aws/nlb-internal")
RULE_CALLS = ("AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress",
              "UpdateSecurityGroupRuleDescriptionsIngress")


async def _served(cluster: Cluster, resource: Resource, name: str) -> str:
    async def address() -> str | None:
        return hostname(await cluster.find(resource, name))
    return str(await eventually(address, timeout=90))


async def _both_settled(first: Cluster, second: Cluster) -> None:
    for _ in range(2):
        await first.settled()
        await second.settled()


async def test_two_controllers_converge_side_by_side_without_touching_a_rule_again(
        make_cluster: MakeCluster, aws_seed: AwsSeed, aws_proxy: AWSFaultProxy) -> None:
    default = await make_cluster(SERVICE, INGRESS, TARGETGROUPBINDING)
    internal = dataclasses.replace(default)
    await default.ingress_class("alb")
    await default.ingress_class("internal", controller=f"{ALB_CONTROLLER}-internal")
    await default.nlb_service("web-a")
    await default.nlb_service("web-b", load_balancer_class="service.k8s.aws/nlb-internal")
    await default.backend("back-a", {"target-type": "ip"})
    await default.backend("back-b", {"target-type": "ip"})
    await default.ingress("shop-a", backend="back-a", class_name="alb")
    await default.ingress("shop-b", backend="back-b", class_name="internal")

    await default.start_app()
    await internal.start_app(*INTERNAL)
    names = {await _served(default, SERVICES, "web-a"), await _served(default, SERVICES, "web-b"),
             await _served(default, INGRESSES, "shop-a"),
             await _served(default, INGRESSES, "shop-b")}
    assert len(names) == 4
    await _both_settled(default, internal)

    # Each controller's managed bindings carry its id, and its rules on the shared node group
    # name it; the default one's are described as before there were ids.
    # Each cleans up only what carries its own finalizer.
    finalizers = {name: (await default.get(SERVICES, name))["metadata"]["finalizers"]
                  for name in ("web-a", "web-b")}
    assert finalizers == {"web-a": ["service.k8s.aws/resources"],
                          "web-b": ["internal.service.k8s.aws/resources"]}
    bindings = await default.bindings()
    assert {b["metadata"]["labels"].get(CONTROLLER_LABEL) for b in bindings} == {None,
                                                                                  "internal"}
    rules = await default.aws.group_rules(aws_seed.node_security_group_id)
    descriptions = {r[4] for r in rules}
    cluster = aws_seed.cluster_name
    assert description(cluster) in descriptions
    assert description(cluster, "internal") in descriptions
    assert description(cluster) == (f"elbv2.k8s.aws/cluster={cluster},"
                                    "elbv2.k8s.aws/targetGroupBinding=shared")
    # A backend group each, the default one's as before (no controller tag), each the source
    # of its own controller's rules.
    backends = {tag_dict(g.get("Tags")).get(CONTROLLER_LABEL, ""): g["GroupId"]
                for g in await default.aws.backend_security_groups(cluster)}
    assert set(backends) == {"", "internal"}
    assert {(r[3], r[4]) for r in rules if r[3].startswith("sg-")} == {
        (backends[""], description(cluster)),
        (backends["internal"], description(cluster, "internal"))}

    # Converged: restarts (each first pass converges every group holding its rules) and full
    # resyncs make no rule call at all.
    aws_proxy.clear_log()
    for side, flags in ((default, ()), (internal, INTERNAL), (default, ())):
        await side.kill()
        await side.start_app(*flags)
        await _both_settled(default, internal)
    for side in (default, internal):
        assert side.manager is not None
        for informer in side.manager.informers.informers:
            informer.resync()
    await _both_settled(default, internal)
    calls = [r.operation for r in aws_proxy.log if r.operation in RULE_CALLS]
    assert calls == []
    assert await default.aws.group_rules(aws_seed.node_security_group_id) == rules
    for side in (default, internal):
        await side.kill()
