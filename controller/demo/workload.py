"""What the demo does to the cluster and AWS, and how it watches the result: it plays the
kubelet and the VPC CNI (a network interface in the node group for each pod, EndpointSlices for
the example Deployment's pods, Nodes), creates the target groups the TargetGroupBindings point
at, and polls the API server and AWS to narrate what the controllers did."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION, TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, AWSSettings
from controller.demo.display import Display, bar
from controller.demo.replica import Replica
from controller.demo.standins import CLUSTER, REGION, StandIns
from controller.targetgroupbinding import CONTROLLER_NAME as TGB_CONTROLLER
from runtime.client import KubeClient
from runtime.errors import NotFound
from runtime.resources import ENDPOINTSLICES, INGRESSES, NODES, SERVICES

NAMESPACE = "default"
WEB_IPS = ["10.0.1.10", "10.0.1.11"]
NEW_IP = "10.0.1.12"
STATIC_IPS = ["10.0.2.10", "10.0.2.11"]  # pods of a workload that does not change
SHARED_TG = "web-shared"  # the name manifests/examples/50-targetgroupbinding.yaml points at
CONVERGE_TIMEOUT = 90.0


class Workload:
    def __init__(self, local: StandIns) -> None:
        self.local = local
        self.client: KubeClient | None = None
        self.pool: AWSClientPool | None = None
        self.proxy_pool: AWSClientPool | None = None
        self.target_groups: dict[str, str] = {}  # TGB name → target group ARN

    async def kube(self) -> KubeClient:
        if self.client is None:
            self.client = await KubeClient.from_kubeconfig(self.local.kubeconfig)
        return self.client

    async def _aws(self) -> AWSClientPool:
        if self.pool is None:
            self.pool = AWSClientPool(AWSSettings(region=REGION, endpoint_url=self.local.moto_url,
                                                  access_key="demo", secret_key="demo"))
        return self.pool

    async def _aws_as_controllers_see_it(self) -> AWSClientPool:
        if self.proxy_pool is None:
            self.proxy_pool = AWSClientPool(AWSSettings(
                region=REGION, endpoint_url=self.local.aws_url, access_key="demo",
                secret_key="demo"))
        return self.proxy_pool

    async def close(self) -> None:
        for pool in (self.pool, self.proxy_pool):
            if pool is not None:
                await pool.close()
        if self.client is not None:
            await self.client.close()

    # ---- setup ------------------------------------------------------------------------------

    async def _target_group(self, name: str) -> str:
        pool = await self._aws()
        resp = await pool.call("elbv2", "CreateTargetGroup", Name=name, Protocol="HTTP",
                               Port=80, VpcId=self.local.seed.vpc_id, TargetType="ip")
        return str(resp["TargetGroups"][0]["TargetGroupArn"])

    async def _slice(self, service: str, ips: list[str]) -> None:
        # The pods' network interfaces first, as the VPC CNI gives them before they run. The
        # stand-ins are imported only once the demo checked they are installed.
        from controller.standins import create_pod_enis

        await asyncio.to_thread(create_pod_enis, self.local.moto_url, self.local.seed, ips)
        client = await self.kube()
        body: dict[str, Any] = {
            "metadata": {"name": f"{service}-pods",
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"web-{ip.replace('.', '-')}",
                                         "uid": f"pod-{ip}"}} for ip in ips],
        }
        try:
            current = await client.get(ENDPOINTSLICES, f"{service}-pods", NAMESPACE)
        except NotFound:
            await client.create(ENDPOINTSLICES, body, NAMESPACE)
            return
        body["metadata"].update(namespace=NAMESPACE,
                                resourceVersion=current["metadata"]["resourceVersion"])
        await client.update(ENDPOINTSLICES, body)

    async def setup(self, *, objects: int, display: Display) -> None:
        client = await self.kube()
        display.step(f"playing the kubelet: pods {', '.join(WEB_IPS)} of deployment/web "
                     "become EndpointSlices; two Nodes backed by the seeded EC2 instances")
        for service in ("web", "web-nlb"):
            await self._slice(service, WEB_IPS)
        if objects:
            await client.create(SERVICES, {
                "metadata": {"name": "static"},
                "spec": {"type": "NodePort", "selector": {"app": "static"},
                         "ports": [{"name": "http", "port": 80, "targetPort": 80}]}}, NAMESPACE)
            await self._slice("static", STATIC_IPS)
        for i, instance in enumerate(self.local.seed.instance_ids):
            await client.create(NODES, {
                "metadata": {"name": f"node-{i}"},
                "spec": {"providerID": f"aws:///us-west-2a/{instance}"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        self.target_groups["web-shared"] = await self._target_group(SHARED_TG)
        display.step(f"created target group {SHARED_TG} for TargetGroupBinding web-shared"
                     + (f", and {objects} more, each with a TargetGroupBinding of Service "
                        "static (pods that will not change)" if objects else ""))
        for i in range(objects):
            name = f"extra-{i:03d}"
            arn = await self._target_group(f"demo-{name}")
            self.target_groups[name] = arn
            await client.create(TARGETGROUPBINDINGS, {
                "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
                "metadata": {"name": name},
                "spec": {"targetGroupARN": arn, "targetType": "ip",
                         "serviceRef": {"name": "static", "port": 80}}}, NAMESPACE)

    # ---- observation ------------------------------------------------------------------------

    async def targets(self, arn: str) -> set[str]:
        pool = await self._aws()
        resp = await pool.call("elbv2", "DescribeTargetHealth", TargetGroupArn=arn)
        return {d["Target"]["Id"] for d in resp["TargetHealthDescriptions"]}

    async def wait_for_leader(self, replicas: list[Replica], display: Display) -> Replica:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for replica in replicas:
                if await replica.leading():
                    others = ", ".join(r.name for r in replicas if r is not replica)
                    display.step(f"{replica.name} is the leader (its /metrics says "
                                 f"leader_election_master_status 1); {others} stands by with "
                                 "warm informer caches")
                    return replica
            await asyncio.sleep(0.05)
        raise RuntimeError("no replica became leader within 30 s")

    async def _hostnames(self, resource: Any, kind: str) -> list[str]:
        """One line per load balancer: the objects that share it (an Ingress group) → DNS."""
        client = await self.kube()
        by_host: dict[str, list[str]] = {}
        for obj in (await client.list(resource, NAMESPACE))["items"]:
            for ingress in ((obj.get("status") or {}).get("loadBalancer") or {}).get(
                    "ingress") or []:
                if ingress.get("hostname"):
                    by_host.setdefault(ingress["hostname"], []).append(
                        f"{kind}/{obj['metadata']['name']}")
        lines = []
        for host, owners in by_host.items():
            shared = f" (one group: {len(owners)} Ingresses, one ALB)" if len(owners) > 1 else ""
            lines.append(f"{', '.join(sorted(owners))} → {host}{shared}")
        return lines

    async def wait_converged(self, display: Display) -> None:
        client = await self.kube()
        deadline = time.monotonic() + CONVERGE_TIMEOUT
        shown: set[str] = set()
        while True:
            done = 0
            for name, arn in self.target_groups.items():
                want = set(WEB_IPS if name == "web-shared" else STATIC_IPS)
                done += await self.targets(arn) == want
            bindings = (await client.list(TARGETGROUPBINDINGS, NAMESPACE))["items"]
            checkpointed = sum(1 for b in bindings if (b["metadata"].get("annotations") or {})
                               .get(CHECKPOINT_ANNOTATION))
            for line in (await self._hostnames(SERVICES, "service")
                         + await self._hostnames(INGRESSES, "ingress")):
                if line not in shown:
                    shown.add(line)
                    display.step(f"load balancer ready: {line}")
            total = len(self.target_groups)
            display.progress(f"target groups with their pods registered {bar(done, total)}; "
                             f"bindings checkpointed {checkpointed}/{len(bindings)}")
            if done == total and checkpointed == len(bindings):
                display.step(f"converged: {done} target groups hold their pods; "
                             "every TargetGroupBinding carries its checkpoint")
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"not converged within {CONVERGE_TIMEOUT:.0f} s")
            await asyncio.sleep(0.2)

    async def report_security_groups(self, display: Display) -> None:
        """Who each load balancer's managed group admits, and what the pods' group admits
        from the shared backend group."""
        ec2 = await self._aws()
        found = await ec2.call("ec2", "DescribeSecurityGroups", Filters=[
            {"Name": "tag:elbv2.k8s.aws/cluster", "Values": [CLUSTER]}])
        backend, backend_name = "", ""
        lines = []
        for group in found.get("SecurityGroups") or []:
            tags = {t["Key"]: t.get("Value", "") for t in group.get("Tags") or []}
            if tags.get("elbv2.k8s.aws/resource") == "backend-sg":
                backend, backend_name = str(group["GroupId"]), str(group["GroupName"])
                continue
            stack = tags.get("ingress.k8s.aws/stack") or tags.get("service.k8s.aws/stack")
            kind = "ALB" if "ingress.k8s.aws/stack" in tags else "NLB"
            lines.append(f"{kind} of {stack}: group {group['GroupName']} admits "
                         f"{_admits(group)}")
        for line in sorted(lines):
            display.step(f"security groups: {line}")
        node = (await ec2.call("ec2", "DescribeSecurityGroups",
                               GroupIds=[self.local.seed.node_security_group_id]))
        pods = node["SecurityGroups"][0]
        ports = sorted({_ports(p) for p in pods.get("IpPermissions") or []
                        if any(g.get("GroupId") == backend
                               for g in p.get("UserIdGroupPairs") or [])})
        display.step(f"security groups: the pods' group {pods['GroupName']} admits the backend "
                     f"group {backend_name or '(none)'} ({backend or '-'}) on "
                     f"{', '.join(ports) or 'no port'}")

    async def report_health(self, display: Display) -> None:
        """Target health summed over every target group, as the controllers see it: the
        proxy answers as AWS would, where moto alone says `healthy` at once."""
        groups = (await (await self._aws()).call("elbv2", "DescribeTargetGroups"))
        seen = await self._aws_as_controllers_see_it()
        counts: Counter[str] = Counter()
        for group in groups.get("TargetGroups") or []:
            resp = await seen.call("elbv2", "DescribeTargetHealth",
                                   TargetGroupArn=group["TargetGroupArn"])
            for description in resp.get("TargetHealthDescriptions") or []:
                health = description.get("TargetHealth") or {}
                reason = health.get("Reason")
                counts[f"{health.get('State')}" + (f" ({reason})" if reason else "")] += 1
        summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        display.step(f"target health as AWS reports it: {summary or 'no targets'}")

    async def scale_web(self) -> str:
        await self._slice("web", [*WEB_IPS, NEW_IP])
        return NEW_IP

    async def wait_leader(self, standby: Replica, display: Display, *, since: float) -> None:
        deadline = time.monotonic() + 60
        while True:
            if await standby.leading():
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{standby.name} did not take over within 60 s")
            await asyncio.sleep(0.02)
        display.step(f"{standby.name} took over {time.monotonic() - since:.2f} s after the kill "
                     "(the dead leader's lease had to expire: 3 s from its last renewal)")

    async def report_takeover(self, new_ip: str, display: Display, leader: Replica, *,
                              took_over: float) -> None:
        """Narrate the takeover from what AWS saw (the proxy's log) and the new leader's own
        metrics: when the real change reached its target group, and how the unchanged bindings
        were verified."""
        proxy = self.local.proxy
        log_start = len(proxy.log)
        shared = self.target_groups["web-shared"]
        deadline = time.monotonic() + CONVERGE_TIMEOUT
        while new_ip not in await self.targets(shared):
            if time.monotonic() > deadline:
                raise RuntimeError("the real change was not applied in time")
            await asyncio.sleep(0.02)
        first_change_ms = (time.monotonic() - took_over) * 1000
        display.step(f"first real change applied {first_change_ms:.0f} ms after takeover: "
                     f"{new_ip} registered in {SHARED_TG}")
        unchanged = {arn for name, arn in self.target_groups.items() if name != "web-shared"}
        # Every binding is reconciled once by the new leader: the changed one at once, the
        # unchanged ones as paced verifications.
        bindings = len(self.target_groups)
        reconciled, waiting = 0.0, 1.0
        while (reconciled < bindings or waiting) and time.monotonic() < deadline:
            reconciled = await leader.metric("controller_runtime_reconcile_total",
                                             controller=TGB_CONTROLLER) or 0.0
            depth = await leader.metric("workqueue_depth", name=TGB_CONTROLLER)
            waiting = 1.0 if depth is None else depth
            display.progress(f"paced verification of unchanged bindings "
                             f"{bar(min(int(reconciled), bindings), bindings)}")
            await asyncio.sleep(0.1)
        records = proxy.log[log_start:]
        calls = Counter(r.operation for r in records)
        touched = {r.params.get("TargetGroupArn") for r in records if r.mutating}
        health = {r.params.get("TargetGroupArn") for r in records
                  if r.operation == "DescribeTargetHealth"} & unchanged
        if unchanged:
            display.step(
                f"checkpoints: {len(unchanged)} unchanged bindings matched and were verified in "
                f"the paced LOW lane after the real change: their target groups read in shared "
                f"calls, their targets trusted from their last full look (read again for "
                f"{len(health)}: only a look older than half the sync period is repeated); "
                f"mutating AWS calls for them: {len(touched & unchanged)}")
        summary = ", ".join(f"{op} x{n}" for op, n in sorted(calls.items()))
        display.step(f"AWS calls since takeover: {summary or 'none'}")


def _ports(permission: dict[str, Any]) -> str:
    low, high = permission.get("FromPort"), permission.get("ToPort")
    return f"{low}" if low == high else f"{low}-{high}"


def _admits(group: dict[str, Any]) -> str:
    """`0.0.0.0/0 on 80` per source, ports merged."""
    by_source: dict[str, list[str]] = {}
    for permission in group.get("IpPermissions") or []:
        for key, field in (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"),
                           ("PrefixListIds", "PrefixListId")):
            for item in permission.get(key) or []:
                by_source.setdefault(str(item.get(field)), []).append(_ports(permission))
    return "; ".join(f"{source} on {', '.join(sorted(set(ports)))}"
                     for source, ports in sorted(by_source.items())) or "nobody"
