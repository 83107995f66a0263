"""Stale rules on the targets' groups go without waiting for a sync period: the rules each group
should hold come from every binding's desired state in the caches, so after a restart with
checkpoints on (and no binding verified yet: the paced lane is frozen) a rule no binding could
need is revoked within seconds, and a Service deleted then takes its port with it at once; a
binding that cannot be reconciled holds back only the rules it could need itself, never
another team's narrowing or another group's revocation. The controller is set up from
`aiolbc run` flags."""

from __future__ import annotations

from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AwsSeed, create_pod_eni
from runtime.resources import NAMESPACES, SERVICES
from tests.support.aws import Rules
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.waiting import eventually

OURS = "elbv2.k8s.aws/cluster=test-cluster,elbv2.k8s.aws/targetGroupBinding=shared"
GRANT = ("--targetgroupbinding-networking-unrestricted-namespaces", "*")
# Verifications of unchanged objects may start, never finish: what happens after a restart
# happens without them.
FROZEN_LOW_LANE = ("--checkpoint-verify-qps", "0.001", "--checkpoint-verify-burst", "1",
                   "--checkpoint-max-wait", "100h", "--checkpoint-verify-aws-qps", "0.001",
                   "--checkpoint-verify-aws-burst", "1")
SECONDS = 10.0  # "within seconds"


async def _ours(c: Cluster, group: str) -> Rules:
    return {r for r in await c.aws.group_rules(group) if r[4] == OURS}


async def _ours_become(c: Cluster, group: str, expected: Rules, *, timeout: float = 30.0,
                       message: str = "") -> None:
    async def same() -> bool:
        return await _ours(c, group) == expected
    try:
        await eventually(same, timeout=timeout, message=message)
    except AssertionError:
        assert await _ours(c, group) == expected, message


async def _backend(c: Cluster) -> str:
    groups = await eventually(lambda: c.aws.backend_security_groups("test-cluster"))
    return str(groups[0]["GroupId"])


async def _checkpointed(c: Cluster) -> bool:
    bindings = await c.bindings()
    return bool(bindings) and all(
        (b["metadata"].get("annotations") or {}).get("elbv2.k8s.aws/checkpoint")
        for b in bindings)


async def _grant(c: Cluster, group: str, *rules: dict[str, Any]) -> None:
    await c.aws.call("ec2", "AuthorizeSecurityGroupIngress", GroupId=group,
                     IpPermissions=list(rules))


async def test_stale_rules_go_within_seconds_of_a_restart_with_checkpoints_on(
        cluster: Cluster, aws_seed: AwsSeed) -> None:
    c = cluster
    nodes = aws_seed.node_security_group_id
    await c.nlb_service("web")  # ip targets on 8080
    await c.nlb_service("api", ports=[service_port(80, 9090, "http")])
    await c.endpoints("api", ["10.0.2.77"], ports=(("http", 9090),))
    await c.start_app()
    backend = await _backend(c)
    await _ours_become(c, nodes, {("tcp", 8080, 9090, backend, OURS)})
    await eventually(lambda: _checkpointed(c), timeout=60)
    await c.settled()
    await c.kill()

    # While no controller runs: a port nothing asks for joins the backend group's range (as a
    # Service deleted then leaves it), and a rule of ours that no binding could need appears.
    await c.aws.call("ec2", "RevokeSecurityGroupIngress", GroupId=nodes, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 9090,
         "UserIdGroupPairs": [{"GroupId": backend}]}])
    await _grant(c, nodes,
                 {"IpProtocol": "tcp", "FromPort": 7070, "ToPort": 9090,
                  "UserIdGroupPairs": [{"GroupId": backend, "Description": OURS}]},
                 {"IpProtocol": "tcp", "FromPort": 7000, "ToPort": 7000,
                  "IpRanges": [{"CidrIp": "203.0.113.0/24", "Description": OURS}]})
    before = {b["metadata"]["name"]: b["metadata"]["annotations"]["elbv2.k8s.aws/checkpoint"]
              for b in await c.bindings()}

    # Restarted, checkpoints on, nothing verified: the range narrows to what the bindings
    # could need, the stray rule goes.
    await c.start_app(*FROZEN_LOW_LANE)
    await _ours_become(c, nodes, {("tcp", 8080, 9090, backend, OURS)}, timeout=SECONDS,
                       message="stale rules were not revoked within seconds of the restart")
    assert {b["metadata"]["name"]: b["metadata"]["annotations"]["elbv2.k8s.aws/checkpoint"]
            for b in await c.bindings()} == before  # no binding reconciled for it

    # A Service deleted now, every other binding still unverified: its port goes at once.
    await c.delete(SERVICES, "api")
    await _ours_become(c, nodes, {("tcp", 8080, 8080, backend, OURS)}, timeout=SECONDS,
                       message="the deleted Service's port stayed open")
    await eventually(lambda: c.gone(SERVICES, "api"), timeout=30)


async def test_a_failing_binding_holds_back_only_the_rules_it_could_need(
        cluster: Cluster, aws_seed: AwsSeed, moto_standin: Any) -> None:
    c = cluster
    nodes = aws_seed.node_security_group_id
    team_b = Cluster(server=c.server, client=c.client, pool=c.pool, seed=c.seed, aws=c.aws,
                     namespace="team-b")
    await c.client.create(NAMESPACES, {"metadata": {"name": "team-b"}})
    solo_group = str((await c.aws.call(
        "ec2", "CreateSecurityGroup", GroupName="solo-pods", Description="solo",
        VpcId=aws_seed.vpc_id))["GroupId"])
    create_pod_eni(moto_standin.url, aws_seed, "10.0.4.30", security_group_ids=[solo_group])

    async def user_binding(where: Cluster, name: str, ip: str, cidr: str) -> None:
        await where.service(f"{name}-svc")
        await where.endpoints(f"{name}-svc", [ip])
        arn = await where.target_group(f"{name}-tg")
        await where.binding(name, service=f"{name}-svc", arn=arn, extra={"networking": {
            "ingress": [{"from": [{"ipBlock": {"cidr": cidr}}], "ports": [{"port": 8080}]}]}})

    await user_binding(c, "a", "10.0.4.10", "10.1.0.0/16")
    await user_binding(c, "solo", "10.0.4.30", "192.0.2.0/24")
    await user_binding(team_b, "b", "10.0.4.20", "172.16.0.0/12")
    await c.start_app(*GRANT)
    await _ours_become(c, nodes, {("tcp", 8080, 8080, "10.1.0.0/16", OURS),
                                  ("tcp", 8080, 8080, "172.16.0.0/12", OURS)})
    await _ours_become(c, solo_group, {("tcp", 8080, 8080, "192.0.2.0/24", OURS)})

    # Team B's binding can no longer be reconciled: its pod has no network interface.
    await team_b.endpoints("b-svc", ["10.0.99.9"])

    async def failing() -> bool:
        ready = condition(await team_b.get(TARGETGROUPBINDINGS, "b"), "Ready") or {}
        return ready.get("reason") == "FailedNetworking"
    await eventually(failing, timeout=30)

    # Meanwhile the other team narrows its CIDR, and a binding on another group goes.
    await c.patch(TARGETGROUPBINDINGS, "a", {"spec": {"networking": {"ingress": [{
        "from": [{"ipBlock": {"cidr": "10.1.2.0/24"}}], "ports": [{"port": 8080}]}]}}})
    await c.delete(TARGETGROUPBINDINGS, "solo")
    await _ours_become(c, nodes, {("tcp", 8080, 8080, "10.1.2.0/24", OURS),
                                  ("tcp", 8080, 8080, "172.16.0.0/12", OURS)},
                       timeout=SECONDS, message="the narrowed CIDR stayed open")
    await _ours_become(c, solo_group, set(), timeout=SECONDS,
                       message="the deleted binding's rule stayed on its group")
    # Held back, not lost: team B's rule is back in use once its pod is.
    await team_b.endpoints("b-svc", ["10.0.4.21"])
    await eventually(lambda: _ready(team_b, "b"), timeout=30)
    assert ("tcp", 8080, 8080, "172.16.0.0/12", OURS) in await _ours(c, nodes)


async def _ready(c: Cluster, name: str) -> bool:
    ready = condition(await c.get(TARGETGROUPBINDINGS, name), "Ready") or {}
    return ready.get("status") == "True"
