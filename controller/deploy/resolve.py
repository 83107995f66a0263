"""The resolve stage: AWS lookups that turn a stack's placeholders into concrete values.

Subnets, as upstream:
- discovery (`SubnetDiscovery`): the VPC's subnets tagged `kubernetes.io/role/elb`
  (internet-facing) or `kubernetes.io/role/internal-elb` (internal); a tag selector
  (`SubnetSelector`, IngressClassParams `subnets.tags`): the VPC's subnets carrying every
  listed key with one of its values. Either way subnets tagged `kubernetes.io/cluster/<name>`
  for other clusters only are left out (unless the stack's context turns the check off, the
  SubnetsClusterTagCheck gate), and per availability zone the one tagged for this cluster
  wins, then the lowest id. When no subnet carries the role tag and the stack's context says
  so (the SubnetDiscoveryByReachability gate), discovery falls back to the subnets whose route
  table (their own, else the VPC's main one) has a route to an internet gateway (public, for
  internet-facing) or has none (private, for internal), as upstream;
- an explicit list: subnet IDs as they are, other entries are Name tags, each of which must
  name exactly one subnet of the VPC; no two subnets may share a zone.
Certificate discovery picks the ACM certificates whose domain or alternative names cover a
host, of every key type (as upstream: ListCertificates answers RSA_2048 ones only unless asked
for others); with `authorities` (`--allowed-certificate-authority-arns`) only those issued by
one of those private CAs (DescribeCertificate's `CertificateAuthorityArn`, as upstream: an
Amazon-issued or imported certificate has none, so it is never picked then); with
`skip_imported_from_secrets` not one imported from a namespace's TLS Secret. A trust store given
by name (mutual TLS) is looked up with DescribeTrustStores. A WAFv2 web ACL given by name becomes
its ARN (ListWebACLs, REGIONAL scope, as upstream); Shield Advanced protection asked for needs an
active subscription. Either failing stops the stack before anything is created (fail closed;
upstream skips Shield silently). A forward to a target group by name (`TargetGroupByName`,
upstream's `targetGroupName`) gets the ARN of the target group of that name (DescribeTargetGroups
by name); whether the stack may forward there was checked before the stack was built (the
qualify step). A network load balancer's static addresses and source NAT prefixes are paired
with its subnets (`subnetmappings.py`, which needs their CIDRs). Results are cached for `ttl`
seconds; an ALB needs subnets in two or more zones (one is enough when the stack's context
says so: the ALBSingleSubnet gate, as upstream).
The VPC and the cluster come from the stack's context, never from settings of the resolver's
own.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.aws import AWSError, Caller, addonreads
from controller.deploy import subnetmappings
from controller.deploy.certificates import REQUESTED_TAG, SECRET_TAG
from controller.deploy.errors import ResolveError
from controller.model import (
    Action,
    CertificateDiscovery,
    ForwardAction,
    Listener,
    ListenerRule,
    LoadBalancer,
    Stack,
    StackContext,
    SubnetDiscovery,
    SubnetSelector,
    TargetGroupByName,
    WAFv2Association,
    WebACLByName,
)
from controller.model.addons import web_acl_not_found
from runtime.clock import Clock, RealClock


@dataclass(frozen=True, kw_only=True)
class ResolverSettings:
    ttl: float = 300.0
    certificate_statuses: tuple[str, ...] = ("ISSUED",)
    # Every ACM KeyAlgorithm, as upstream asks (`acmTypes.KeyAlgorithm.Values()`).
    certificate_key_types: tuple[str, ...] = (
        "RSA_1024", "RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1", "EC_secp384r1",
        "EC_secp521r1")


@dataclass
class _Entry:
    value: Any
    expires: float


_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]+$")
_CLUSTER_TAG = "kubernetes.io/cluster/"


@dataclass
class StackResolver:
    settings: ResolverSettings
    clock: Clock = field(default_factory=RealClock)
    _cache: dict[tuple[str, str], _Entry] = field(default_factory=dict, init=False, repr=False)

    async def resolve(self, stack: Stack, calls: Caller) -> Stack:
        update: dict[str, Any] = {}
        ctx = stack.context
        lbs = {rid: await self._load_balancer(lb, ctx, calls)
               for rid, lb in stack.load_balancers.items()}
        if lbs != stack.load_balancers:
            update["load_balancers"] = lbs
        listeners = {rid: await self._listener(lis, calls)
                     for rid, lis in stack.listeners.items()}
        if listeners != stack.listeners:
            update["listeners"] = listeners
        rules = {rid: await self._rule(rule, calls)
                 for rid, rule in stack.listener_rules.items()}
        if rules != stack.listener_rules:
            update["listener_rules"] = rules
        return stack.model_copy(update=update) if update else stack

    async def _rule(self, rule: ListenerRule, calls: Caller) -> ListenerRule:
        actions = await self._actions(rule.actions, calls)
        return rule if actions is None else rule.model_copy(update={"actions": actions})

    async def _actions(self, actions: Sequence[Action], calls: Caller) -> tuple[Action, ...] | None:
        """The actions with target groups named by name given their ARNs; None when no
        action names one."""
        if not any(isinstance(a, ForwardAction) and any(
                isinstance(w.target_group_arn, TargetGroupByName) for w in a.target_groups)
                for a in actions):
            return None
        out: list[Action] = []
        for action in actions:
            if isinstance(action, ForwardAction):
                groups = []
                for weighted in action.target_groups:
                    target = weighted.target_group_arn
                    if isinstance(target, TargetGroupByName):
                        arn = await self._target_group_arn(target.target_group_name, calls)
                        weighted = weighted.model_copy(update={"target_group_arn": arn})
                    groups.append(weighted)
                action = action.model_copy(update={"target_groups": tuple(groups)})
            out.append(action)
        return tuple(out)

    async def _target_group_arn(self, name: str, calls: Caller) -> str:
        key = ("target-group-name", name)
        cached = self._cached(key)
        if cached is not None:
            return str(cached)
        try:
            resp = await calls.call("DescribeTargetGroups", Names=[name])
        except AWSError as exc:
            if exc.is_not_found:
                raise ResolveError(f"no target group named {name!r}") from None
            raise
        groups = resp.get("TargetGroups") or []
        if not groups:
            raise ResolveError(f"no target group named {name!r}")
        arn = str(groups[0]["TargetGroupArn"])
        self._store(key, arn)
        return arn

    def _cached(self, key: tuple[str, str]) -> Any:
        entry = self._cache.get(key)
        if entry is not None and entry.expires > self.clock.now():
            return entry.value
        return None

    def _store(self, key: tuple[str, str], value: Any) -> None:
        self._cache[key] = _Entry(value, self.clock.now() + self.settings.ttl)

    async def _load_balancer(self, lb: LoadBalancer, ctx: StackContext,
                             calls: Caller) -> LoadBalancer:
        if isinstance(lb.subnets, SubnetDiscovery | SubnetSelector):
            tags: dict[str, Sequence[str]]
            public: bool | None = None  # discovery by reachability: a public subnet or not
            if isinstance(lb.subnets, SubnetDiscovery):
                tags = {f"kubernetes.io/role/{lb.subnets.role}": ("1", "")}
                wanted = f"is tagged kubernetes.io/role/{lb.subnets.role}"
                if ctx.subnet_discovery_by_reachability:
                    public = lb.subnets.role == "elb"
                    wanted += (", and none is " + (
                        "public (a route to an internet gateway)" if public
                        else "private (no route to an internet gateway)"))
            else:
                tags = dict(lb.subnets.tags)
                wanted = "matches the tags " + ", ".join(
                    f"{key} in ({', '.join(values)})" for key, values in sorted(tags.items()))
            zones = await self._select(tags, ctx, calls, public=public)
            if not zones:
                raise ResolveError(f"load balancer {lb.name}: no subnet in VPC "
                                   f"{ctx.vpc_id} {wanted}")
            subnets = tuple(sorted(ids[0] for ids in zones.values()))
        else:
            subnets = tuple(sorted(await self._ids(tuple(lb.subnets), ctx, calls)))
            zones = await self._zones_of(subnets, calls)
            shared = sorted(zone for zone, ids in zones.items() if len(ids) > 1)
            if shared:
                raise ResolveError(
                    f"load balancer {lb.name}: subnets {', '.join(zones[shared[0]])} are in the "
                    f"same availability zone {shared[0]}; give at most one per zone")
        if lb.type == "application" and len(zones) < 2 and not (ctx.alb_single_subnet
                                                                and zones):
            raise ResolveError(
                f"load balancer {lb.name}: an application load balancer needs subnets in at "
                f"least two availability zones, got {len(zones)} ({', '.join(sorted(zones))})")
        update: dict[str, Any] = {}
        if subnets != tuple(lb.subnets):
            update["subnets"] = subnets
        if subnetmappings.wants_mappings(lb):
            order = subnets
            if lb.subnet_order is not None:
                listed = [s if _SUBNET_ID.match(s) else str(
                    self._cached(("subnet-name", f"{ctx.vpc_id}/{s}")))
                    for s in lb.subnet_order]
                order = tuple(dict.fromkeys(listed))
            update["subnet_mappings"] = subnetmappings.pair(
                lb, order, await self._cidrs_of(subnets, calls))
        if lb.enable_prefix_for_ipv6_source_nat == "on":
            # Upstream's ValidateEnablePrefixForIpv6SourceNat.
            without = subnetmappings.subnets_without_ipv6(
                subnets, await self._cidrs_of(subnets, calls))
            if without:
                raise ResolveError(
                    f"load balancer {lb.name}: prefixes for IPv6 source NAT need an IPv6 CIDR "
                    f"on every subnet; without one: {', '.join(without)}")
        if lb.wafv2 is not None and isinstance(lb.wafv2.web_acl, WebACLByName):
            update["wafv2"] = WAFv2Association(
                web_acl=await self._web_acl(lb.wafv2.web_acl.name, calls))
        if lb.shield is not None and lb.shield.enabled:
            await self._shield_subscribed(lb.name, calls)
        return lb.model_copy(update=update) if update else lb

    async def _web_acl(self, name: str, calls: Caller) -> str:
        """A WAFv2 web ACL name (upstream's `wafv2-acl-name`) → its ARN: one that does not
        resolve stops the stack before anything is created or changed (fail closed)."""
        key = ("wafv2-web-acl", name)
        cached = self._cached(key)
        if cached is not None:
            return str(cached)
        arn = await addonreads.wafv2_web_acl_named(calls, name)
        if not arn:
            # The text admission denies the same name with.
            raise ResolveError(web_acl_not_found(name))
        self._store(key, arn)
        return arn

    async def _shield_subscribed(self, lb_name: str, calls: Caller) -> None:
        """Upstream skips Shield silently without a subscription; asked for, it cannot be
        honoured then, so the stack stops (fail closed). Only an active one is cached, so a
        new subscription counts at the next try."""
        key = ("shield-subscription", "")
        if self._cached(key):
            return
        if not await addonreads.shield_subscribed(calls):
            raise ResolveError(f"load balancer {lb_name}: Shield Advanced protection is asked "
                               "for (shield-advanced-protection), but the account has no active "
                               "Shield Advanced subscription")
        self._store(key, True)

    async def _select(self, tags: Mapping[str, Sequence[str]], ctx: StackContext,
                      calls: Caller, *, public: bool | None = None) -> dict[str, list[str]]:
        """Zone → eligible subnet ids matching `tags`, best first. `public` not None: when no
        subnet matches `tags`, the subnets that are public (or private) by their route table
        are the candidates instead (upstream's discovery by reachability)."""
        key = ("subnet-select", json.dumps([ctx.vpc_id, ctx.cluster_name, tags,
                                            ctx.subnets_cluster_tag_check, public],
                                           sort_keys=True))
        cached = self._cached(key)
        if cached is not None:
            zones: dict[str, list[str]] = cached
            return zones
        vpc = [{"Name": "vpc-id", "Values": [ctx.vpc_id]}]
        candidates = await self._subnets(calls, [*vpc, *(
            {"Name": f"tag:{k}", "Values": list(v)} for k, v in sorted(tags.items()))])
        if not candidates and public is not None:
            candidates = [s for s in await self._subnets(calls, vpc)
                          if await self._public(s["SubnetId"], ctx, calls) is public]
        ranked: dict[str, list[tuple[int, str]]] = {}
        for subnet in candidates:
            rank = _cluster_rank(subnet, ctx.cluster_name, check=ctx.subnets_cluster_tag_check)
            if rank is not None:
                ranked.setdefault(subnet["AvailabilityZone"], []).append(
                    (rank, subnet["SubnetId"]))
        zones = {zone: [sid for _, sid in sorted(items)] for zone, items in ranked.items()}
        self._store(key, zones)
        return zones

    async def _subnets(self, calls: Caller,
                       filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        async for page in calls.paginate("DescribeSubnets", service="ec2", Filters=filters):
            for subnet in page.get("Subnets", []):
                self._store(("subnet-zone", subnet["SubnetId"]), subnet["AvailabilityZone"])
                found.append(subnet)
        return found

    async def _public(self, subnet_id: str, ctx: StackContext, calls: Caller) -> bool:
        """Upstream's isSubnetContainsRouteToIGW: the subnet's route table (its explicit
        association, else the VPC's main table) has a route to an internet gateway."""
        tables = await self._route_tables(ctx, calls)
        main = next((t for t in tables if any(a.get("Main") for a in t.get("Associations") or [])),
                    None)
        table = next((t for t in tables
                      if any(a.get("SubnetId") == subnet_id for a in t.get("Associations") or [])),
                     main)
        if table is None:
            raise ResolveError(f"VPC {ctx.vpc_id} has no main route table")
        return any(str(r.get("GatewayId") or "").startswith("igw")
                   for r in table.get("Routes") or [])

    async def _route_tables(self, ctx: StackContext, calls: Caller) -> list[dict[str, Any]]:
        key = ("route-tables", ctx.vpc_id)
        cached = self._cached(key)
        if cached is not None:
            tables: list[dict[str, Any]] = cached
            return tables
        tables = []
        async for page in calls.paginate("DescribeRouteTables", service="ec2",
                                         Filters=[{"Name": "vpc-id", "Values": [ctx.vpc_id]}]):
            tables.extend(page.get("RouteTables", []))
        self._store(key, tables)
        return tables

    async def _ids(self, items: tuple[str, ...], ctx: StackContext,
                   calls: Caller) -> list[str]:
        """Subnet IDs for a list of IDs and Name tags (each name must name one subnet)."""
        names = sorted(item for item in items if not _SUBNET_ID.match(item))
        ids = [item for item in items if _SUBNET_ID.match(item)]
        missing = [n for n in names if self._cached(("subnet-name", f"{ctx.vpc_id}/{n}")) is None]
        if missing:
            found: dict[str, list[str]] = {}
            async for page in calls.paginate(
                    "DescribeSubnets", service="ec2",
                    Filters=[{"Name": "vpc-id", "Values": [ctx.vpc_id]},
                             {"Name": "tag:Name", "Values": missing}]):
                for subnet in page.get("Subnets", []):
                    self._store(("subnet-zone", subnet["SubnetId"]), subnet["AvailabilityZone"])
                    for tag in subnet.get("Tags") or []:
                        if tag.get("Key") == "Name" and tag.get("Value") in missing:
                            found.setdefault(str(tag["Value"]), []).append(subnet["SubnetId"])
            for name in missing:
                matches = sorted(found.get(name, []))
                if not matches:
                    raise ResolveError(f"no subnet named {name!r} in VPC {ctx.vpc_id}")
                if len(matches) > 1:
                    raise ResolveError(f"subnet name {name!r} matches {len(matches)} subnets in "
                                       f"VPC {ctx.vpc_id} ({', '.join(matches)}); "
                                       "use subnet IDs")
                self._store(("subnet-name", f"{ctx.vpc_id}/{name}"), matches[0])
        ids += [str(self._cached(("subnet-name", f"{ctx.vpc_id}/{name}"))) for name in names]
        return sorted(set(ids))

    async def _zones_of(self, subnets: tuple[str, ...], calls: Caller) -> dict[str, list[str]]:
        missing = [s for s in subnets if self._cached(("subnet-zone", s)) is None]
        if missing:
            async for page in calls.paginate("DescribeSubnets", service="ec2",
                                             SubnetIds=missing):
                for subnet in page.get("Subnets", []):
                    self._store(("subnet-zone", subnet["SubnetId"]), subnet["AvailabilityZone"])
        zones: dict[str, list[str]] = {}
        for subnet_id in subnets:
            zone = self._cached(("subnet-zone", subnet_id))
            if zone is None:
                raise ResolveError(f"subnet {subnet_id} not found")
            zones.setdefault(zone, []).append(subnet_id)
        return zones

    async def _cidrs_of(self, subnets: tuple[str, ...], calls: Caller
                        ) -> dict[str, subnetmappings.SubnetCidrs]:
        missing = [s for s in subnets if self._cached(("subnet-cidrs", s)) is None]
        if missing:
            async for page in calls.paginate("DescribeSubnets", service="ec2",
                                             SubnetIds=missing):
                for subnet in page.get("Subnets", []):
                    self._store(("subnet-cidrs", subnet["SubnetId"]),
                                subnetmappings.SubnetCidrs.of(subnet))
        found: dict[str, subnetmappings.SubnetCidrs] = {}
        for subnet_id in subnets:
            cidrs = self._cached(("subnet-cidrs", subnet_id))
            if cidrs is None:
                raise ResolveError(f"subnet {subnet_id} not found")
            found[subnet_id] = cidrs
        return found

    async def _listener(self, listener: Listener, calls: Caller) -> Listener:
        mtls = listener.mutual_authentication
        if mtls is not None and not mtls.trust_store_resolved:
            assert mtls.trust_store is not None
            arn = await self._trust_store(mtls.trust_store, calls)
            listener = listener.model_copy(update={
                "mutual_authentication": mtls.model_copy(update={"trust_store": arn})})
        actions = await self._actions(listener.default_actions, calls)
        if actions is not None:
            listener = listener.model_copy(update={"default_actions": actions})
        if not isinstance(listener.certificates, CertificateDiscovery):
            return listener
        discovery = listener.certificates
        certs = await self._certificates(calls)
        chosen: list[str] = []
        for host in discovery.hosts:
            covering = sorted(arn for arn, names in certs.items()
                              if any(_covers(name, host) for name in names))
            if discovery.skip_imported_from_secrets:
                covering = [arn for arn in covering
                            if not await self._imported_from_secret(arn, calls)]
            if discovery.authorities:
                covering = [arn for arn in covering
                            if await self._authority(arn, calls) in discovery.authorities]
                if not covering:
                    raise ResolveError(
                        f"no ACM certificate issued by an allowed certificate authority "
                        f"({', '.join(discovery.authorities)}) covers host {host!r}")
            if not covering:
                raise ResolveError(f"no ACM certificate covers host {host!r}")
            chosen.extend(a for a in covering[:1] if a not in chosen)
        return listener.model_copy(update={"certificates": tuple(chosen)})

    async def _trust_store(self, name: str, calls: Caller) -> str:
        key = ("trust-store", name)
        cached = self._cached(key)
        if cached is not None:
            return str(cached)
        try:
            resp = await calls.call("DescribeTrustStores", Names=[name])
        except AWSError as exc:
            if exc.code.removesuffix("Exception") != "TrustStoreNotFound":
                raise
            raise ResolveError(f"no trust store named {name!r}") from None
        stores = [s for s in resp.get("TrustStores", []) if s.get("Name") == name]
        if not stores:
            raise ResolveError(f"no trust store named {name!r}")
        arn = str(stores[0]["TrustStoreArn"])
        self._store(key, arn)
        return arn

    async def _certificates(self, calls: Caller) -> dict[str, list[str]]:
        key = ("acm", "certificates")
        cached = self._cached(key)
        if cached is not None:
            found: dict[str, list[str]] = cached
            return found
        found = {}
        async for page in calls.paginate(
                "ListCertificates", service="acm",
                CertificateStatuses=list(self.settings.certificate_statuses),
                Includes={"keyTypes": list(self.settings.certificate_key_types)}):
            for cert in page.get("CertificateSummaryList", []):
                names = [cert.get("DomainName", "")]
                names += cert.get("SubjectAlternativeNameSummaries", [])
                found[cert["CertificateArn"]] = [n.lower() for n in names if n]
        self._store(key, found)
        return found

    async def _imported_from_secret(self, arn: str, calls: Caller) -> bool:
        """Whether certificate `arn` is one a controller imported from a TLS Secret (its
        `elbv2.k8s.aws/secret` tag) or requested for an Ingress (`elbv2.k8s.aws/ingress`);
        cached like the listing."""
        key = ("acm-from-secret", arn)
        cached = self._cached(key)
        if cached is not None:
            return bool(cached)
        try:
            resp = await calls.call("ListTagsForCertificate", service="acm", CertificateArn=arn)
        except AWSError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
            return True  # deleted since the listing: not a candidate
        found = any(t.get("Key") in (SECRET_TAG, REQUESTED_TAG) for t in resp.get("Tags") or [])
        self._store(key, found)
        return found

    async def _authority(self, arn: str, calls: Caller) -> str:
        """The private CA that issued certificate `arn` ("" for one Amazon issued or
        imported); a certificate's issuer never changes, so it is cached like the listing."""
        key = ("acm-authority", arn)
        cached = self._cached(key)
        if cached is not None:
            return str(cached)
        try:
            resp = await calls.call("DescribeCertificate", service="acm", CertificateArn=arn)
        except AWSError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
            return ""  # deleted since the listing: not a candidate
        authority = str((resp.get("Certificate") or {}).get("CertificateAuthorityArn") or "")
        self._store(key, authority)
        return authority


def _cluster_rank(subnet: dict[str, Any], cluster_name: str, *, check: bool) -> int | None:
    """0: tagged for this cluster; 1: for no cluster; None: for other clusters only, left out
    unless the cluster tag check (SubnetsClusterTagCheck) is off: then it ranks as untagged
    (upstream: the check only decides eligibility; this cluster's tag still wins a zone)."""
    clusters = {str(t.get("Key", ""))[len(_CLUSTER_TAG):] for t in subnet.get("Tags") or []
                if str(t.get("Key", "")).startswith(_CLUSTER_TAG)}
    if cluster_name in clusters:
        return 0
    return 1 if not clusters or not check else None


def _covers(name: str, host: str) -> bool:
    if name.startswith("*."):
        # A wildcard covers exactly one label.
        return fnmatch.fnmatchcase(host, name) and host.count(".") == name.count(".")
    return name == host
