"""The rules bindings ask for on their targets' security groups, as moto shows them: found through
the pods' and instances' network interfaces, aggregated over every binding, narrowed and
revoked as bindings change and go, and never a rule the controller does not own touched.

Rules the controller owns carry upstream's label `elbv2.k8s.aws/targetGroupBinding=shared`
(pkg/networking/networking_manager.go) and the cluster's, `elbv2.k8s.aws/cluster=<cluster>`. The
user bindings' CIDR sources need the administrator's grant to their namespace."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from controller.networking.settings import BackendSettings
from controller.standins import AwsSeed, create_pod_eni
from runtime.resources import SERVICES
from tests.support.aws import Rules
from tests.support.cluster import Cluster
from tests.support.objects import condition, service_port
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually

OURS = "elbv2.k8s.aws/cluster=test-cluster,elbv2.k8s.aws/targetGroupBinding=shared"
GRANTED = frozenset({"default"})  # --targetgroupbinding-networking-unrestricted-namespaces


async def _backend(c: Cluster) -> str:
    groups = await eventually(lambda: c.aws.backend_security_groups("test-cluster"))
    return str(groups[0]["GroupId"])


async def _foreign_rules(c: Cluster, seed: AwsSeed) -> Rules:
    """Rules someone else keeps on the node group: a CIDR one, and one from a group with
    another description."""
    other = (await c.aws.call("ec2", "CreateSecurityGroup", GroupName="bastion",
                              Description="bastion", VpcId=seed.vpc_id))["GroupId"]
    await c.aws.call("ec2", "AuthorizeSecurityGroupIngress",
                     GroupId=seed.node_security_group_id, IpPermissions=[
                         {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
                          "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "ssh"}]},
                         {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080,
                          "UserIdGroupPairs": [{"GroupId": other, "Description": "bastion"}]}])
    return {("tcp", 22, 22, "10.0.0.0/8", "ssh"), ("tcp", 8080, 8080, other, "bastion")}


async def _node_rules_are(c: Cluster, seed: AwsSeed, expected: Rules) -> None:
    async def same() -> bool:
        return await c.aws.group_rules(seed.node_security_group_id) == expected

    try:
        await eventually(same, timeout=30)
    except AssertionError:
        assert await c.aws.group_rules(seed.node_security_group_id) == expected


async def test_pod_rules_follow_ports_aggregate_and_go_with_the_last_binding(
        cluster: Cluster, aws_seed: AwsSeed) -> None:
    c = cluster
    foreign = await _foreign_rules(c, aws_seed)
    await c.nlb_service("web")  # ip targets, port 80 -> 8080, one pod with an ENI
    await c.start()
    backend = await _backend(c)
    await _node_rules_are(c, aws_seed, foreign | {("tcp", 8080, 8080, backend, OURS)})

    # A second Service on 9090: rules from one group merge into one range (upstream's
    # restricted rules).
    await c.nlb_service("api", ports=[service_port(80, 9090, "http")])
    await c.endpoints("api", ["10.0.2.77"], ports=(("http", 9090),))
    await _node_rules_are(c, aws_seed, foreign | {("tcp", 8080, 9090, backend, OURS)})

    # The first one's target port changes: the range narrows to what is still asked for.
    await c.patch(SERVICES, "web", {"spec": {"ports": [service_port(80, 9000, "http")]}})
    await c.endpoints("web", ["10.0.2.78"], ports=(("http", 9000),))
    await _node_rules_are(c, aws_seed, foreign | {("tcp", 9000, 9090, backend, OURS)})

    await c.delete(SERVICES, "api")
    await _node_rules_are(c, aws_seed, foreign | {("tcp", 9000, 9000, backend, OURS)})

    # The last binding goes: our rule goes, the backend group goes, the others' rules stay.
    await c.delete(SERVICES, "web")
    await _node_rules_are(c, aws_seed, foreign)
    await eventually(lambda: c.gone(SERVICES, "web"), timeout=30)
    assert await c.aws.backend_security_groups("test-cluster") == []


async def test_instances_user_bindings_and_interfaces_in_several_groups(
        cluster: Cluster, aws_seed: AwsSeed, moto_standin: Any) -> None:
    c = cluster
    # Instance targets: rules on the group of each instance's primary interface.
    for i, instance in enumerate(aws_seed.instance_ids):
        await c.node(f"node-{i}", instance)
    await c.nlb_service("web", target_type="instance",
                        ports=[{**service_port(80, 8080, "http"), "nodePort": 30080}])
    # A binding of the user's asks for rules from a CIDR; its named port is the targets' port
    # of that name (8080).
    await c.service("app")
    await c.endpoints("app", ["10.0.3.40"])
    app_tg = await c.target_group("app-tg", target_type="ip")
    await c.binding("app", service="app", arn=app_tg, extra={"networking": {"ingress": [{
        "from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}],
        "ports": [{"protocol": "TCP", "port": "http"}, {"protocol": "UDP", "port": 53}]}]}})
    # A pod interface in two cluster-tagged groups: which one gets the rules?
    pod_groups = []
    for name in ("pods-a", "pods-b"):
        pod_groups.append((await c.aws.call(
            "ec2", "CreateSecurityGroup", GroupName=name, Description=name,
            VpcId=aws_seed.vpc_id, TagSpecifications=[{"ResourceType": "security-group", "Tags": [
                {"Key": "kubernetes.io/cluster/test-cluster", "Value": "owned"},
                {"Key": "team", "Value": name}]}]))["GroupId"])
    create_pod_eni(moto_standin.url, aws_seed, "10.0.3.50", security_group_ids=pod_groups)
    await c.service("two")
    await c.endpoints("two", ["10.0.3.50"])
    two_tg = await c.target_group("two-tg", target_type="ip")
    await c.binding("two", service="two", arn=two_tg, extra={"networking": {"ingress": [{
        "from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}], "ports": [{"port": 8080}]}]}})
    await c.start(targetgroupbinding=tgb_settings(
        aws_seed, networking_unrestricted_namespaces=GRANTED))
    backend = await _backend(c)
    await _node_rules_are(c, aws_seed, {("tcp", 30080, 30080, backend, OURS),
                                        ("tcp", 8080, 8080, "192.0.2.0/24", OURS),
                                        ("udp", 53, 53, "192.0.2.0/24", OURS)})

    async def reported() -> dict[str, Any] | None:
        cond = condition(await c.find(TARGETGROUPBINDINGS, "two"), "Ready")
        return cond if cond is not None and cond["status"] == "False" else None

    cond = await eventually(reported)
    assert cond["reason"] == "AmbiguousSecurityGroup"
    assert "expected exactly one tagged kubernetes.io/cluster/test-cluster" in cond["message"]
    assert await c.aws.registered(two_tg) == set()  # no targets without their rules
    for group in pod_groups:
        assert await c.aws.group_rules(group) == set()

    # --service-target-eni-security-group-tags tells them apart.
    await c.kill()
    settings = tgb_settings(aws_seed, networking_unrestricted_namespaces=GRANTED)
    assert settings.networking is not None
    tagged = BackendSettings(eni_security_group_tags={"team": "pods-b"})
    await c.start(targetgroupbinding=replace(settings, networking=replace(
        settings.networking, backend=tagged)))

    async def chosen() -> bool:
        return await c.aws.group_rules(pod_groups[1]) == {
            ("tcp", 8080, 8080, "198.51.100.0/24", OURS)}
    await eventually(chosen)
    assert await c.aws.group_rules(pod_groups[0]) == set()
    await eventually(lambda: _registered(c, two_tg, {("10.0.3.50", 8080)}))

    # The user binding goes: its rules go, the others stay.
    await c.delete(TARGETGROUPBINDINGS, "app")
    await _node_rules_are(c, aws_seed, {("tcp", 30080, 30080, backend, OURS)})


async def _registered(c: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await c.aws.registered(arn) == expected
