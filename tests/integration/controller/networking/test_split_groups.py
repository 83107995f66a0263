"""A managed frontend group whose inbound rules pass EC2's rules-per-group quota (60 by default;
moto refuses the 61st rule as AWS does, `RulesPerSecurityGroupLimitExceeded`), with the whole
controller set up from `aiolbc run` flags.

Before (upstream #4789, #3538): such a group failed halfway through a deploy (upstream), or was
refused before any AWS call (here). Now the rules are split across as many managed groups as
needed, all carried by the load balancer: adding a CIDR moves no rule, shrinking detaches and
deletes the groups no longer needed, and deleting the object leaves no group behind."""

from __future__ import annotations

from typing import Any

from controller.standins import AWSFaultProxy
from runtime.objects import Obj
from runtime.resources import INGRESSES, SERVICES
from tests.support.aws import rules_of, tags_of
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
CLUSTER = "test-cluster"
Rule = tuple[str, int, int, str]


def _cidrs(n: int, *, first: int = 0) -> list[str]:
    return [f"10.{(i + first) // 250}.{(i + first) % 250}.0/24" for i in range(n)]


async def _groups(cluster: Cluster, kind: str, stack: str) -> dict[str, Obj]:
    """The stack's managed groups by resource id."""
    return {tags_of(g)[f"{kind}.k8s.aws/resource"]: g
            for g in await cluster.aws.stack_security_groups(stack, kind=kind)}


def _placement(groups: dict[str, Obj]) -> dict[Rule, str]:
    """Each inbound rule → the resource id of the group holding it."""
    found: dict[Rule, str] = {}
    for rid, group in groups.items():
        for protocol, low, high, source, _ in rules_of(group):
            assert (protocol, low, high, source) not in found, "a rule in two groups"
            found[(protocol, low, high, source)] = rid
    return found


async def _carried(cluster: Cluster, res: Any, name: str) -> set[str] | None:
    lb = await cluster.aws.load_balancer_at(hostname(await cluster.find(res, name)))
    return set(lb["SecurityGroups"]) if lb else None


async def _split(cluster: Cluster, res: Any, name: str, kind: str, *, parts: int,
                 rules: set[Rule]) -> dict[str, Obj]:
    """Waits until the stack has `parts` managed groups holding exactly `rules`, each within
    the quota, all of them (and the backend group) carried by its load balancer."""
    async def done() -> dict[str, Obj] | None:
        backend = {g["GroupId"] for g in await cluster.aws.backend_security_groups(CLUSTER)}
        groups = await _groups(cluster, kind, f"default/{name}")
        if len(groups) != parts or set(_placement(groups)) != rules:
            return None
        if await _carried(cluster, res, name) != {g["GroupId"] for g in groups.values()} | backend:
            return None
        return groups

    groups: dict[str, Obj] = await eventually(done, timeout=60,
                                              message=f"{name}: not split in {parts}")
    assert all(len(rules_of(g)) <= 60 for g in groups.values())
    assert sorted(groups)[0] == "ManagedLBSecurityGroup"
    return groups


def _rules(cidrs: list[str], ports: tuple[int, ...]) -> set[Rule]:
    return {("tcp", port, port, cidr) for port in ports for cidr in cidrs}


async def test_a_service_and_an_ingress_split_across_three_groups_shrink_and_leave_nothing(
        cluster: Cluster) -> None:
    ranges = _cidrs(130)
    await cluster.ingress_class("alb")
    await cluster.backend("web")
    await cluster.nlb_service("wide", loadBalancerSourceRanges=ranges)
    await cluster.ingress("wide-alb", {A + "inbound-cidrs": ",".join(ranges[:65]),
                                       A + "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]'},
                          backend="web")
    await cluster.start_app("--default-target-type", "ip")

    svc_groups = await _split(cluster, SERVICES, "wide", "service", parts=3,
                              rules=_rules(ranges, (80,)))
    await _split(cluster, INGRESSES, "wide-alb", "ingress", parts=3,
                 rules=_rules(ranges[:65], (80, 8080)))
    await cluster.settled()

    # One more CIDR: granted where it falls; no other rule moves to another group.
    before = _placement(svc_groups)
    wider = [*ranges, "10.9.0.0/24"]
    await cluster.patch(SERVICES, "wide", {"spec": {"loadBalancerSourceRanges": wider}})
    after = _placement(await _split(cluster, SERVICES, "wide", "service", parts=3,
                                    rules=_rules(wider, (80,))))
    assert {rule: after[rule] for rule in before} == before
    ids = {g["GroupId"] for g in svc_groups.values()}
    assert {g["GroupId"] for g in (await _groups(cluster, "service", "default/wide")).values()
            } == ids

    # Back to one group each: the others detached, then deleted.
    await cluster.patch(SERVICES, "wide", {"spec": {"loadBalancerSourceRanges": ranges[:2]}})
    await cluster.annotate(INGRESSES, "wide-alb", {A + "inbound-cidrs": ",".join(ranges[:2])})
    (svc_group,) = (await _split(cluster, SERVICES, "wide", "service", parts=1,
                                 rules=_rules(ranges[:2], (80,)))).values()
    await _split(cluster, INGRESSES, "wide-alb", "ingress", parts=1,
                 rules=_rules(ranges[:2], (80, 8080)))
    # The first group is the one kept (upstream's name and resource id).
    assert svc_group["GroupId"] == svc_groups["ManagedLBSecurityGroup"]["GroupId"]
    for group_id in ids - {svc_group["GroupId"]}:
        assert await cluster.aws.security_group(group_id) is None

    # Deleted: nothing left, the backend group released too.
    await cluster.delete(SERVICES, "wide")
    await cluster.delete(INGRESSES, "wide-alb")

    async def nothing_left() -> bool:
        return (not await cluster.aws.load_balancers()
                and not await cluster.aws.stack_security_groups("default/wide", kind="service")
                and not await cluster.aws.stack_security_groups("default/wide-alb")
                and not await cluster.aws.backend_security_groups(CLUSTER))

    await eventually(nothing_left, timeout=60, message="groups left behind")
    assert await cluster.stop() == 0


async def test_the_split_survives_a_restart_and_shrinks_after_it(cluster: Cluster) -> None:
    # A controller that never saw the split finds the parts no longer needed by their names.
    ranges = _cidrs(130)
    await cluster.nlb_service("wide", loadBalancerSourceRanges=ranges)
    await cluster.start_app("--default-target-type", "ip")
    groups = await _split(cluster, SERVICES, "wide", "service", parts=3,
                          rules=_rules(ranges, (80,)))
    await cluster.settled()
    assert await cluster.stop() == 0
    await cluster.patch(SERVICES, "wide", {"spec": {"loadBalancerSourceRanges": ranges[:2]}})
    await cluster.start_app("--default-target-type", "ip")
    await _split(cluster, SERVICES, "wide", "service", parts=1, rules=_rules(ranges[:2], (80,)))
    for rid, group in groups.items():
        if rid != "ManagedLBSecurityGroup":
            assert await cluster.aws.security_group(group["GroupId"]) is None
    assert await cluster.stop() == 0


async def test_past_what_a_load_balancer_may_carry_is_refused_before_any_aws_call(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    await cluster.start_app("--default-target-type", "ip", "--max-rules-per-security-group",
                            "10")
    await cluster.settled()
    aws_proxy.clear_log()
    await cluster.nlb_service("wide", loadBalancerSourceRanges=_cidrs(41))

    async def refused() -> Obj | None:
        found = [e for e in warnings(await cluster.events("wide"), "FailedBuildModel")
                 if "41 inbound IPv4 rules" in e["message"]]
        return found[0] if found else None

    event: Obj = await eventually(refused, timeout=30)
    assert ("more than fit in the 4 managed security groups the load balancer may carry with "
            "10 rules each (--max-rules-per-security-group") in event["message"]
    cond = condition(await cluster.get(SERVICES, "wide"), "aiolbc/LoadBalancerReady") or {}
    assert cond.get("status") == "False"
    assert "41 inbound IPv4 rules" in str(cond.get("message"))
    await cluster.settled()
    assert [r.operation for r in aws_proxy.log] == []
    assert await cluster.stop() == 0
