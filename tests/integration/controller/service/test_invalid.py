"""Bad annotations: one Warning Event and one condition with a clear message per Service, no AWS
call for it, and the other Services unaffected."""

from __future__ import annotations

import asyncio

from controller.apis import SERVICE_FINALIZER
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
INVALID = {
    "bad-interval": ({"aws-load-balancer-healthcheck-interval": "ten"},
                     f'annotation {P}aws-load-balancer-healthcheck-interval: "ten" is not an '
                     "integer"),
    "bad-type": ({"aws-load-balancer-nlb-target-type": "lambda"},
                 f'annotation {P}aws-load-balancer-nlb-target-type: "lambda" is not one of: '
                 "instance, ip"),
    "bad-scheme": ({"aws-load-balancer-scheme": "public"},
                   f'annotation {P}aws-load-balancer-scheme: "public" is not one of: internal, '
                   "internet-facing"),
    "bad-cert": ({"aws-load-balancer-ssl-cert": "not-an-arn"},
                 f'annotation {P}aws-load-balancer-ssl-cert: "not-an-arn" has "not-an-arn", '
                 "which is not a certificate ARN (ACM or IAM)"),
    "bad-name": ({"aws-load-balancer-name": "x" * 40},
                 f'annotation {P}aws-load-balancer-name: "{"x" * 40}" is longer than 32 '
                 "characters"),
    "bad-capacity": ({"aws-load-balancer-minimum-load-balancer-capacity": "LCU=5"},
                     f"annotation {P}aws-load-balancer-minimum-load-balancer-capacity: "
                     '"LCU=5" has key "LCU"; the only key is CapacityUnits'),
}


async def test_invalid_annotations(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    for name, (notes, _) in INVALID.items():
        await cluster.nlb_service(name, notes, endpoint_ips=())
    await cluster.start()

    for name, (_, message) in INVALID.items():
        async def reported(name: str = name, message: str = message) -> bool:
            svc = await cluster.get(SERVICES, name)
            cond = condition(svc, CONDITION_TYPE)
            events = [e for e in await cluster.events(name) if e["type"] == "Warning"]
            return (cond is not None and cond["status"] == "False"
                    and cond["reason"] == "InvalidAnnotation" and cond["message"] == message
                    and [(e["reason"], e["message"]) for e in events]
                    == [("FailedBuildModel", message)])

        await eventually(reported, message=f"{name}: no clear report")
    await cluster.settled()
    # No AWS call at all, no finalizer: nothing was provisioned for them.
    assert aws_proxy.log == []
    for name in INVALID:
        svc = await cluster.get(SERVICES, name)
        assert SERVICE_FINALIZER not in (svc["metadata"].get("finalizers") or [])

    # A valid Service next to them is deployed as usual.
    await cluster.nlb_service("good", endpoint_ips=())
    await eventually(lambda: _hostname(cluster, "good"), message="good service not deployed")

    # Fixing the annotation is a change: the Service is deployed and the condition turns True.
    await cluster.patch(SERVICES, "bad-interval", {"metadata": {"annotations": {
        P + "aws-load-balancer-healthcheck-interval": "30"}}})
    svc = await eventually(lambda: _hostname(cluster, "bad-interval"),
                           message="fixed service not deployed")
    ready = condition(svc, CONDITION_TYPE)
    assert ready is not None
    assert ready["status"] == "True"
    assert len(await cluster.aws.load_balancers()) == 2
    assert await cluster.stop() == 0


async def _hostname(cluster: Cluster, name: str) -> dict[str, object] | None:
    svc = await cluster.get(SERVICES, name)
    cond = condition(svc, CONDITION_TYPE)
    if hostname(svc) and cond is not None and cond["status"] == "True":
        return svc
    await asyncio.sleep(0)
    return None
