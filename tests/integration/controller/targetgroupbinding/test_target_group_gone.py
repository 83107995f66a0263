"""A target group deleted outside the controller: the binding reports it, and deleting the
binding still completes (its targets went with the target group)."""

from __future__ import annotations

from controller.apis import TARGETGROUPBINDINGS
from tests.support.cluster import Cluster
from tests.support.waiting import eventually


async def test_binding_of_a_deleted_target_group_reports_it_and_can_be_deleted(
        cluster: Cluster) -> None:
    arn = await cluster.target_group("gone-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()

    async def registered() -> bool:
        return await cluster.aws.registered(arn) == {("10.0.3.1", 8080)}

    await eventually(registered)
    await cluster.aws.call("elbv2", "DeregisterTargets", TargetGroupArn=arn,
                            Targets=[{"Id": "10.0.3.1", "Port": 8080}])
    await cluster.aws.call("elbv2", "DeleteTargetGroup", TargetGroupArn=arn)
    # A change makes the controller look at AWS again and find the target group missing.
    await cluster.endpoints("web", ["10.0.3.1", "10.0.3.2"])

    async def reported() -> bool:
        tgb = await cluster.get(TARGETGROUPBINDINGS, "web")
        conditions = (tgb.get("status") or {}).get("conditions") or []
        ready: dict[str, object] = next((c for c in conditions if c["type"] == "Ready"), {})
        return ready.get("status") == "False" and "not found" in str(ready.get("message"))

    await eventually(reported)
    # Reported as bad input, never as a bug: no reconcile ended in an unexpected exception.
    assert not cluster.registry.get_sample_value(
        "controller_runtime_reconcile_panics_total", {"controller": "targetGroupBinding"})
    await cluster.client.delete(TARGETGROUPBINDINGS, "web", "default")
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "web"),
                     message="the finalizer of a binding whose target group is gone stuck")
