"""The TargetGroupBinding webhooks when AWS fails or is slow, as a cluster calls them (the
shipped configurations applied with kubectl, faults injected at the proxy in front of AWS):
they fail open as documented, and answer before the API server gives up on them."""

from __future__ import annotations

import json
import subprocess

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from runtime.objects import Obj
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.kubectl import Kubectl
from tests.support.waiting import eventually
from tests.support.webhooks import WebhookHarness, configurations

ENDPOINT = "10.0.3.1"


async def apply(kubectl: Kubectl, obj: Obj) -> subprocess.CompletedProcess[str]:
    return await kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


async def test_access_denied_lets_the_create_through_without_its_defaults(
        cluster: Cluster, hooks: WebhookHarness, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web")
    await cluster.service("web")
    await cluster.endpoints("web", [ENDPOINT])
    await cluster.pod_enis([ENDPOINT])
    await cluster.start(on_setup=hooks.setup)
    await hooks.install()
    denied = aws_proxy.inject("AccessDenied", operation="DescribeTargetGroups", status=403,
                              message="User is not authorized to perform: "
                                      "elasticloadbalancing:DescribeTargetGroups")

    result = await apply(hooks.kubectl, objects.target_group_binding(
        "web", service="web", arn=arn, target_type=None, namespace="default"))
    assert result.returncode == 0, result.stderr
    assert ("Warning: TargetGroupBinding default/web: its target group could not be read "
            "(DescribeTargetGroups: AccessDenied: User is not authorized to perform: "
            "elasticloadbalancing:DescribeTargetGroups), so targetType, ipAddressType and vpcID "
            "were not filled in; the controller reads them from the target group when it "
            "reconciles") in result.stderr
    assert "Warning: TargetGroupBinding default/web: not checked against its target group" \
        in result.stderr
    # Stored as written: the documented defaulting skipped.
    spec = (await cluster.get(TARGETGROUPBINDINGS, "web"))["spec"]
    assert spec == {"serviceRef": {"name": "web", "port": 80}, "targetGroupARN": arn}

    # Once AWS answers again, the reconciler reads what the webhook could not, and registers.
    aws_proxy.remove(denied)

    async def registered() -> bool:
        return {ip for ip, _ in await cluster.aws.registered(arn)} == {ENDPOINT}

    await eventually(registered, timeout=30)


async def test_a_slow_aws_is_answered_before_the_api_servers_timeout(
        cluster: Cluster, hooks: WebhookHarness, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web")
    await cluster.service("web")
    await cluster.start(on_setup=hooks.setup)
    # Two seconds for each call: the server answers each webhook within one.
    await hooks.install(configs=configurations(timeoutSeconds=2))
    aws_proxy.inject(operation="DescribeTargetGroups", latency=3.0, count=1)

    result = await apply(hooks.kubectl, objects.target_group_binding(
        "web", service="web", arn=arn, target_type=None, namespace="default"))
    assert result.returncode == 0, result.stderr
    # The webhooks' own answers, not the API server giving up on them (which says nothing).
    for path in ("mutate", "validate"):
        assert (f"Warning: webhook /{path}-elbv2-k8s-aws-v1beta1-targetgroupbinding did not "
                "answer within 1s; admitted without this webhook's checks (failurePolicy "
                "Ignore)") in result.stderr
    # The lookup both waited for still finishes, for the next review.
    async def read() -> bool:
        return bool(aws_proxy.records(operation="DescribeTags"))

    await eventually(read, timeout=10)
