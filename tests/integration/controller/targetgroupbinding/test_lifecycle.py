"""TargetGroupBinding lifecycle against the local API server and moto behind the fault proxy."""

from __future__ import annotations

from controller.apis import CHECKPOINT_ANNOTATION, TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from tests.support.cluster import Cluster
from tests.support.waiting import eventually


async def test_ip_targets_follow_endpoints(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2"], not_ready=("10.0.1.2",))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()

    async def targets_are(expected: set[tuple[str, int]]) -> bool:
        return await cluster.aws.registered(arn) == expected

    await eventually(lambda: targets_are({("10.0.1.1", 8080)}))
    # scale up, then the first pod goes unready
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"])
    await eventually(lambda: targets_are({("10.0.1.1", 8080), ("10.0.1.2", 8080),
                                          ("10.0.1.3", 8080)}))
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"],
                            not_ready=("10.0.1.1",))
    await eventually(lambda: targets_are({("10.0.1.2", 8080), ("10.0.1.3", 8080)}))
    # scale down (pods gone), then back
    await cluster.endpoints("web", ["10.0.1.2"])
    await eventually(lambda: targets_are({("10.0.1.2", 8080)}))
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"],
                            not_ready=("10.0.1.1",))
    await eventually(lambda: targets_are({("10.0.1.2", 8080), ("10.0.1.3", 8080)}))

    # The checkpoint is written after the targets are registered: read once settled.
    await cluster.settled()
    tgb = await cluster.get(TARGETGROUPBINDINGS, "web")
    assert "elbv2.k8s.aws/resources" in tgb["metadata"]["finalizers"]
    assert tgb["metadata"]["annotations"][CHECKPOINT_ANNOTATION].count("/") == 1
    ready = next(c for c in tgb["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert tgb["status"]["observedGeneration"] == tgb["metadata"]["generation"]

    # Changes that leave the targets alone cost no AWS call (checkpoint match).
    aws_proxy.clear_log()
    before = cluster.reconciles()
    # A label is outside what the binding's reconcile reads: no reconcile at all.
    await cluster.client.patch(TARGETGROUPBINDINGS, "web", {"metadata": {"labels": {"x": "y"}}},
                               "default")
    await cluster.settled()
    assert cluster.reconciles() == before
    # An endpoint that is not ready (its pod has no target-health gate) changes nothing the
    # binding reads: no reconcile, no AWS call.
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.9"],
                            not_ready=("10.0.1.1", "10.0.1.9"))
    await cluster.settled()
    assert cluster.reconciles() == before
    assert [r.operation for r in aws_proxy.log] == []
    # When it becomes ready, that is a change: one reconcile registers it.
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.9"],
                            not_ready=("10.0.1.1",))
    await eventually(lambda: targets_are({("10.0.1.2", 8080), ("10.0.1.3", 8080),
                                          ("10.0.1.9", 8080)}))
    await cluster.settled()
    assert cluster.reconciles() == before + 1

    # deletion deregisters everything and drops the finalizer
    await cluster.client.delete(TARGETGROUPBINDINGS, "web", "default")
    await eventually(lambda: targets_are(set()))

    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "web"))
    assert await cluster.stop() == 0


async def test_instance_targets_follow_fit_nodes(cluster: Cluster,
                                                 aws_proxy: AWSFaultProxy) -> None:
    """instance mode, found by targetGroupName: fit nodes matching the selector, at the
    Service's nodePort; NotReady, unschedulable and unselected nodes are left out."""
    await cluster.target_group("nodes-tg", target_type="instance")
    svc = await cluster.service("web")
    node_port = int(svc["spec"]["ports"][0]["nodePort"])
    first, second = cluster.seed.instance_ids[:2]
    await cluster.node("n1", first, labels={"pool": "web"})
    await cluster.node("n2", second, labels={"pool": "web"})
    await cluster.node("n3", "i-0000000000000003", ready=False, labels={"pool": "web"})
    await cluster.node("n4", "i-0000000000000004", unschedulable=True, labels={"pool": "web"})
    await cluster.node("n5", "i-0000000000000005", labels={"pool": "batch"})
    await cluster.binding("nodes", service="web", tg_name="nodes-tg", target_type="instance",
                          extra={"nodeSelector": {"matchLabels": {"pool": "web"}}})
    await cluster.start()
    tgb = await cluster.get(TARGETGROUPBINDINGS, "nodes")
    arn = str((await cluster.aws.call("elbv2", "DescribeTargetGroups", Names=["nodes-tg"]))
              ["TargetGroups"][0]["TargetGroupArn"])

    async def targets_are(expected: set[tuple[str, int]]) -> bool:
        return await cluster.aws.registered(arn) == expected

    await eventually(lambda: targets_are({(first, node_port), (second, node_port)}))
    # a node going NotReady is deregistered, one becoming Ready is registered
    await cluster.set_node_ready("n2", False)
    await cluster.set_node_ready("n3", True)
    await eventually(lambda: targets_are({(first, node_port), ("i-0000000000000003",
                                                               node_port)}))
    await cluster.settled()
    registers = aws_proxy.records(operation="RegisterTargets")
    assert all(t.endswith(f":{node_port}") for r in registers for t in r.params["Targets"])
    tgb = await cluster.get(TARGETGROUPBINDINGS, "nodes")
    ready = next(c for c in tgb["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["message"]) == ("True", "2 target(s) registered")

    await cluster.client.delete(TARGETGROUPBINDINGS, "nodes", "default")
    await eventually(lambda: targets_are(set()))
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "nodes"))
    assert await cluster.stop() == 0


async def test_targets_move_in_chunks_of_200(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("big-tg")
    await cluster.service("big")
    ips = [f"10.4.{i // 250}.{i % 250 + 1}" for i in range(450)]
    await cluster.endpoints("big", ips)
    await cluster.binding("big", service="big", arn=arn)
    await cluster.start()

    async def count_is(n: int) -> bool:
        return len(await cluster.aws.registered(arn)) == n

    await eventually(lambda: count_is(450))
    await cluster.endpoints("big", ips[:20])
    await eventually(lambda: count_is(20))
    sizes = {op: [len(r.params["Targets"]) for r in aws_proxy.records(operation=op)]
             for op in ("RegisterTargets", "DeregisterTargets")}
    assert sizes == {"RegisterTargets": [200, 200, 50], "DeregisterTargets": [200, 200, 30]}
    assert await cluster.stop() == 0
