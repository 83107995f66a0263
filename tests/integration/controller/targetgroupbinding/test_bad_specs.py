"""Bad TargetGroupBinding specs: each gets a Warning Event and a `Ready=False` condition with one
clear message, no retry storm, and the other bindings of the same controller still converge."""

from __future__ import annotations

from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from runtime.statusconditions import find_condition
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

CASES = {
    "no-tg": "not found",
    "mismatch": "targetType ip does not match target group inst-tg of type instance",
    "bad-port": "unable to find port 81 on service default/web",
    "no-svc": "service default/later not found",
    "cluster-ip": "service default/cip must be of type NodePort or LoadBalancer for instance "
                  "targets, not ClusterIP",
}


async def test_bad_specs_are_reported_and_isolated(cluster: Cluster,
                                                   aws_proxy: AWSFaultProxy) -> None:
    ip_arn = await cluster.target_group("ip-tg")
    inst_arn = await cluster.target_group("inst-tg", target_type="instance")
    later_arn = await cluster.target_group("later-tg")
    # Its own target group: on the good one, whether the port or the other binding's hold
    # is reported first would depend on which reconcile ran first.
    port_arn = await cluster.target_group("port-tg")
    missing_arn = ip_arn.replace("/ip-tg/", "/gone-tg/")
    await cluster.service("web")
    await cluster.service("cip", type_="ClusterIP")
    await cluster.endpoints("web", ["10.0.3.1", "10.0.3.2"])
    await cluster.binding("good", service="web", arn=ip_arn)
    await cluster.binding("no-tg", service="web", arn=missing_arn)
    await cluster.binding("mismatch", service="web", arn=inst_arn, target_type="ip")
    await cluster.binding("bad-port", service="web", port=81, arn=port_arn)
    await cluster.binding("no-svc", service="later", arn=later_arn)
    await cluster.binding("cluster-ip", service="cip", arn=inst_arn, target_type="instance")
    await cluster.start()

    await eventually(lambda: _registered_are(cluster, ip_arn, {("10.0.3.1", 8080),
                                                               ("10.0.3.2", 8080)}))

    # A target group that does not exist has its own reason, so that it can be told apart from
    # a spec that is wrong in itself (and a managed binding's stale ARN is recognisable).
    def reason_of(name: str) -> str:
        return "TargetGroupNotFound" if name == "no-tg" else "InvalidSpec"

    async def reported(name: str) -> dict[str, Any] | None:
        tgb = await cluster.get(TARGETGROUPBINDINGS, name)
        ready = find_condition(tgb, "Ready")
        warnings = [e for e in await cluster.events(name, of=TARGETGROUPBINDINGS)
                    if e["type"] == "Warning" and e["reason"] == reason_of(name)]
        if ready is None or ready["status"] != "False" or not warnings:
            return None
        return {"condition": ready, "event": warnings[0]}

    for name, message in CASES.items():
        found = await eventually(lambda n=name: reported(n),  # type: ignore[misc]
                                 message=f"{name}: no Warning event and Ready=False")
        assert message in found["condition"]["message"], (name, found["condition"])
        assert found["condition"]["reason"] == reason_of(name)
        assert found["event"]["message"] == found["condition"]["message"]
        assert found["event"]["involvedObject"]["kind"] == "TargetGroupBinding"

    # terminal: no retries while nothing changes
    await cluster.settled()
    before = cluster.reconciles()
    aws_proxy.clear_log()
    await cluster.settled(quiet=0.5)
    assert cluster.reconciles() == before
    assert aws_proxy.log == []
    assert await cluster.aws.registered(inst_arn) == set()
    assert await cluster.aws.registered(port_arn) == set()
    assert await cluster.aws.registered(ip_arn) == {("10.0.3.1", 8080), ("10.0.3.2", 8080)}

    # the missing Service appears: that binding converges on its own
    await cluster.service("later")
    await cluster.endpoints("later", ["10.0.3.9"])
    await eventually(lambda: _registered_are(cluster, later_arn, {("10.0.3.9", 8080)}))

    async def recovered() -> bool:
        ready = find_condition(await cluster.get(TARGETGROUPBINDINGS, "no-svc"), "Ready")
        return ready is not None and ready["status"] == "True"

    await eventually(recovered)
    assert await cluster.stop() == 0


async def _registered_are(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
