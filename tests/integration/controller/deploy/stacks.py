"""Stacks the deploy tests converge, and read-only inspection of what moto holds."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from controller.model import (
    MANAGED_SECURITY_GROUP_ID,
    FixedResponseAction,
    ForwardAction,
    HealthCheck,
    HealthCheckMatcher,
    HostHeaderCondition,
    IngressRule,
    Listener,
    ListenerRule,
    LoadBalancer,
    LoadBalancerTarget,
    NetworkingIngress,
    NetworkingPeer,
    NetworkingPort,
    PathPatternCondition,
    RedirectAction,
    SecurityGroup,
    ServiceReference,
    SharedBackendSecurityGroup,
    Stack,
    StackBuilder,
    StackContext,
    Stickiness,
    SubnetDiscovery,
    TargetGroup,
    TargetGroupBindingNetworking,
    TargetGroupBindingResource,
    WeightedTargetGroup,
    ingress_security_group_name,
    ingress_target_group_name,
    load_balancer_name,
    service_load_balancer_name,
    service_security_group_name,
)
from controller.model.naming import frontend_nlb_target_group_name
from controller.standins import AwsSeed

CLUSTER = "test-cluster"


def context(seed: AwsSeed) -> StackContext:
    return StackContext(cluster_name=CLUSTER, region=seed.region, vpc_id=seed.vpc_id)


def _tg_name(stack_id: str, svc: str, port: int, *, protocol: str = "HTTP",
             target_type: str = "ip") -> str:
    namespace, _, ingress = stack_id.partition("/")
    return ingress_target_group_name(
        CLUSTER, group_id=stack_id, ingress_namespace=namespace, ingress_name=ingress,
        service_namespace="default", service_name=svc, service_uid=f"uid-{svc}",
        service_port=port, target_port=port, target_type=target_type, protocol=protocol)


def alb_stack(seed: AwsSeed, name: str = "web", *, swap: bool = False,
              scheme: str = "internet-facing", health_path: str = "/healthz",
              idle_timeout: str = "120", with_second_tg: bool = True) -> Stack:
    stack_id = f"default/{name}"
    b = StackBuilder(stack_id, kind="ingress", context=context(seed))
    api = b.add_target_group(f"{stack_id}-api:80", TargetGroup(
        name=_tg_name(stack_id, "api", 80), protocol="HTTP", port=80, target_type="ip",
        health_check=HealthCheck(path=health_path, matcher=HealthCheckMatcher(http_code="200")),
        attributes={"deregistration_delay.timeout_seconds": "30"}, tags={"app": name}))
    front = api
    if with_second_tg:
        front = b.add_target_group(f"{stack_id}-front:80", TargetGroup(
            name=_tg_name(stack_id, "front", 80, target_type="instance"), protocol="HTTP",
            port=80, target_type="instance"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=load_balancer_name(CLUSTER, "default", name, scheme), type="application",
        scheme=scheme,  # type: ignore[arg-type]
        subnets=SubnetDiscovery(role="elb" if scheme == "internet-facing" else "internal-elb"),
        attributes={"idle_timeout.timeout_seconds": idle_timeout}, tags={"team": "a"}))
    b.add_listener("80", Listener(
        load_balancer_arn=lb, port=80, protocol="HTTP",
        default_actions=[RedirectAction(protocol="HTTPS", port="443", status_code="HTTP_301")]))
    https = b.add_listener("443", Listener(
        load_balancer_arn=lb, port=443, protocol="HTTPS", certificates=[seed.certificate_arn],
        ssl_policy="ELBSecurityPolicy-2016-08",
        default_actions=[FixedResponseAction(status_code="404", content_type="text/plain",
                                             message_body="not found")]))
    p_api, p_front = (2, 1) if swap else (1, 2)
    b.add_rule("443:api", ListenerRule(
        listener_arn=https, priority=p_api,
        conditions=[HostHeaderCondition(values=[f"{name}.example.com"]),
                    PathPatternCondition(values=["/api/*"])],
        actions=[ForwardAction(target_groups=[
            WeightedTargetGroup(target_group_arn=api, weight=90),
            *([WeightedTargetGroup(target_group_arn=front, weight=10)]
              if with_second_tg else [])])]))
    b.add_rule("443:front", ListenerRule(
        listener_arn=https, priority=p_front,
        conditions=[PathPatternCondition(values=["/*"])],
        actions=[ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=front)],
                               stickiness=Stickiness(enabled=True, duration_seconds=300))],
        tags={"rule": "front"}))
    b.add(f"{stack_id}-api:80", TargetGroupBindingResource(
        name=_tg_name(stack_id, "api", 80), namespace="default", target_group_arn=api,
        target_type="ip", service_ref=ServiceReference(name="api", port=80)))
    return b.build()


def nlb_stack(seed: AwsSeed, name: str = "dns") -> Stack:
    stack_id = f"default/{name}"
    b = StackBuilder(stack_id, kind="service", context=context(seed))
    tcp = b.add_target_group(f"{stack_id}:53", TargetGroup(
        name=_tg_name(stack_id, name, 53, protocol="TCP"), protocol="TCP", port=53,
        target_type="ip", health_check=HealthCheck(protocol="TCP", interval_seconds=10,
                                                   timeout_seconds=6, healthy_threshold=3,
                                                   unhealthy_threshold=3)))
    tls = b.add_target_group(f"{stack_id}:8443", TargetGroup(
        name=_tg_name(stack_id, name, 8443, protocol="TCP"), protocol="TCP", port=8443,
        target_type="ip", health_check=HealthCheck(protocol="TCP", interval_seconds=10,
                                                   timeout_seconds=6)))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=service_load_balancer_name(CLUSTER, "default", name, "internal", uid=f"u-{name}"),
        type="network", scheme="internal", subnets=SubnetDiscovery(role="internal-elb"),
        attributes={"load_balancing.cross_zone.enabled": "true"}))
    b.add_listener("53", Listener(load_balancer_arn=lb, port=53, protocol="TCP", default_actions=[
        ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tcp)])]))
    b.add_listener("443", Listener(load_balancer_arn=lb, port=443, protocol="TCP",
                                   default_actions=[ForwardAction(target_groups=[
                                       WeightedTargetGroup(target_group_arn=tls)])]))
    return b.build()


def guarded_stack(seed: AwsSeed, name: str = "web", *, kind: str = "alb",
                  cidrs: tuple[str, ...] = ("0.0.0.0/0",),
                  user_groups: tuple[str, ...] = ()) -> Stack:
    """A small ALB (HTTP 80) or NLB (TCP 80) with a managed frontend group admitting `cidrs`
    and the shared backend group, as the model builders make them, or only `user_groups`; its
    binding asks the targets' groups to admit the backend group on 8080."""
    alb = kind == "alb"
    stack_id = f"default/{name}"
    b = StackBuilder(stack_id, kind="ingress" if alb else "service", context=context(seed))
    groups: list[Any] = list(user_groups)
    if not user_groups:
        managed = b.add_security_group(MANAGED_SECURITY_GROUP_ID, SecurityGroup(
            name=(ingress_security_group_name(CLUSTER, "default", name) if alb else
                  service_security_group_name(CLUSTER, "default", name, uid=f"u-{name}")),
            ingress=[IngressRule(protocol="tcp", from_port=80, to_port=80, cidr_ipv4=c)
                     for c in cidrs], tags={"team": "a"}))
        groups = [managed, SharedBackendSecurityGroup()]
    protocol: Literal["HTTP", "TCP"] = "HTTP" if alb else "TCP"
    tg = b.add_target_group(f"{stack_id}-web:80", TargetGroup(
        name=_tg_name(stack_id, "web", 80, protocol=protocol), protocol=protocol, port=80,
        target_type="ip"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=(load_balancer_name(CLUSTER, "default", name, "internal") if alb else
              service_load_balancer_name(CLUSTER, "default", name, "internal", uid=f"u-{name}")),
        type="application" if alb else "network", scheme="internal",
        subnets=SubnetDiscovery(role="internal-elb"), security_groups=groups))
    b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol=protocol,
                                  default_actions=[ForwardAction(target_groups=[
                                      WeightedTargetGroup(target_group_arn=tg)])]))
    b.add(f"{stack_id}-web:80", TargetGroupBindingResource(
        name=_tg_name(stack_id, "web", 80, protocol=protocol), namespace="default",
        target_group_arn=tg, target_type="ip", service_ref=ServiceReference(name="web", port=80),
        networking=None if user_groups else TargetGroupBindingNetworking(ingress=[
            NetworkingIngress.model_validate({
                "from": [NetworkingPeer(security_group=SharedBackendSecurityGroup())],
                "ports": [NetworkingPort(port=8080)]})])))
    return b.build()


def fronted_stack(seed: AwsSeed, name: str = "edge", *, alb_port: int = 80) -> Stack:
    """An ALB (HTTP on `alb_port`) with a frontend NLB: TCP 80 forwarding to an `alb` target
    group whose target is the ALB on `alb_port` (what `enable-frontend-nlb` builds)."""
    stack_id = f"default/{name}"
    b = StackBuilder(stack_id, kind="ingress", context=context(seed))
    alb_name = load_balancer_name(CLUSTER, "default", name, "internal")
    tg = b.add_target_group("FrontendNlb-tg-TCP-80", TargetGroup(
        name=frontend_nlb_target_group_name(CLUSTER, stack_id, 80, "traffic-port", "HTTP",
                                            explicit=False),
        protocol="TCP", port=80, target_type="alb",
        health_check=HealthCheck(path="/", matcher=HealthCheckMatcher(http_code="200")),
        load_balancer_target=LoadBalancerTarget(load_balancer="LoadBalancer", port=alb_port)))
    alb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name=alb_name, type="application", scheme="internal",
        subnets=SubnetDiscovery(role="internal-elb")))
    b.add_listener(str(alb_port), Listener(
        load_balancer_arn=alb, port=alb_port, protocol="HTTP",
        default_actions=[FixedResponseAction(status_code="404", content_type="text/plain")]))
    nlb = b.add_load_balancer("FrontendNlb", LoadBalancer(
        name=alb_name[:28] + "-nlb", type="network", scheme="internal",
        subnets=SubnetDiscovery(role="internal-elb")))
    b.add_listener("FrontendNlb-ls-TCP-80", Listener(
        load_balancer_arn=nlb, port=80, protocol="TCP", default_actions=[
            ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tg)])]))
    return b.build()


def inventory(elbv2: Any) -> dict[str, Any]:
    """Everything moto holds, unfiltered (a duplicate load balancer shows up only here)."""
    lbs = elbv2.describe_load_balancers()["LoadBalancers"]
    tgs = elbv2.describe_target_groups()["TargetGroups"]
    listeners: dict[str, list[dict[str, Any]]] = {}
    rules: dict[str, list[dict[str, Any]]] = {}
    for lb in lbs:
        found = elbv2.describe_listeners(LoadBalancerArn=lb["LoadBalancerArn"])["Listeners"]
        listeners[lb["LoadBalancerArn"]] = found
        for lis in found:
            rules[lis["ListenerArn"]] = [
                r for r in elbv2.describe_rules(ListenerArn=lis["ListenerArn"])["Rules"]
                if not r["IsDefault"]]
    return {"lbs": lbs, "tgs": tgs, "listeners": listeners, "rules": rules}


def assert_no_duplicates(inv: dict[str, Any]) -> None:
    lb_names = Counter(lb["LoadBalancerName"] for lb in inv["lbs"])
    assert all(n == 1 for n in lb_names.values()), lb_names
    tg_names = Counter(tg["TargetGroupName"] for tg in inv["tgs"])
    assert all(n == 1 for n in tg_names.values()), tg_names
    for lb_arn, listeners in inv["listeners"].items():
        ports = Counter(lis["Port"] for lis in listeners)
        assert all(n == 1 for n in ports.values()), (lb_arn, ports)
    for listener_arn, rules in inv["rules"].items():
        prios = Counter(r["Priority"] for r in rules)
        assert all(n == 1 for n in prios.values()), (listener_arn, prios)
