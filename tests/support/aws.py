"""The test's own view of AWS: reads (and the odd change by hand) straight to moto, never
through the fault proxy, so they never show up in the log of the controller's calls and no
injected fault hits them.

`AwsInspector.open(url, region)` gives one on its own client pool (unthrottled: the test's
polling must not wait behind the controller's budget).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from aiobotocore.session import get_session
from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSError, AWSSettings, Role
from controller.aws.loader import with_shared_loader
from controller.aws.throttle import ThrottleConfig
from runtime.objects import Obj

Targets = set[tuple[str, int]]
# (protocol, from port, to port, source, description): a group's inbound rule with one source.
Rule = tuple[str, int, int, str, str]
Rules = set[Rule]
STACK_TAGS = ("ingress.k8s.aws/stack", "service.k8s.aws/stack")


def unreachable_aws() -> AWSSettings:
    """Settings of a pool that never reaches AWS (loopback, discard port): for a reconciler
    whose part under test makes no AWS call, such as its priority decisions."""
    return AWSSettings(region="us-west-2", endpoint_url="http://127.0.0.1:9",
                       access_key="unused", secret_key="unused")


class AwsInspector:
    def __init__(self, pool: AWSClientPool, *, role: Role | None = None) -> None:
        self.pool = pool
        self.role = role

    def as_role(self, role: Role) -> AwsInspector:
        """The same looks and changes made as `role`, in its account (moto gives an assumed
        role's credentials the role's account)."""
        return AwsInspector(self.pool, role=role)

    async def vpc(self, cidr: str = "10.50.0.0/16") -> str:
        """A VPC of this account (another account's target groups need one of their own)."""
        resp = await self.call("ec2", "CreateVpc", CidrBlock=cidr)
        return str(resp["Vpc"]["VpcId"])

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, url: str, *, region: str) -> AsyncIterator[AwsInspector]:
        settings = AWSSettings(region=region, endpoint_url=url, access_key="testing",
                               secret_key="testing", throttle=ThrottleConfig())
        # The whole service models (the controller's pool describes only what it calls): a
        # test makes what the controller never would (VPCs, prefix lists).
        session = with_shared_loader(get_session())
        async with AWSClientPool(settings, registry=CollectorRegistry(), session=session) as pool:
            yield cls(pool)

    @property
    def region(self) -> str:
        return self.pool.settings.region

    async def call(self, service: str, operation: str, /, *, region: str | None = None,
                   **params: Any) -> dict[str, Any]:
        return await self.pool.call(service, operation, region=region, role=self.role,
                                    **params)

    async def elbv2(self, operation: str, /, **params: Any) -> dict[str, Any]:
        return await self.call("elbv2", operation, **params)

    # ---- load balancers, listeners, rules ---------------------------------------------------

    async def load_balancers(self, *, region: str | None = None) -> list[Obj]:
        """Every page (moto, as AWS, answers at most a page of load balancers at a time)."""
        found: list[Obj] = []
        params: dict[str, Any] = {}
        while True:
            resp = await self.call("elbv2", "DescribeLoadBalancers", region=region, **params)
            found.extend(resp["LoadBalancers"])
            if not resp.get("NextMarker"):
                return found
            params = {"Marker": resp["NextMarker"]}

    async def load_balancer(self, name: str) -> Obj | None:
        return next((lb for lb in await self.load_balancers()
                     if lb["LoadBalancerName"] == name), None)

    async def load_balancer_at(self, dns_name: str | None) -> Obj | None:
        return next((lb for lb in await self.load_balancers() if lb["DNSName"] == dns_name),
                    None)

    async def https_certificates(self) -> list[str] | None:
        """The certificates of the first load balancer's HTTPS listener (None: no load
        balancer, or no HTTPS listener)."""
        lbs = await self.load_balancers()
        if not lbs:
            return None
        listeners = (await self.elbv2("DescribeListeners",
                                      LoadBalancerArn=lbs[0]["LoadBalancerArn"]))["Listeners"]
        https = [li for li in listeners if li["Protocol"] == "HTTPS"]
        return [x["CertificateArn"] for x in https[0]["Certificates"]] if https else None

    async def certificates(self) -> dict[str, tuple[dict[str, str], Obj]]:
        """Every ACM certificate of every key type: ARN → (tags, DescribeCertificate's
        description); one deleted since the listing is left out."""
        found: dict[str, tuple[dict[str, str], Obj]] = {}
        summaries = (await self.call("acm", "ListCertificates", Includes={
            "keyTypes": ["RSA_2048", "EC_prime256v1"]}))["CertificateSummaryList"]
        for summary in summaries:
            arn = summary["CertificateArn"]
            try:
                tags = (await self.call("acm", "ListTagsForCertificate",
                                        CertificateArn=arn))["Tags"]
                detail = (await self.call("acm", "DescribeCertificate",
                                          CertificateArn=arn))["Certificate"]
            except AWSError as exc:
                if exc.code != "ResourceNotFoundException":
                    raise
                continue
            found[arn] = ({t["Key"]: t.get("Value", "") for t in tags}, detail)
        return found

    async def listeners(self, lb_arn: str) -> dict[int, Obj]:
        resp = await self.elbv2("DescribeListeners", LoadBalancerArn=lb_arn)
        return {int(li["Port"]): li for li in resp["Listeners"]}

    async def rules(self, listener_arn: str) -> list[Obj]:
        """The listener's rules but the default one, by priority."""
        resp = await self.elbv2("DescribeRules", ListenerArn=listener_arn)
        return sorted((r for r in resp["Rules"] if not r.get("IsDefault")),
                      key=lambda r: int(r["Priority"]))

    async def tags(self, arns: Iterable[str], *, region: str | None = None
                   ) -> dict[str, dict[str, str]]:
        """ARN -> tags, for load balancers and target groups (20 ARNs per call, as AWS
        allows)."""
        listed = list(arns)
        found: dict[str, dict[str, str]] = {}
        for i in range(0, len(listed), 20):
            resp = await self.call("elbv2", "DescribeTags", region=region,
                                   ResourceArns=listed[i:i + 20])
            for d in resp["TagDescriptions"]:
                found[d["ResourceArn"]] = {t["Key"]: t["Value"] for t in d["Tags"]}
        return found

    # ---- target groups and targets -----------------------------------------------------------

    async def target_groups(self, *, region: str | None = None) -> list[Obj]:
        resp = await self.call("elbv2", "DescribeTargetGroups", region=region)
        return list(resp["TargetGroups"])

    async def target_group_arn(self, name: str) -> str:
        resp = await self.elbv2("DescribeTargetGroups", Names=[name])
        return str(resp["TargetGroups"][0]["TargetGroupArn"])

    async def create_target_group(self, name: str, *, vpc_id: str, target_type: str = "ip",
                                  protocol: str = "HTTP", port: int = 80,
                                  tags: dict[str, str] | None = None) -> str:
        """A target group made by hand (no controller tags unless `tags` says so), as users
        make for bindings."""
        extra: dict[str, Any] = {}
        if tags:
            extra["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
        resp = await self.elbv2("CreateTargetGroup", Name=name, Protocol=protocol, Port=port,
                                VpcId=vpc_id, TargetType=target_type, **extra)
        return str(resp["TargetGroups"][0]["TargetGroupArn"])

    async def registered(self, tg_arn: str) -> Targets:
        resp = await self.elbv2("DescribeTargetHealth", TargetGroupArn=tg_arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}

    async def register(self, tg_arn: str, *targets: tuple[str, int]) -> None:
        """Targets registered by hand (another cluster's, say)."""
        await self.elbv2("RegisterTargets", TargetGroupArn=tg_arn,
                         Targets=[{"Id": i, "Port": p} for i, p in targets])

    # ---- security groups --------------------------------------------------------------------

    async def security_groups(self, *filters: tuple[str, str], region: str | None = None
                              ) -> list[Obj]:
        """Groups matching every (filter name, value), e.g. ("tag:elbv2.k8s.aws/cluster", c)."""
        resp = await self.call("ec2", "DescribeSecurityGroups", region=region,
                               Filters=[{"Name": n, "Values": [v]} for n, v in filters])
        return sorted(resp["SecurityGroups"], key=lambda g: str(g["GroupId"]))

    async def stack_security_groups(self, stack: str, *, kind: str = "ingress",
                                    region: str | None = None) -> list[Obj]:
        return await self.security_groups((f"tag:{kind}.k8s.aws/stack", stack), region=region)

    async def backend_security_groups(self, cluster: str) -> list[Obj]:
        return await self.security_groups(("tag:elbv2.k8s.aws/cluster", cluster),
                                          ("tag:elbv2.k8s.aws/resource", "backend-sg"))

    async def security_group(self, group_id: str) -> Obj | None:
        try:
            resp = await self.call("ec2", "DescribeSecurityGroups", GroupIds=[group_id])
        except AWSError as exc:
            if exc.code == "InvalidGroup.NotFound":
                return None
            raise
        groups = resp["SecurityGroups"]
        return groups[0] if groups else None

    async def group_rules(self, group_id: str) -> Rules:
        """The group's inbound rules, one per source."""
        group = await self.security_group(group_id)
        return rules_of(group) if group is not None else set()

    # ---- whole stacks ---------------------------------------------------------------------------

    async def stacks(self, stacks: Iterable[str], *, regions: Iterable[str] | None = None
                     ) -> dict[str, Any]:
        """Region -> stack -> everything AWS holds for the stack (load balancers with their
        tags, attributes, listeners, certificates and rules; target groups with their tags,
        attributes and targets; security groups with their tags and inbound rules), each list
        in a stable order. `stacks` are values of the
        `ingress.k8s.aws/stack` or `service.k8s.aws/stack` tag."""
        wanted = set(stacks)
        return {region: await self._region_stacks(wanted, region)
                for region in (regions or [self.region])}

    async def _region_stacks(self, stacks: set[str], region: str) -> dict[str, Any]:
        # Read while a controller runs: a resource listed may be gone a moment later; then the
        # whole reading is taken again.
        for _ in range(10):
            try:
                return await self._region_stacks_once(stacks, region)
            except AWSError as exc:
                if not exc.is_not_found:
                    raise
        return await self._region_stacks_once(stacks, region)

    async def _region_stacks_once(self, stacks: set[str], region: str) -> dict[str, Any]:
        async def call(operation: str, **params: Any) -> dict[str, Any]:
            return await self.call("elbv2", operation, region=region, **params)

        lbs = await self.load_balancers(region=region)
        tgs = await self.target_groups(region=region)
        tags = await self.tags([x["LoadBalancerArn"] for x in lbs] +
                               [x["TargetGroupArn"] for x in tgs], region=region)
        out: dict[str, Any] = {}
        for lb in lbs:
            arn = lb["LoadBalancerArn"]
            stack = stack_of(tags.get(arn, {}))
            if stack not in stacks:
                continue
            listeners = []
            for li in (await call("DescribeListeners", LoadBalancerArn=arn))["Listeners"]:
                certs = await call("DescribeListenerCertificates", ListenerArn=li["ListenerArn"])
                rules = [r for r in (await call("DescribeRules",
                                                ListenerArn=li["ListenerArn"]))["Rules"]
                         if not r.get("IsDefault")]
                listener_attrs = (await call("DescribeListenerAttributes",
                                             ListenerArn=li["ListenerArn"]))["Attributes"]
                listeners.append({"listener": li, "certificates": certs["Certificates"],
                                  "attributes": listener_attrs,
                                  "rules": sorted(rules, key=lambda r: int(r["Priority"]))})
            attrs = (await call("DescribeLoadBalancerAttributes", LoadBalancerArn=arn)
                     )["Attributes"]
            out.setdefault(stack, {}).setdefault("lbs", []).append({
                "lb": {k: v for k, v in lb.items() if k not in ("State", "CreatedTime")},
                "tags": tags.get(arn, {}), "attributes": attrs,
                "listeners": sorted(listeners, key=lambda x: int(x["listener"]["Port"]))})
        for tg in tgs:
            arn = tg["TargetGroupArn"]
            stack = stack_of(tags.get(arn, {}))
            if stack not in stacks:
                continue
            attrs = (await call("DescribeTargetGroupAttributes", TargetGroupArn=arn)
                     )["Attributes"]
            health = (await call("DescribeTargetHealth", TargetGroupArn=arn)
                      )["TargetHealthDescriptions"]
            out.setdefault(stack, {}).setdefault("tgs", []).append({
                "tg": tg, "tags": tags.get(arn, {}), "attributes": attrs,
                "targets": sorted(f"{d['Target']['Id']}:{d['Target'].get('Port')}"
                                  for d in health)})
        groups = (await self.call("ec2", "DescribeSecurityGroups", region=region))
        for group in groups["SecurityGroups"]:
            stack = stack_of(tags_of(group))
            if stack not in stacks:
                continue
            out.setdefault(stack, {}).setdefault("sgs", []).append({
                "id": group["GroupId"], "name": group["GroupName"], "tags": tags_of(group),
                "rules": sorted(rules_of(group))})
        for entry in out.values():
            entry.get("lbs", []).sort(key=lambda x: x["lb"]["LoadBalancerArn"])
            entry.get("tgs", []).sort(key=lambda x: x["tg"]["TargetGroupArn"])
            entry.get("sgs", []).sort(key=lambda x: x["id"])
        return out


def rules_of(group: Obj) -> Rules:
    found: Rules = set()
    for perm in group.get("IpPermissions") or []:
        base = (str(perm["IpProtocol"]), int(perm.get("FromPort", -1)),
                int(perm.get("ToPort", -1)))
        for key, field in (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"),
                           ("PrefixListIds", "PrefixListId"), ("UserIdGroupPairs", "GroupId")):
            for item in perm.get(key) or []:
                found.add((*base, str(item[field]), str(item.get("Description") or "")))
    return found


def tags_of(resource: Obj) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in resource.get("Tags") or []}


def stack_of(tags: dict[str, str]) -> str | None:
    """The stack a load balancer or target group belongs to, by its tags."""
    return next((tags[key] for key in STACK_TAGS if tags.get(key)), None)


def _condition_values(rule: Obj, field: str, config: str) -> list[str]:
    for cond in rule["Conditions"]:
        if cond["Field"] == field:
            values = cond.get(config, {}).get("Values") or cond.get("Values")
            return sorted(values)
    return []


def rule_paths(rule: Obj) -> list[str]:
    return _condition_values(rule, "path-pattern", "PathPatternConfig")


def rule_hosts(rule: Obj) -> list[str]:
    return _condition_values(rule, "host-header", "HostHeaderConfig")


def rule_target_groups(rule: Obj) -> list[str]:
    """The target group ARNs a rule forwards to (plain or weighted forward)."""
    found: set[str] = set()
    for action in rule["Actions"]:
        weighted = (action.get("ForwardConfig") or {}).get("TargetGroups") or []
        found.update(str(t["TargetGroupArn"]) for t in weighted)
        if action.get("TargetGroupArn"):
            found.add(str(action["TargetGroupArn"]))
    return sorted(found)


class TargetWatch:
    """Samples the registered targets of some target groups, over and over, while something
    else runs (`async with TargetWatch(aws, baseline): ...`): every sample must still hold
    every target of the baseline. `dropped` lists the ones that did not."""

    def __init__(self, aws: AwsInspector, baseline: dict[str, Targets]) -> None:
        self.aws = aws
        self.baseline = baseline
        self.samples = 0
        self.dropped: list[tuple[str, Targets]] = []
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def _run(self) -> None:
        while not self._stop.is_set():
            for arn, wanted in self.baseline.items():
                try:
                    now = await self.aws.registered(arn)
                except AWSError as exc:
                    now = set() if exc.is_not_found else wanted
                if not wanted <= now:
                    self.dropped.append((arn, wanted - now))
            self.samples += 1
            await asyncio.sleep(0.01)  # leave moto to the controller between samples

    async def __aenter__(self) -> TargetWatch:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
