"""The resolve stage: AWS lookups that turn a stack's placeholders into concrete values.

Subnet discovery picks, per availability zone, the first (by id) subnet of the VPC tagged
`kubernetes.io/role/elb` (internet-facing) or `kubernetes.io/role/internal-elb` (internal).
Certificate discovery picks the ACM certificates whose domain or alternative names cover a
host. Results are cached for `ttl` seconds; an ALB needs subnets in two or more zones.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from controller.deploy.calls import Calls
from controller.deploy.errors import ResolveError
from controller.model import CertificateDiscovery, Listener, LoadBalancer, Stack, SubnetDiscovery
from runtime.clock import Clock, RealClock


@dataclass(frozen=True, kw_only=True)
class ResolverSettings:
    vpc_id: str
    ttl: float = 300.0
    certificate_statuses: tuple[str, ...] = ("ISSUED",)


@dataclass
class _Entry:
    value: Any
    expires: float


@dataclass
class StackResolver:
    settings: ResolverSettings
    clock: Clock = field(default_factory=RealClock)
    _cache: dict[tuple[str, str], _Entry] = field(default_factory=dict, init=False, repr=False)

    async def resolve(self, stack: Stack, calls: Calls) -> Stack:
        update: dict[str, Any] = {}
        lbs = {rid: await self._load_balancer(lb, calls)
               for rid, lb in stack.load_balancers.items()}
        if lbs != stack.load_balancers:
            update["load_balancers"] = lbs
        listeners = {rid: await self._listener(lis, calls)
                     for rid, lis in stack.listeners.items()}
        if listeners != stack.listeners:
            update["listeners"] = listeners
        return stack.model_copy(update=update) if update else stack

    def _cached(self, key: tuple[str, str]) -> Any:
        entry = self._cache.get(key)
        if entry is not None and entry.expires > self.clock.now():
            return entry.value
        return None

    def _store(self, key: tuple[str, str], value: Any) -> None:
        self._cache[key] = _Entry(value, self.clock.now() + self.settings.ttl)

    async def _load_balancer(self, lb: LoadBalancer, calls: Calls) -> LoadBalancer:
        if isinstance(lb.subnets, SubnetDiscovery):
            zones = await self._discover(lb.subnets.role, calls)
            subnets = tuple(sorted(ids[0] for ids in zones.values()))
        else:
            subnets = tuple(lb.subnets)
            zones = await self._zones_of(subnets, calls)
        if not subnets:
            role = lb.subnets.role if isinstance(lb.subnets, SubnetDiscovery) else "?"
            raise ResolveError(f"load balancer {lb.name}: no subnet in VPC "
                               f"{self.settings.vpc_id} is tagged kubernetes.io/role/{role}")
        if lb.type == "application" and len(zones) < 2:
            raise ResolveError(
                f"load balancer {lb.name}: an application load balancer needs subnets in at "
                f"least two availability zones, got {len(zones)} ({', '.join(sorted(zones))})")
        if subnets == tuple(lb.subnets):
            return lb
        return lb.model_copy(update={"subnets": subnets})

    async def _discover(self, role: str, calls: Calls) -> dict[str, list[str]]:
        key = ("subnet-role", role)
        cached = self._cached(key)
        if cached is not None:
            zones: dict[str, list[str]] = cached
            return zones
        zones = {}
        async for page in calls.paginate(
                "DescribeSubnets", service="ec2",
                Filters=[{"Name": "vpc-id", "Values": [self.settings.vpc_id]},
                         {"Name": f"tag:kubernetes.io/role/{role}", "Values": ["1", ""]}]):
            for subnet in page.get("Subnets", []):
                zones.setdefault(subnet["AvailabilityZone"], []).append(subnet["SubnetId"])
                self._store(("subnet-zone", subnet["SubnetId"]), subnet["AvailabilityZone"])
        for ids in zones.values():
            ids.sort()
        self._store(key, zones)
        return zones

    async def _zones_of(self, subnets: tuple[str, ...], calls: Calls) -> dict[str, list[str]]:
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

    async def _listener(self, listener: Listener, calls: Calls) -> Listener:
        if not isinstance(listener.certificates, CertificateDiscovery):
            return listener
        certs = await self._certificates(calls)
        chosen: list[str] = []
        for host in listener.certificates.hosts:
            covering = sorted(arn for arn, names in certs.items()
                              if any(_covers(name, host) for name in names))
            if not covering:
                raise ResolveError(f"no ACM certificate covers host {host!r}")
            chosen.extend(a for a in covering[:1] if a not in chosen)
        return listener.model_copy(update={"certificates": tuple(chosen)})

    async def _certificates(self, calls: Calls) -> dict[str, list[str]]:
        key = ("acm", "certificates")
        cached = self._cached(key)
        if cached is not None:
            found: dict[str, list[str]] = cached
            return found
        found = {}
        async for page in calls.paginate(
                "ListCertificates", service="acm",
                CertificateStatuses=list(self.settings.certificate_statuses)):
            for cert in page.get("CertificateSummaryList", []):
                names = [cert.get("DomainName", "")]
                names += cert.get("SubjectAlternativeNameSummaries", [])
                found[cert["CertificateArn"]] = [n.lower() for n in names if n]
        self._store(key, found)
        return found


def _covers(name: str, host: str) -> bool:
    if name.startswith("*."):
        # A wildcard covers exactly one label.
        return fnmatch.fnmatchcase(host, name) and host.count(".") == name.count(".")
    return name == host
