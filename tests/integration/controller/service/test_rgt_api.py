"""The EnableRGTAPI feature gate through the whole controller: a Service deleted while the
controller was down is cleaned up after the restart by the one-time scan for what the cluster's
stacks own, which with the gate on asks the Resource Groups Tagging API (GetResources by the
cluster tag and resource type, every page) instead of listing the region and its tags, as
upstream's tagging manager does; counted in the AWS call metrics like every call."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from controller.deploy import CLUSTER_TAG
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import hostname
from tests.support.waiting import eventually

RGT = "Resource Groups Tagging API"
# More target groups tagged for the cluster than one page of GetResources holds (moto: 50), none
# of them a stack's: the scan reads every page, and leaves them alone.
OTHERS = 55


def _listings(proxy: AWSFaultProxy, operation: str) -> int:
    """Calls of `operation` that named no resource: listings of the region."""
    return sum(1 for r in proxy.records(operation=operation) if not r.params)


@pytest.mark.parametrize("rgt", [True, False], ids=["gate-on", "gate-off"])
async def test_a_service_deleted_while_down_is_found_by_the_gated_scan(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_registry: CollectorRegistry,
        rgt: bool) -> None:
    gate = f"--feature-gates=EnableRGTAPI={'true' if rgt else 'false'}"
    for n in range(OTHERS):
        await cluster.target_group(f"other-{n}", tags={CLUSTER_TAG: cluster.seed.cluster_name})
    await cluster.start_app(gate)
    await cluster.nlb_service("web")

    async def deployed() -> str | None:
        return hostname(await cluster.get(SERVICES, "web"))

    dns = await eventually(deployed, message="the NLB was not deployed")
    lb = await cluster.aws.load_balancer_at(dns)
    assert lb is not None
    await cluster.kill()  # what it knew it owns is gone with it
    await cluster.client.delete(SERVICES, "web", cluster.namespace)  # its finalizer keeps it
    aws_proxy.clear_log()
    await cluster.start_app(gate)
    await eventually(lambda: cluster.gone(SERVICES, "web"), message="the Service stayed")
    assert await cluster.aws.load_balancer_at(dns) is None
    assert len(await cluster.aws.target_groups()) == OTHERS  # only the stack's went

    pages = aws_registry.get_sample_value("aws_api_calls_total", {
        "service": RGT, "operation": "GetResources", "status_code": "200", "error_code": ""})
    if rgt:
        # Two resource types x two cluster tag keys, the target groups' current key in pages.
        assert len(aws_proxy.records(operation="GetResources")) >= 5
        assert pages is not None
        assert pages >= 5
        assert _listings(aws_proxy, "DescribeLoadBalancers") == 0
        assert _listings(aws_proxy, "DescribeTargetGroups") == 0
    else:
        assert aws_proxy.records(operation="GetResources") == []
        assert not pages
        assert _listings(aws_proxy, "DescribeLoadBalancers") >= 1
        assert _listings(aws_proxy, "DescribeTargetGroups") >= 1
