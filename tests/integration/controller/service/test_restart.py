"""Checkpointed restarts: unchanged Services are verified in the paced LOW lane and make no
mutating AWS call; a Service changed while the controller was down goes first, at NORMAL."""

from __future__ import annotations

from controller.apis import CHECKPOINT_ANNOTATION
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import hostname
from tests.support.settings import service_settings
from tests.support.waiting import eventually

UNCHANGED = [f"svc{i}" for i in range(6)]
QPS, BURST, WORKERS = 4.0, 2, 3
LAG = 0.5
HC_INTERVAL = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"


async def test_restart_verifies_unchanged_services_at_pace(cluster: Cluster,
                                                           aws_proxy: AWSFaultProxy) -> None:
    settings = service_settings(cluster.seed, verify_qps=QPS, verify_burst=BURST,
                                verify_max_wait=60.0, max_concurrent_reconciles=WORKERS)
    names = [*UNCHANGED, "changed"]
    for i, name in enumerate(names):
        await cluster.nlb_service(name)
        await cluster.endpoints(name, [f"10.0.3.{i + 1}"])
    await cluster.start(service=settings)

    async def all_deployed() -> bool:
        for name in names:
            svc = await cluster.get(SERVICES, name)
            if CHECKPOINT_ANNOTATION not in (svc["metadata"].get("annotations") or {}):
                return False
        return True

    await eventually(all_deployed, timeout=30, message="services not deployed")
    await cluster.settled()
    lb_arns = {}
    for name in names:
        lb = await cluster.aws.load_balancer_at(hostname(await cluster.get(SERVICES, name)))
        assert lb is not None
        lb_arns[lb["LoadBalancerArn"]] = name
    changed_tgs = {tg["TargetGroupArn"] for tg in await cluster.aws.target_groups()
                   if tg["LoadBalancerArns"] and lb_arns[tg["LoadBalancerArns"][0]] == "changed"}
    assert len(changed_tgs) == 1
    assert await cluster.stop() == 0

    # While the controller is down, one Service changes.
    await cluster.patch(SERVICES, "changed", {"metadata": {"annotations": {HC_INTERVAL: "20"}}})
    aws_proxy.clear_log()
    await cluster.start(service=settings)

    def first_verification() -> dict[str, float]:
        """Service → when its reconcile first looked at its load balancer's listeners."""
        seen: dict[str, float] = {}
        for record in aws_proxy.records(operation="DescribeListeners"):
            name = lb_arns.get(record.params.get("LoadBalancerArn", ""))
            if name is not None:
                seen.setdefault(name, record.time)
        return seen

    async def everything_checked() -> bool:
        return len(first_verification()) == len(names)

    await eventually(everything_checked, timeout=20, message="not every service was verified")
    await cluster.settled()

    # The change was applied, and it is the only mutation.
    [changed_tg] = changed_tgs
    assert await cluster.aws.target_groups()
    assert all(
        tg["HealthCheckIntervalSeconds"] == (20 if tg["TargetGroupArn"] == changed_tg else 10)
        for tg in await cluster.aws.target_groups())
    mutations = [r for r in aws_proxy.log if r.mutating]
    assert [r.operation for r in mutations] == ["ModifyTargetGroup"]
    assert mutations[0].params["TargetGroupArn"] == changed_tg

    # The changed Service went first; the others followed at the configured pace.
    started = first_verification()
    order = sorted(started, key=started.__getitem__)
    assert order.index("changed") < WORKERS
    unchanged = sorted(started[name] for name in UNCHANGED)
    assert mutations[0].time < unchanged[-1]
    for i in range(len(unchanged)):
        for j in range(i + 1, len(unchanged)):
            # Items j-i+1 started within unchanged[j]-unchanged[i] seconds. The times are of each
            # reconcile's first call, which follows its release by the lane by a delay the
            # machine's load decides: LAG of time (and one item) of slack. Unpaced, all six
            # would start within a tenth of a second, which this still refuses.
            allowed = BURST + QPS * (unchanged[j] - unchanged[i] + LAG) + 1
            assert j - i + 1 <= allowed, (i, j, unchanged)
    assert unchanged[-1] - unchanged[0] >= (len(UNCHANGED) - BURST - 1) / QPS
    assert await cluster.stop() == 0
