"""Benchmark of the stack deployer: N stacks deployed at once through one client pool, against
moto behind the fault proxy with server-side throttling on, then a no-op re-deploy of all.

Usage: python tests/bench/deploy.py [--quick] [--stacks N]

Half the stacks are ALBs (2 target groups, HTTP + HTTPS listeners, 2 rules), half NLBs
(2 target groups, 2 TCP listeners). The proxy's server-side buckets are ELBv2's published ones
(Describe 10/s, burst 40; Modify 3/s, burst 20); the pool's client-side throttle is set to the
same numbers unless `--aws-api-throttle` says otherwise. A stack whose deploy fails (AWS
throttling outlasting botocore's retries) is deployed again after a backoff, as the
controller's work queue would. `--quick`: 5 stacks; default 50.

The last stdout line is one JSON object: deploy_wall_s, calls_per_stack (calls of the
successful deploy), requests_per_stack (HTTP requests seen by the proxy, retries included),
throttled_responses, deploy_retries, noop_wall_s, noop_calls_per_stack, noop_mutating_calls
(must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from prometheus_client import CollectorRegistry

from controller.aws import (
    AWSClientPool,
    AWSConfigError,
    AWSError,
    AWSSettings,
    parse_throttle,
)
from controller.deploy import (
    DeployError,
    DeployerSettings,
    DeployResult,
    StackDeployer,
)
from controller.model import (
    FixedResponseAction,
    ForwardAction,
    HealthCheck,
    HostHeaderCondition,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    RedirectAction,
    Stack,
    StackBuilder,
    StackContext,
    SubnetDiscovery,
    TargetGroup,
    WeightedTargetGroup,
    ingress_target_group_name,
    load_balancer_name,
    service_load_balancer_name,
)
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn

CLUSTER = "bench-cluster"
MATCH_SERVER_LIMITS = ("Elastic Load Balancing v2:^RegisterTargets|^DeregisterTargets=4:20,"
                       "Elastic Load Balancing v2:^Describe.*=10:40,"
                       "Elastic Load Balancing v2:^Modify.*=3:20")


def _context(seed: AwsSeed) -> StackContext:
    return StackContext(cluster_name=CLUSTER, region=seed.region, vpc_id=seed.vpc_id)


def _tg(stack_id: str, svc: str, port: int, protocol: str) -> TargetGroup:
    name = ingress_target_group_name(
        CLUSTER, group_id=stack_id, ingress_namespace="bench", ingress_name=stack_id,
        service_namespace="bench", service_name=svc, service_uid=f"uid-{stack_id}-{svc}",
        service_port=port, target_port=port, target_type="ip", protocol=protocol)
    health = HealthCheck(protocol="TCP", interval_seconds=10, timeout_seconds=6) \
        if protocol == "TCP" else HealthCheck(path="/healthz")
    return TargetGroup(name=name, protocol=protocol, port=port,  # type: ignore[arg-type]
                       target_type="ip", health_check=health)


def alb(seed: AwsSeed, i: int) -> Stack:
    stack_id = f"bench/web{i}"
    b = StackBuilder(stack_id, kind="ingress", context=_context(seed))
    api = b.add_target_group(f"{stack_id}-api:80", _tg(stack_id, "api", 80, "HTTP"))
    front = b.add_target_group(f"{stack_id}-front:80", _tg(stack_id, "front", 80, "HTTP"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=load_balancer_name(CLUSTER, "bench", f"web{i}", "internet-facing"),
        type="application", scheme="internet-facing", subnets=SubnetDiscovery(role="elb")))
    b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP", default_actions=[
        RedirectAction(protocol="HTTPS", port="443", status_code="HTTP_301")]))
    https = b.add_listener("443", Listener(
        load_balancer_arn=lb, port=443, protocol="HTTPS", certificates=[seed.certificate_arn],
        default_actions=[FixedResponseAction(status_code="404")]))
    b.add_rule("443:1", ListenerRule(
        listener_arn=https, priority=1,
        conditions=[HostHeaderCondition(values=[f"web{i}.example.com"]),
                    PathPatternCondition(values=["/api/*"])],
        actions=[ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=api)])]))
    b.add_rule("443:2", ListenerRule(
        listener_arn=https, priority=2, conditions=[PathPatternCondition(values=["/*"])],
        actions=[ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=front)])]))
    return b.build()


def nlb(seed: AwsSeed, i: int) -> Stack:
    stack_id = f"bench/svc{i}"
    b = StackBuilder(stack_id, kind="service", context=_context(seed))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=service_load_balancer_name(CLUSTER, "bench", f"svc{i}", "internal", uid=str(i)),
        type="network", scheme="internal", subnets=SubnetDiscovery(role="internal-elb")))
    for port in (53, 443):
        tg = b.add_target_group(f"{stack_id}:{port}", _tg(stack_id, f"svc{i}", port, "TCP"))
        b.add_listener(str(port), Listener(
            load_balancer_arn=lb, port=port, protocol="TCP",
            default_actions=[ForwardAction(target_groups=[WeightedTargetGroup(
                target_group_arn=tg)])]))
    return b.build()


async def _deploy(deployer: StackDeployer, stack: Stack,
                  retries: list[int]) -> DeployResult:
    delay = 0.5
    while True:
        try:
            return await deployer.deploy(stack)
        except (AWSError, DeployError):
            retries.append(1)
            if len(retries) > 1000:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


async def run(n: int, throttle: str) -> dict[str, object]:
    with MotoStandIn() as moto:
        seed = moto.seed(cluster_name=CLUSTER)
        async with AWSFaultProxy(moto.url) as proxy:
            proxy.enable_server_limits()
            settings = AWSSettings(region=seed.region, endpoint_url=proxy.url,
                                   access_key="testing", secret_key="testing",
                                   throttle=parse_throttle(throttle))
            async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
                deployer = StackDeployer(pool, DeployerSettings(cluster_name=CLUSTER))
                stacks = [alb(seed, i) if i % 2 == 0 else nlb(seed, i) for i in range(n)]
                retries: list[int] = []
                start = time.perf_counter()
                first = await asyncio.gather(*(_deploy(deployer, s, retries) for s in stacks))
                deploy_wall = time.perf_counter() - start
                requests = len(proxy.log)
                throttled = sum(1 for r in proxy.log if r.source == "limit")
                proxy.clear_log()
                start = time.perf_counter()
                again = await asyncio.gather(*(_deploy(deployer, s, retries) for s in stacks))
                noop_wall = time.perf_counter() - start
                noop_mutating = sum(1 for r in proxy.log if r.mutating)
                throttled += sum(1 for r in proxy.log if r.source == "limit")
    return {
        "stacks": n,
        "deploy_wall_s": round(deploy_wall, 3),
        "calls_per_stack": round(sum(r.calls for r in first) / n, 2),
        "mutating_calls_per_stack": round(sum(r.mutating_calls for r in first) / n, 2),
        "requests_per_stack": round(requests / n, 2),
        "throttled_responses": throttled,
        "deploy_retries": len(retries),
        "noop_wall_s": round(noop_wall, 3),
        "noop_calls_per_stack": round(sum(r.calls for r in again) / n, 2),
        "noop_mutating_calls": noop_mutating,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 stacks (seconds)")
    parser.add_argument("--stacks", type=int, default=None, help="number of stacks")
    parser.add_argument("--aws-api-throttle", default=MATCH_SERVER_LIMITS,
                        help="client-side throttle (default: the server-side limits)")
    args = parser.parse_args(argv)
    n = args.stacks if args.stacks is not None else (5 if args.quick else 50)
    if n < 1:
        parser.error("--stacks must be at least 1")
    try:
        parse_throttle(args.aws_api_throttle)
    except AWSConfigError as exc:
        parser.error(str(exc))
    result = asyncio.run(run(n, args.aws_api_throttle))
    print(json.dumps(result))
    return 0 if result["noop_mutating_calls"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
