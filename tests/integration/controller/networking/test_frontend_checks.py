"""Regressions of the managed frontend group, with the controller set up from `aiolbc run` flags:

- `inbound-cidrs: ::/0` on an IPv4 ALB built an ALB whose group admitted no one, silently. Now
  the CIDRs that admit no one are named in a Warning Event on the Ingress (and the load
  balancer is said to admit no one when nothing else is left); a Service's source ranges of
  the wrong family are refused, as upstream does, naming every one of them.

A managed group needing more inbound rules than EC2's quota: `test_split_groups.py`."""

from __future__ import annotations

from runtime.objects import Obj
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


async def _warned(cluster: Cluster, name: str, reason: str, words: str) -> Obj:
    async def event() -> Obj | None:
        found = [e for e in warnings(await cluster.events(name), reason)
                 if words in e["message"]]
        return found[0] if found else None

    found: Obj = await eventually(event, timeout=30, message=f"{name}: no {reason}: {words}")
    return found


async def test_inbound_cidrs_of_the_wrong_family_are_named(cluster: Cluster) -> None:
    await cluster.ingress_class("alb")
    await cluster.backend("web")
    await cluster.ingress("some", {A + "inbound-cidrs": "10.0.0.0/8,2001:db8::/32"},
                          backend="web")
    await cluster.ingress("none", {A + "inbound-cidrs": "::/0"}, backend="web")
    await cluster.nlb_service("nlb", loadBalancerSourceRanges=["192.0.2.0/24", "::/0"])
    await cluster.start_app("--default-target-type", "ip")

    await _warned(cluster, "some", "InboundCIDRsAdmitNoOne",
                  "2001:db8::/32 admits no one: IPv6 sources never reach an ipv4 load balancer")
    event = await _warned(cluster, "none", "InboundCIDRsAdmitNoOne", "::/0 admits no one")
    assert event["message"].endswith(
        "no other source is given, so the load balancer admits no one")
    await _warned(cluster, "nlb", "FailedBuildModel",
                  "spec.loadBalancerSourceRanges: ::/0 admits no one")
    cond = condition(await cluster.get(SERVICES, "nlb"), "aiolbc/LoadBalancerReady") or {}
    assert cond.get("status") == "False"
    assert "::/0 admits no one" in str(cond.get("message"))

    # The ALBs are built all the same: one admits 10.0.0.0/8, the other no one.
    async def deployed() -> bool:
        return len(await cluster.aws.load_balancers()) == 2

    await eventually(deployed, timeout=30)
    await cluster.settled()
    rules = {}
    for name in ("some", "none"):
        (group,) = await cluster.aws.stack_security_groups(f"default/{name}")
        rules[name] = {r.get("CidrIp") or r.get("CidrIpv6")
                       for p in group.get("IpPermissions") or []
                       for r in [*(p.get("IpRanges") or []), *(p.get("Ipv6Ranges") or [])]}
    assert rules == {"some": {"10.0.0.0/8"}, "none": set()}
    assert await cluster.stop() == 0
