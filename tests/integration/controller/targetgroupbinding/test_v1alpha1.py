"""TargetGroupBindings written at upstream's first version, `elbv2.k8s.aws/v1alpha1`: served by
the CRD with conversion strategy `None`, as upstream's CRD serves it, so the controller (which
reads v1beta1) serves them like any other; read back at v1alpha1 they carry only what that
version has."""

from __future__ import annotations

import dataclasses

from controller.apis import TARGETGROUPBINDINGS
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

V1ALPHA1 = dataclasses.replace(TARGETGROUPBINDINGS, version="v1alpha1")


async def test_a_v1alpha1_binding_is_served_and_read_at_both_versions(cluster: Cluster) -> None:
    arn = await cluster.target_group("alpha-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    binding = objects.target_group_binding("alpha", service="web", arn=arn)
    binding["apiVersion"] = V1ALPHA1.api_version
    made = await cluster.create(V1ALPHA1, binding)
    assert made["apiVersion"] == "elbv2.k8s.aws/v1alpha1"
    await cluster.start()

    async def registered() -> bool:
        return await cluster.aws.registered(arn) == {("10.0.3.1", 8080)}

    await eventually(registered, message="a v1alpha1 binding was not served")

    async def ready() -> bool:
        conditions = (await cluster.get(TARGETGROUPBINDINGS, "alpha")).get("status", {}).get(
            "conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    await eventually(ready)
    beta = await cluster.get(TARGETGROUPBINDINGS, "alpha")
    assert beta["apiVersion"] == "elbv2.k8s.aws/v1beta1"
    assert beta["spec"]["targetGroupARN"] == arn
    assert "elbv2.k8s.aws/resources" in beta["metadata"]["finalizers"]
    # Back at v1alpha1: the same object, less what v1alpha1 lacks (status.conditions).
    alpha = await cluster.get(V1ALPHA1, "alpha")
    assert alpha["apiVersion"] == "elbv2.k8s.aws/v1alpha1"
    assert alpha["spec"] == beta["spec"]
    assert alpha["metadata"]["resourceVersion"] == beta["metadata"]["resourceVersion"]
    assert alpha["status"] == {"observedGeneration": beta["status"]["observedGeneration"]}
    # Deleted at v1alpha1: the finalizer still deregisters.
    await cluster.client.delete(V1ALPHA1, "alpha", "default")
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "alpha"))
    assert await cluster.aws.registered(arn) == set()
