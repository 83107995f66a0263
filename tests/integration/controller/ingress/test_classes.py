"""Which Ingresses are ours (IngressClass, legacy annotation, default class) and
IngressClassParams overriding annotations."""

from __future__ import annotations

from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.waiting import eventually


async def test_class_filtering_and_params(cluster: Cluster) -> None:
    c = cluster
    await c.class_params("enforced", {
        "scheme": "internet-facing", "group": {"name": "platform"},
        "tags": [{"key": "team", "value": "platform"}],
        "loadBalancerAttributes": [{"key": "idle_timeout.timeout_seconds", "value": "120"}]})
    await c.ingress_class("alb", params="enforced")
    await c.ingress_class("nginx", controller="k8s.io/ingress-nginx")
    await c.backend("web")
    await c.ingress("mine", paths=[ingress_path("/", "web")],
                    annotations={"alb.ingress.kubernetes.io/scheme": "internal"})
    await c.ingress("theirs", paths=[ingress_path("/", "web")], class_name="nginx")
    await c.ingress("legacy", paths=[ingress_path("/", "web")], class_name=None,
                    annotations={"kubernetes.io/ingress.class": "alb"})
    await c.ingress("other-legacy", paths=[ingress_path("/", "web")], class_name=None,
                    annotations={"kubernetes.io/ingress.class": "nginx"})
    await c.ingress("classless", paths=[ingress_path("/", "web")], class_name=None)
    await c.start()

    # The legacy annotation naming class alb gets that class's parameters too: it joins the
    # enforced group instead of getting a load balancer of its own.
    await eventually(lambda: _lb_count(c, 1))
    await c.settled()
    lbs = await c.aws.load_balancers()
    assert len(lbs) == 1
    platform = next(lb for lb in lbs if lb["LoadBalancerName"].startswith("k8s-platform-"))
    # IngressClassParams win over the Ingress's own scheme annotation.
    assert platform["Scheme"] == "internet-facing"
    tags = (await c.aws.elbv2("DescribeTags", ResourceArns=[platform["LoadBalancerArn"]])
            )["TagDescriptions"][0]["Tags"]
    assert {"Key": "team", "Value": "platform"} in tags
    assert {"Key": "ingress.k8s.aws/stack", "Value": "platform"} in tags
    attrs = (await c.aws.elbv2("DescribeLoadBalancerAttributes",
                           LoadBalancerArn=platform["LoadBalancerArn"]))["Attributes"]
    assert {"Key": "idle_timeout.timeout_seconds", "Value": "120"} in attrs
    for name in ("mine", "legacy"):
        ing = await c.find(INGRESSES, name)
        assert ing is not None
        assert ing["metadata"]["finalizers"] == ["group.ingress.k8s.aws/platform"]
    for name in ("theirs", "other-legacy", "classless"):
        ing = await c.find(INGRESSES, name)
        assert ing is not None
        assert not ing["metadata"].get("finalizers")
        assert not (ing.get("status") or {}).get("loadBalancer")

    # A default IngressClass of ours takes Ingresses that name no class.
    await c.ingress_class("default-alb", default=True)
    await eventually(lambda: _lb_count(c, 2))

    async def classless_taken() -> bool:
        ing = await c.find(INGRESSES, "classless")
        return ing is not None and ing["metadata"].get("finalizers") == [
            "ingress.k8s.aws/resources"]

    await eventually(classless_taken)
    assert await c.stop() == 0


async def _lb_count(c: Cluster, n: int) -> bool:
    return len(await c.aws.load_balancers()) == n
