"""Rules upstream's controller left on the targets' groups carry its description alone
(`elbv2.k8s.aws/targetGroupBinding=shared`, the same in every cluster). aiolbc, set up from
`aiolbc run` flags on a cluster exactly as upstream leaves it (tests/support/upstream.py), takes
over those that can be this cluster's by rewriting their description in place (never revoking
and granting again, which would drop traffic in between), revokes the stale ones among them,
and leaves alone an upstream rule on a group another cluster shares."""

from __future__ import annotations

from controller.apis import CHECKPOINT_ANNOTATION
from controller.standins import AWSFaultProxy, AwsSeed
from tests.support.cluster import Cluster
from tests.support.objects import annotation
from tests.support.upstream import NODE_RULE_DESCRIPTION, UPSTREAM_CHECKPOINT, UpstreamWorld
from tests.support.waiting import eventually

OURS = "elbv2.k8s.aws/cluster=test-cluster,elbv2.k8s.aws/targetGroupBinding=shared"


async def test_upstream_rules_are_adopted_in_place_where_they_can_be_this_clusters(
        cluster: Cluster, aws_seed: AwsSeed, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    world = UpstreamWorld(c)
    await world.nlb_service("echo", scheme="internal", endpoint_ips=("10.0.6.10",))
    backend = await world.backend_sg()
    nodes = aws_seed.node_security_group_id
    assert world.node_rules == [(8080, 8080)]
    # A port upstream opened for a Service gone since, from this cluster's backend group.
    await c.aws.call("ec2", "AuthorizeSecurityGroupIngress", GroupId=nodes, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 7070, "ToPort": 7070,
         "UserIdGroupPairs": [{"GroupId": backend, "Description": NODE_RULE_DESCRIPTION}]}])
    # A node group this cluster shares with another: upstream's CIDR rule there may be the
    # other cluster's.
    shared = str((await c.aws.call(
        "ec2", "CreateSecurityGroup", GroupName="shared-nodes", Description="shared",
        VpcId=aws_seed.vpc_id, TagSpecifications=[{"ResourceType": "security-group", "Tags": [
            {"Key": "kubernetes.io/cluster/test-cluster", "Value": "shared"},
            {"Key": "kubernetes.io/cluster/staging", "Value": "shared"}]}]))["GroupId"])
    await c.aws.call("ec2", "AuthorizeSecurityGroupIngress", GroupId=shared, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 9000, "ToPort": 9000,
         "IpRanges": [{"CidrIp": "198.51.100.0/24", "Description": NODE_RULE_DESCRIPTION}]}])
    shared_before = await c.aws.group_rules(shared)
    aws_proxy.clear_log()

    await c.start_app()

    async def adopted() -> bool:
        bindings = await c.bindings()
        ours = {r for r in await c.aws.group_rules(nodes)
                if r[4] in (OURS, NODE_RULE_DESCRIPTION)}
        return (bool(bindings) and all(annotation(b, CHECKPOINT_ANNOTATION)
                                       not in ("", UPSTREAM_CHECKPOINT) for b in bindings)
                and ours == {("tcp", 8080, 8080, backend, OURS)})

    await eventually(adopted, timeout=60, message="upstream's node rule was not adopted")
    await c.settled()
    calls = [r.operation for r in aws_proxy.log
             if r.mutating and r.operation.endswith("Ingress")]
    # Adopted in place; only the stale one revoked; nothing granted.
    assert "AuthorizeSecurityGroupIngress" not in calls
    assert calls.count("UpdateSecurityGroupRuleDescriptionsIngress") == 1
    assert calls.count("RevokeSecurityGroupIngress") == 1
    assert await c.aws.group_rules(shared) == shared_before
    assert sorted(await world.node_rules_present()) == [(8080, 8080)]
