"""One Ingress from creation to deletion, against the local API server and moto."""

from __future__ import annotations

import asyncio

from controller.apis import CHECKPOINT_ANNOTATION
from controller.ingress.model import BUILDER_VERSION
from controller.standins import AWSFaultProxy
from runtime.resources import INGRESSES, SERVICES
from tests.support.aws import rule_hosts, rule_paths
from tests.support.cluster import Cluster
from tests.support.objects import endpoint_ip, ingress_path
from tests.support.waiting import eventually


async def test_create_edit_delete(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.backend("api")
    await c.ingress("shop", host="shop.example.com",
                    paths=[ingress_path("/", "web"), ingress_path("/api", "api")],
                    annotations={"alb.ingress.kubernetes.io/scheme": "internet-facing"})
    await c.start()

    async def one_lb() -> list[dict[str, object]] | None:
        lbs = await c.aws.load_balancers()
        return lbs if len(lbs) == 1 else None

    lb = (await eventually(one_lb))[0]
    assert lb["Scheme"] == "internet-facing"

    async def hostname() -> str | None:
        ing = await c.find(INGRESSES, "shop")
        assert ing is not None
        items = (ing.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
        return items[0]["hostname"] if items else None

    assert await eventually(hostname) == lb["DNSName"]
    listeners = await c.aws.listeners(str(lb["LoadBalancerArn"]))
    assert set(listeners) == {80}
    rules = await c.aws.rules(listeners[80]["ListenerArn"])
    # Prefix /api sorts before Prefix / (longer first).
    assert [rule_paths(r) for r in rules] == [["/api", "/api/*"], ["/*"]]
    assert all(rule_hosts(r) == ["shop.example.com"] for r in rules)

    tgs = await c.aws.target_groups()
    assert len(tgs) == 2
    by_port = {tg["TargetGroupName"]: tg for tg in tgs}

    async def targets_registered() -> bool:
        found = set()
        for tg in by_port.values():
            found |= await c.aws.registered(tg["TargetGroupArn"])
        return found == {(endpoint_ip("web"), 8080), (endpoint_ip("api"), 8080)}

    await eventually(targets_registered)
    bindings = await c.bindings()
    assert {b["metadata"]["name"] for b in bindings} == set(by_port)
    assert all(b["metadata"]["labels"]["ingress.k8s.aws/stack-name"] == "shop"
               for b in bindings)
    ing = await c.find(INGRESSES, "shop")
    assert ing is not None
    assert ing["metadata"]["finalizers"] == ["ingress.k8s.aws/resources"]
    assert ing["metadata"]["annotations"][CHECKPOINT_ANNOTATION].startswith(f"v{BUILDER_VERSION}:")

    # A change the model does not read costs a reconcile but no AWS call.
    await c.settled()
    aws_proxy.clear_log()
    before = c.reconciles()
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {"example.com/note": "hi"}}})
    await eventually(lambda: asyncio.sleep(0, c.reconciles() > before))
    await c.settled()
    assert [r.operation for r in aws_proxy.log] == []

    # Edit: a new path, a different host, a changed annotation.
    await c.backend("docs")
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        "alb.ingress.kubernetes.io/healthcheck-path": "/healthz"}},
        "spec": {"rules": [{"host": "store.example.com", "http": {"paths": [
            ingress_path("/docs", "docs", path_type="Exact"), ingress_path("/", "web"),
            ingress_path("/api", "api")]}}]}})

    async def edited() -> bool:
        rules = await c.aws.rules(listeners[80]["ListenerArn"])
        return ([rule_paths(r) for r in rules] == [["/docs"], ["/api", "/api/*"], ["/*"]]
                and all(rule_hosts(r) == ["store.example.com"] for r in rules))

    await eventually(edited)

    async def health_paths() -> bool:
        tgs = await c.aws.target_groups()
        return len(tgs) == 3 and all(tg["HealthCheckPath"] == "/healthz" for tg in tgs)

    await eventually(health_paths)

    # A backend Service's own annotation (target-group level) wins and wakes the group.
    await c.client.patch(SERVICES, "web", {"metadata": {"annotations": {
        "alb.ingress.kubernetes.io/healthcheck-interval-seconds": "30"}}}, c.namespace)

    async def web_interval() -> bool:
        tgs = {tg["TargetGroupName"].split("-")[2]: tg for tg in await c.aws.target_groups()}
        return bool(tgs["web"]["HealthCheckIntervalSeconds"] == 30
                    and tgs["api"]["HealthCheckIntervalSeconds"] == 15)

    await eventually(web_interval)

    # Delete: everything goes.
    await c.delete(INGRESSES, "shop")

    async def all_gone() -> bool:
        return (not await c.aws.load_balancers() and not await c.aws.target_groups()
                and not await c.bindings() and await c.find(INGRESSES, "shop") is None)

    await eventually(all_gone, timeout=20)
    assert await c.stop() == 0


async def test_security_group_names_resolve_to_ids(cluster: Cluster) -> None:
    c = cluster
    sg = await c.aws.call("ec2", "CreateSecurityGroup", GroupName="web-lb",
                           Description="web", VpcId=c.seed.vpc_id, TagSpecifications=[{
                               "ResourceType": "security-group",
                               "Tags": [{"Key": "Name", "Value": "web-lb"}]}])
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("sg", paths=[ingress_path("/", "web")], annotations={
        "alb.ingress.kubernetes.io/security-groups": "web-lb",
        "alb.ingress.kubernetes.io/multi-cluster-target-group": "true"})
    await c.start()

    async def lb() -> list[dict[str, object]]:
        return await c.aws.load_balancers()

    (found,) = await eventually(lb)
    assert found["SecurityGroups"] == [sg["GroupId"]]

    async def binding() -> list[dict[str, object]]:
        return await c.bindings()

    (tgb,) = await eventually(binding)
    assert tgb["spec"]["multiClusterTargetGroup"] is True
    assert await c.stop() == 0
