"""A cluster exactly as upstream's controller leaves it, made straight in moto (the test's own
AWS) and the local API server, never through aiolbc: for the tests of a switch from upstream.

Every fact comes from upstream's code (paths relative to its repository):
- names: pkg/ingress/model_build_load_balancer.go and model_build_target_group.go,
  pkg/service/model_build_load_balancer.go and model_build_target_group.go, and
  pkg/ingress/model_build_managed_sg.go, pkg/service/model_build_managed_sg.go,
  pkg/networking/backend_sg_provider.go for the security groups. They are computed here on
  their own, not with aiolbc's functions, so that a test compares two implementations;
- tags (pkg/deploy/tracking/provider.go): `elbv2.k8s.aws/cluster`, `<prefix>/stack`,
  `<prefix>/resource` on load balancers, target groups, listeners (`<port>`), rules
  (`<port>:<priority>`) and managed security groups (`ManagedLBSecurityGroup`); the backend
  group carries `elbv2.k8s.aws/resource: backend-sg`;
- Kubernetes objects: Ingress and Service finalizers (pkg/shared_constants/finalizers.go), the
  load balancer's hostname in status; managed TargetGroupBindings named after their target
  group, with the stack's labels, the `elbv2.k8s.aws/resources` finalizer, upstream's
  checkpoint annotations and the spec it writes (`networking` from the backend group,
  `vpcID`); the multi-cluster ConfigMap `aws-lbc-targets-<binding>` (`targets`: `id:port,...`);
- node rules: ingress from the backend group on the nodes' group, described
  `elbv2.k8s.aws/targetGroupBinding=shared`, one TCP rule from the lowest to the highest port
  any binding asks for (pkg/networking/networking_manager.go merges a group source's ports).
Targets are registered as upstream registers them: pod IPs at the endpoint port (ip), every
ready node at the node port (instance).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from runtime.objects import Obj
from runtime.resources import CONFIGMAPS, INGRESSES, SERVICES
from tests.support import objects
from tests.support.cluster import Cluster

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
TGB_FINALIZER = "elbv2.k8s.aws/resources"
SERVICE_FINALIZER = "service.k8s.aws/resources"
INGRESS_FINALIZER = "ingress.k8s.aws/resources"
GROUP_FINALIZER_PREFIX = "group.ingress.k8s.aws/"
NODE_RULE_DESCRIPTION = "elbv2.k8s.aws/targetGroupBinding=shared"
MANAGED_SG_DESCRIPTION = "[k8s] Managed SecurityGroup for LoadBalancer"
BACKEND_SG_DESCRIPTION = "[k8s] Shared Backend SecurityGroup for LoadBalancer"
# Upstream's TGB checkpoint format (`<endpoints digest>/<spec digest>`); its exact value does
# not matter, only that aiolbc cannot take it for its own.
UPSTREAM_CHECKPOINT = "upstreamEndpointsDigest/upstreamSpecDigest"
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def _h(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
    return digest.hexdigest()


def _san(value: str) -> str:
    return _NON_ALNUM.sub("", value)


def _k8s(namespace: str, name: str, uuid: str) -> str:
    return f"k8s-{_san(namespace)[:8]}-{_san(name)[:8]}-{uuid[:10]}"


def alb_name(cluster: str, group_id: str, scheme: str, *, explicit: bool) -> str:
    uuid = _h(cluster, group_id, scheme)
    if explicit:
        return f"k8s-{_san(group_id)[:17]}-{uuid[:10]}"
    namespace, _, name = group_id.partition("/")
    return _k8s(namespace, name, uuid)


def ingress_tg_name(cluster: str, group_id: str, ing_ns: str, ing_name: str, svc_name: str,
                    svc_uid: str, port: int | str, tg_port: int, target_type: str,
                    protocol: str = "HTTP", protocol_version: str = "HTTP1") -> str:
    return _k8s(ing_ns, svc_name, _h(cluster, group_id, ing_ns, ing_name, svc_uid, str(port),
                                    str(tg_port), target_type, protocol, protocol_version))


def nlb_name(cluster: str, namespace: str, name: str, uid: str, scheme: str) -> str:
    return _k8s(namespace, name, _h(cluster, uid, scheme))


def service_tg_name(cluster: str, namespace: str, name: str, uid: str, tg_port: int,
                    port: int, target_type: str, protocol: str = "TCP",
                    hc_protocol: str = "TCP", hc_interval: int = 10) -> str:
    return _k8s(namespace, name, _h(cluster, uid, str(tg_port), str(port), target_type,
                                    protocol, hc_protocol, str(hc_interval)))


def ingress_sg_name(cluster: str, group_id: str, *, explicit: bool) -> str:
    if explicit:
        return f"k8s-{_san(group_id)[:17]}-{_h(cluster, group_id)[:10]}"
    namespace, _, name = group_id.partition("/")
    return _k8s(namespace, name, _h(cluster, group_id))


def service_sg_name(cluster: str, namespace: str, name: str, uid: str) -> str:
    return _k8s(namespace, name, _h(cluster, name, namespace, uid))


def backend_sg_name(cluster: str) -> str:
    return f"k8s-traffic-{_san(cluster)[:232]}-{_h(cluster)[:10]}"


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


@dataclass
class Backend:
    """One Ingress of a group: a path to a Service on port 80 (target port 8080, named
    `http`), with `target_type` targets. `tg_name`: a name an older upstream release gave the
    target group (default: today's algorithm)."""

    ingress: str
    path: str
    target_type: str = "ip"
    tg_name: str | None = None
    endpoint_ips: tuple[str, ...] = ()

    @property
    def service(self) -> str:
        return f"{self.ingress}-svc"


@dataclass
class UpstreamStack:
    """What the stack is in AWS and Kubernetes, for comparing after the switch."""

    stack_id: str
    lb_arn: str
    dns_name: str
    security_groups: tuple[str, ...]
    target_groups: dict[str, str] = field(default_factory=dict)  # resource id → ARN
    bindings: dict[str, str] = field(default_factory=dict)  # resource id → binding name
    targets: dict[str, set[tuple[str, int]]] = field(default_factory=dict)  # ARN → targets


class UpstreamWorld:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.name = cluster.seed.cluster_name
        self._backend_sg: str | None = None
        self.node_ports: list[int] = []  # ports the bindings open on the nodes' group
        self.nodes: tuple[str, ...] = ()

    # ---- AWS helpers ------------------------------------------------------------------------

    async def _ec2(self, operation: str, **params: Any) -> dict[str, Any]:
        return await self.cluster.aws.call("ec2", operation, **params)

    async def _elbv2(self, operation: str, **params: Any) -> dict[str, Any]:
        return await self.cluster.aws.elbv2(operation, **params)

    async def backend_sg(self) -> str:
        """The shared backend group, once per cluster."""
        if self._backend_sg is None:
            self._backend_sg = await self._security_group(
                backend_sg_name(self.name), BACKEND_SG_DESCRIPTION,
                {CLUSTER_TAG: self.name, "elbv2.k8s.aws/resource": "backend-sg"})
        return self._backend_sg

    async def _security_group(self, name: str, description: str,
                              tags: Mapping[str, str], ports: Sequence[int] = ()) -> str:
        group = (await self._ec2(
            "CreateSecurityGroup", GroupName=name, Description=description,
            VpcId=self.cluster.seed.vpc_id,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(tags)}]
        ))["GroupId"]
        if ports:
            await self._ec2("AuthorizeSecurityGroupIngress", GroupId=group, IpPermissions=[
                {"IpProtocol": "tcp", "FromPort": p, "ToPort": p,
                 "IpRanges": [{"CidrIp": "0.0.0.0/0"}]} for p in ports])
        return str(group)

    @property
    def node_rules(self) -> list[tuple[int, int]]:
        """The port ranges upstream keeps on the nodes' group for the backend group."""
        return [(min(self.node_ports), max(self.node_ports))] if self.node_ports else []

    def _node_permission(self, ports: tuple[int, int]) -> dict[str, Any]:
        return {"IpProtocol": "tcp", "FromPort": ports[0], "ToPort": ports[1],
                "UserIdGroupPairs": [{"GroupId": self._backend_sg,
                                      "Description": NODE_RULE_DESCRIPTION}]}

    async def node_rule(self, port: int) -> None:
        """Traffic from the backend group to the nodes on `port`: upstream widens its one rule."""
        if port in self.node_ports:
            return
        await self.backend_sg()
        before = self.node_rules
        self.node_ports.append(port)
        group = self.cluster.seed.node_security_group_id
        await self._ec2("AuthorizeSecurityGroupIngress", GroupId=group,
                        IpPermissions=[self._node_permission(self.node_rules[0])])
        if before:
            await self._ec2("RevokeSecurityGroupIngress", GroupId=group,
                            IpPermissions=[self._node_permission(before[0])])

    async def node_rules_present(self) -> list[tuple[int, int]]:
        """The port ranges of the node rules that reference the backend group, as AWS has
        them."""
        group = (await self._ec2("DescribeSecurityGroups", GroupIds=[
            self.cluster.seed.node_security_group_id]))["SecurityGroups"][0]
        backend = await self.backend_sg()
        return sorted((int(p["FromPort"]), int(p["ToPort"]))
                      for p in group.get("IpPermissions") or []
                      if any(pair.get("GroupId") == backend
                             for pair in p.get("UserIdGroupPairs") or []))

    async def _load_balancer(self, name: str, *, type_: str, scheme: str,
                             security_groups: Sequence[str], tags: Mapping[str, str]
                             ) -> tuple[str, str]:
        subnets = (self.cluster.seed.public_subnets if scheme == "internet-facing"
                   else self.cluster.seed.private_subnets)
        lb = (await self._elbv2("CreateLoadBalancer", Name=name, Type=type_, Scheme=scheme,
                                Subnets=list(subnets), SecurityGroups=list(security_groups),
                                IpAddressType="ipv4", Tags=_tags(tags)))["LoadBalancers"][0]
        return str(lb["LoadBalancerArn"]), str(lb["DNSName"])

    async def _target_group(self, name: str, *, protocol: str, port: int, target_type: str,
                            tags: Mapping[str, str], health: Mapping[str, Any]) -> str:
        params: dict[str, Any] = {"Name": name, "Protocol": protocol, "Port": port,
                                  "VpcId": self.cluster.seed.vpc_id, "TargetType": target_type,
                                  "IpAddressType": "ipv4", "Tags": _tags(tags), **health}
        if protocol in ("HTTP", "HTTPS"):
            params["ProtocolVersion"] = "HTTP1"
        tg = (await self._elbv2("CreateTargetGroup", **params))["TargetGroups"][0]
        return str(tg["TargetGroupArn"])

    async def _register(self, arn: str, targets: set[tuple[str, int]]) -> None:
        await self._elbv2("RegisterTargets", TargetGroupArn=arn, Targets=[
            {"Id": i, "Port": p} for i, p in sorted(targets)])

    async def _node_targets(self, node_port: int) -> set[tuple[str, int]]:
        return {(i, node_port) for i in self.cluster.seed.instance_ids[:len(self.nodes)]}

    async def add_nodes(self, count: int = 2) -> None:
        """Ready Nodes on the seeded instances (instance targets are every one of them)."""
        names = []
        for i, instance in enumerate(self.cluster.seed.instance_ids[:count]):
            await self.cluster.node(f"node-{i}", instance)
            names.append(f"node-{i}")
        self.nodes = tuple(names)

    # ---- Kubernetes helpers ---------------------------------------------------------------

    async def _finalize(self, res: Any, name: str, finalizers: Sequence[str],
                        hostname: str) -> None:
        await self.cluster.patch(res, name, {"metadata": {"finalizers": list(finalizers)}})
        await self.cluster.client.patch(
            res, name, {"status": {"loadBalancer": {"ingress": [{"hostname": hostname}]}}},
            self.cluster.namespace, subresource="status")

    async def _binding(self, name: str, *, arn: str, target_type: str, service: str,
                       port: int | str, labels: Mapping[str, str], ports: Sequence[int],
                       multi_cluster: bool = False) -> None:
        spec: Obj = {
            "targetGroupARN": arn, "targetType": target_type,
            "serviceRef": {"name": service, "port": port}, "ipAddressType": "ipv4",
            "vpcID": self.cluster.seed.vpc_id,
            "networking": {"ingress": [{
                "from": [{"securityGroup": {"groupID": await self.backend_sg()}}],
                "ports": [{"protocol": "TCP", "port": p} for p in ports]}]}}
        if multi_cluster:
            spec["multiClusterTargetGroup"] = True
        await self.cluster.client.create(TARGETGROUPBINDINGS, {
            "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": {"name": name, "labels": dict(labels), "finalizers": [TGB_FINALIZER],
                         "annotations": {"elbv2.k8s.aws/checkpoint": UPSTREAM_CHECKPOINT,
                                         "elbv2.k8s.aws/checkpoint-timestamp": "1714557600"}},
            "spec": spec}, self.cluster.namespace)

    # ---- an Ingress group -------------------------------------------------------------------

    async def ingress_group(self, backends: Sequence[Backend], *, group: str | None = None,
                            scheme: str = "internet-facing") -> UpstreamStack:
        """An ALB for `backends` (one Ingress each; all in one explicit `group`, or one
        Ingress on its own), with its frontend and the backend security groups."""
        ns = self.cluster.namespace
        assert group is not None or len(backends) == 1
        explicit = group is not None
        group_id = group if group is not None else f"{ns}/{backends[0].ingress}"
        stack_tags = {CLUSTER_TAG: self.name, "ingress.k8s.aws/stack": group_id}
        labels = ({"ingress.k8s.aws/stack": group_id} if explicit else
                  {"ingress.k8s.aws/stack-namespace": ns,
                   "ingress.k8s.aws/stack-name": backends[0].ingress})
        frontend = await self._security_group(
            ingress_sg_name(self.name, group_id, explicit=explicit), MANAGED_SG_DESCRIPTION,
            {**stack_tags, "ingress.k8s.aws/resource": "ManagedLBSecurityGroup"}, ports=[80])
        sgs = (frontend, await self.backend_sg())
        lb_arn, dns = await self._load_balancer(
            alb_name(self.name, group_id, scheme, explicit=explicit), type_="application",
            scheme=scheme, security_groups=sgs,
            tags={**stack_tags, "ingress.k8s.aws/resource": "LoadBalancer"})
        listener = (await self._elbv2(
            "CreateListener", LoadBalancerArn=lb_arn, Protocol="HTTP", Port=80,
            DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {
                "ContentType": "text/plain", "StatusCode": "404"}}],
            Tags=_tags({**stack_tags, "ingress.k8s.aws/resource": "80"})))["Listeners"][0]
        stack = UpstreamStack(group_id, lb_arn, dns, sgs)
        # Members in upstream's order (group.order, then namespace/name): rule priorities.
        for priority, backend in enumerate(sorted(backends, key=lambda b: b.ingress), start=1):
            await self._ingress_backend(stack, backend, listener["ListenerArn"], priority,
                                        group=group, stack_tags=stack_tags, labels=labels,
                                        scheme=scheme)
        return stack

    async def _ingress_backend(self, stack: UpstreamStack, backend: Backend, listener: str,
                               priority: int, *, group: str | None,
                               stack_tags: Mapping[str, str], labels: Mapping[str, str],
                               scheme: str) -> None:
        ns = self.cluster.namespace
        svc = await self.cluster.backend(backend.service,
                                         endpoint_ips=backend.endpoint_ips or None)
        node_port = int(svc["spec"]["ports"][0]["nodePort"])
        uid = str(svc["metadata"]["uid"])
        tg_port = node_port if backend.target_type == "instance" else 8080
        rid = f"{ns}/{backend.ingress}-{backend.service}:80"
        name = backend.tg_name or ingress_tg_name(
            self.name, stack.stack_id, ns, backend.ingress, backend.service, uid, 80, tg_port,
            backend.target_type)
        arn = await self._target_group(
            name, protocol="HTTP", port=tg_port, target_type=backend.target_type,
            tags={**stack_tags, "ingress.k8s.aws/resource": rid},
            health={"HealthCheckProtocol": "HTTP", "HealthCheckPort": "traffic-port",
                    "HealthCheckPath": "/", "HealthCheckIntervalSeconds": 15,
                    "HealthCheckTimeoutSeconds": 5, "HealthyThresholdCount": 2,
                    "UnhealthyThresholdCount": 2, "Matcher": {"HttpCode": "200"}})
        prefix = backend.path.rstrip("/")
        await self._elbv2(
            "CreateRule", ListenerArn=listener, Priority=priority,
            Conditions=[{"Field": "path-pattern",
                         "PathPatternConfig": {"Values": [prefix, prefix + "/*"]}}],
            Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
                {"TargetGroupArn": arn}]}}],
            Tags=_tags({**stack_tags, "ingress.k8s.aws/resource": f"80:{priority}"}))
        if backend.target_type == "ip":
            targets = {(ip, 8080) for ip in backend.endpoint_ips
                       or (objects.endpoint_ip(backend.service),)}
        else:
            targets = await self._node_targets(node_port)
        await self._register(arn, targets)
        await self.node_rule(tg_port)
        await self._binding(name, arn=arn, target_type=backend.target_type,
                            service=backend.service, port=80, labels=labels, ports=[tg_port])
        annotations = {"alb.ingress.kubernetes.io/scheme": scheme,
                       "alb.ingress.kubernetes.io/target-type": backend.target_type}
        if group is not None:
            annotations["alb.ingress.kubernetes.io/group.name"] = group
        await self.cluster.ingress(backend.ingress, annotations, paths=[
            objects.ingress_path(backend.path, backend.service, 80)])
        finalizer = (GROUP_FINALIZER_PREFIX + group if group is not None
                     else INGRESS_FINALIZER)
        await self._finalize(INGRESSES, backend.ingress, [finalizer], stack.dns_name)
        stack.target_groups[rid] = arn
        stack.bindings[rid] = name
        stack.targets[arn] = targets

    # ---- a Service's NLB ----------------------------------------------------------------------

    async def nlb_service(self, name: str, *, scheme: str = "internet-facing",
                          annotations: Mapping[str, str] | None = None,
                          type_: str = "LoadBalancer", endpoint_ips: Sequence[str],
                          multi_cluster: bool = False,
                          other_cluster_targets: Sequence[str] = ()) -> UpstreamStack:
        """An NLB (ip targets, TCP 80 → 8080) for Service `name`, created with `scheme`; the
        Service's own annotations are `annotations` (no scheme annotation unless given there:
        upstream then kept the existing load balancer's scheme). `other_cluster_targets`:
        addresses another cluster registered into a multi-cluster target group."""
        ns = self.cluster.namespace
        notes = {"aws-load-balancer-type": "external",
                 "aws-load-balancer-nlb-target-type": "ip", **(annotations or {})}
        if multi_cluster:
            notes["aws-load-balancer-multi-cluster-target-group"] = "true"
        svc = await self.cluster.create(SERVICES, objects.nlb_service(
            name, notes, target_type=None, load_balancer_class=None, type_=type_))
        await self.cluster.endpoints(name, endpoint_ips)
        uid = str(svc["metadata"]["uid"])
        stack_id = f"{ns}/{name}"
        stack_tags = {CLUSTER_TAG: self.name, "service.k8s.aws/stack": stack_id}
        labels = {"service.k8s.aws/stack-namespace": ns, "service.k8s.aws/stack-name": name}
        frontend = await self._security_group(
            service_sg_name(self.name, ns, name, uid), MANAGED_SG_DESCRIPTION,
            {**stack_tags, "service.k8s.aws/resource": "ManagedLBSecurityGroup"}, ports=[80])
        sgs = (frontend, await self.backend_sg())
        lb_arn, dns = await self._load_balancer(
            nlb_name(self.name, ns, name, uid, scheme), type_="network", scheme=scheme,
            security_groups=sgs, tags={**stack_tags, "service.k8s.aws/resource": "LoadBalancer"})
        rid = f"{stack_id}:80"
        tg_name = service_tg_name(self.name, ns, name, uid, 8080, 80, "ip")
        arn = await self._target_group(
            tg_name, protocol="TCP", port=8080, target_type="ip",
            tags={**stack_tags, "service.k8s.aws/resource": rid},
            health={"HealthCheckProtocol": "TCP", "HealthCheckPort": "traffic-port",
                    "HealthCheckIntervalSeconds": 10, "HealthCheckTimeoutSeconds": 10,
                    "HealthyThresholdCount": 3, "UnhealthyThresholdCount": 3})
        await self._elbv2("ModifyTargetGroupAttributes", TargetGroupArn=arn, Attributes=[
            {"Key": "proxy_protocol_v2.enabled", "Value": "false"}])
        await self._elbv2(
            "CreateListener", LoadBalancerArn=lb_arn, Protocol="TCP", Port=80,
            DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
                {"TargetGroupArn": arn}]}}],
            Tags=_tags({**stack_tags, "service.k8s.aws/resource": "80"}))
        ours = {(ip, 8080) for ip in endpoint_ips}
        targets = ours | {(ip, 8080) for ip in other_cluster_targets}
        await self._register(arn, targets)
        await self.node_rule(8080)
        if multi_cluster:
            await self.cluster.client.create(CONFIGMAPS, {
                "metadata": {"name": f"aws-lbc-targets-{tg_name}"},
                "data": {"targets": ",".join(f"{i}:{p}" for i, p in sorted(ours))}},
                ns)
        await self._binding(tg_name, arn=arn, target_type="ip", service=name, port=80,
                            labels=labels, ports=[8080], multi_cluster=multi_cluster)
        await self._finalize(SERVICES, name, [SERVICE_FINALIZER], dns)
        stack = UpstreamStack(stack_id, lb_arn, dns, sgs)
        stack.target_groups[rid] = arn
        stack.bindings[rid] = tg_name
        stack.targets[arn] = targets
        return stack


__all__ = [
    "Backend",
    "UpstreamStack",
    "UpstreamWorld",
    "alb_name",
    "backend_sg_name",
    "ingress_sg_name",
    "ingress_tg_name",
    "nlb_name",
    "service_sg_name",
    "service_tg_name",
]
