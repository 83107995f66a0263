"""Which network interface, and which of its security groups, carries a target's traffic.

- A pod IP's interface is found in the VPC by `DescribeNetworkInterfaces` filtered by `vpc-id`
  and `addresses.private-ip-address`, at most 199 addresses per call (200 filter values, one
  taken by the VPC): upstream's `resolveViaVPCENIs`. Cached by (IP, pod UID) for ten minutes,
  as upstream caches by pod: a new pod reusing an IP is looked up again.
- An instance target's interface is the instance's primary one (device index 0), from
  `DescribeInstances`; cached by instance ID.
A miss may ask for more than it needs: the caller may pass other targets it will ask about soon
(the other bindings' pods, in a paced verification after a restart), and up to 48 of them go
along, so the interfaces of a whole cluster cost a few dozen calls rather than one per
binding.

The group that gets the rules (upstream's `resolveEndpointSGForENI`): the interface's only group,
else the one tagged `kubernetes.io/cluster/<cluster>` (and every
`--service-target-eni-security-group-tags` tag); anything else is ambiguous and reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.aws import Caller
from runtime.clock import Clock, RealClock

ADDRESS_CHUNK = 199
INSTANCE_CHUNK = 100
# Other targets a lookup takes along, at most: enough to cover a cluster in a few dozen calls,
# few enough that each call stays as quick to answer as one target's.
ALSO_AT_MOST = 48
CACHE_TTL = 600.0
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"


class NetworkingError(Exception):
    """A target's security group cannot be told; one line for an Event and a condition."""

    condition_reason = "FailedNetworking"


class AmbiguousSecurityGroup(NetworkingError):
    condition_reason = "AmbiguousSecurityGroup"


@dataclass(frozen=True, slots=True)
class Interface:
    eni_id: str
    groups: tuple[str, ...]


@dataclass(frozen=True, order=True, slots=True)
class PodAddress:
    """A pod's IP and UID (the UID tells a new pod on a reused IP)."""

    ip: str
    uid: str = ""


@dataclass(slots=True)
class _Entry:
    value: Any
    expires: float


class InterfaceResolver:
    def __init__(self, calls: Caller, *, vpc_id: str, cluster: str,
                 group_tags: Mapping[str, str] | None = None, clock: Clock | None = None,
                 ttl: float = CACHE_TTL) -> None:
        self._calls = calls
        self._vpc_id = vpc_id
        self._cluster_tag = CLUSTER_TAG_PREFIX + cluster
        self._cluster = cluster
        self._group_tags = dict(group_tags or {})
        self._clock: Clock = clock or RealClock()
        self._ttl = ttl
        self._pods: dict[PodAddress, _Entry] = {}
        self._instances: dict[str, _Entry] = {}
        self._group_tag_cache: dict[str, _Entry] = {}

    def _fresh(self, cache: Mapping[Any, _Entry], key: Any) -> Any:
        entry = cache.get(key)
        if entry is not None and entry.expires > self._clock.now():
            return entry.value
        return None

    def _store(self, cache: dict[Any, _Entry], key: Any, value: Any) -> None:
        cache[key] = _Entry(value, self._clock.now() + self._ttl)

    # ---- interfaces -------------------------------------------------------------------------

    async def pods(self, pods: Iterable[PodAddress], *,
                   also: Iterable[PodAddress] = ()) -> dict[PodAddress, Interface]:
        wanted = sorted(set(pods))
        missing = [p for p in wanted if self._fresh(self._pods, p) is None]
        if missing:
            extra = sorted({p for p in also if self._fresh(self._pods, p) is None} - set(missing))
            room = min(-len(missing) % ADDRESS_CHUNK, ALSO_AT_MOST)
            await self._look_up_pods([*missing, *extra[:room]])
        found: dict[PodAddress, Interface] = {}
        lost: list[str] = []
        for pod in wanted:
            interface = self._fresh(self._pods, pod)
            if interface is None:
                lost.append(pod.ip)
            else:
                found[pod] = interface
        if lost:
            shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
            raise NetworkingError(f"no network interface in VPC {self._vpc_id} has pod "
                                  f"IP {shown}")
        return found

    async def _look_up_pods(self, pods: Sequence[PodAddress]) -> None:
        by_ip: dict[str, list[PodAddress]] = {}
        for pod in pods:
            by_ip.setdefault(pod.ip, []).append(pod)
        ips = sorted(by_ip)
        for start in range(0, len(ips), ADDRESS_CHUNK):
            chunk = ips[start:start + ADDRESS_CHUNK]
            for eni in await self._interfaces(chunk):
                interface = Interface(str(eni["NetworkInterfaceId"]), tuple(sorted(
                    str(g["GroupId"]) for g in eni.get("Groups") or [])))
                addresses = {str(a.get("PrivateIpAddress")) for a in
                             eni.get("PrivateIpAddresses") or []}
                addresses.add(str(eni.get("PrivateIpAddress")))
                for ip in addresses & set(chunk):
                    for pod in by_ip[ip]:
                        self._store(self._pods, pod, interface)

    async def _interfaces(self, ips: list[str]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Filters": [
                {"Name": "vpc-id", "Values": [self._vpc_id]},
                {"Name": "addresses.private-ip-address", "Values": ips}]}
            if token:
                params["NextToken"] = token
            resp = await self._calls.call("DescribeNetworkInterfaces", service="ec2", **params)
            found.extend(resp.get("NetworkInterfaces") or [])
            token = resp.get("NextToken")
            if not token:
                return found

    async def instances(self, instance_ids: Iterable[str], *,
                        also: Iterable[str] = ()) -> dict[str, Interface]:
        wanted = sorted(set(instance_ids))
        missing = [i for i in wanted if self._fresh(self._instances, i) is None]
        if missing:
            extra = sorted({i for i in also if self._fresh(self._instances, i) is None}
                           - set(missing))
            room = min(-len(missing) % INSTANCE_CHUNK, ALSO_AT_MOST)
            todo = [*missing, *extra[:room]]
            for start in range(0, len(todo), INSTANCE_CHUNK):
                await self._look_up_instances(todo[start:start + INSTANCE_CHUNK])
        found: dict[str, Interface] = {}
        lost = []
        for instance_id in wanted:
            interface = self._fresh(self._instances, instance_id)
            if interface is None:
                lost.append(instance_id)
            else:
                found[instance_id] = interface
        if lost:
            raise NetworkingError(f"instance(s) {', '.join(lost)} have no primary network "
                                  "interface")
        return found

    async def _look_up_instances(self, ids: list[str]) -> None:
        resp = await self._calls.call("DescribeInstances", service="ec2", InstanceIds=ids)
        for reservation in resp.get("Reservations") or []:
            for instance in reservation.get("Instances") or []:
                for eni in instance.get("NetworkInterfaces") or []:
                    if int((eni.get("Attachment") or {}).get("DeviceIndex", -1)) == 0:
                        self._store(self._instances, str(instance["InstanceId"]), Interface(
                            str(eni["NetworkInterfaceId"]),
                            tuple(sorted(str(g["GroupId"]) for g in eni.get("Groups") or []))))

    # ---- the group that gets the rules ------------------------------------------------------

    async def target_groups(self, interfaces: Iterable[Interface]) -> dict[Interface, str]:
        """Each interface's group that gets the rules."""
        unique = sorted(set(interfaces), key=lambda i: i.eni_id)
        needed = sorted({g for i in unique if len(i.groups) > 1 for g in i.groups
                         if self._fresh(self._group_tag_cache, g) is None})
        if needed:
            resp = await self._calls.call("DescribeSecurityGroups", service="ec2",
                                          GroupIds=needed)
            for group in resp.get("SecurityGroups") or []:
                self._store(self._group_tag_cache, str(group["GroupId"]), {
                    str(t["Key"]): str(t.get("Value", "")) for t in group.get("Tags") or []})
        return {i: self._choose(i) for i in unique}

    def _choose(self, interface: Interface) -> str:
        if len(interface.groups) == 1:
            return interface.groups[0]
        matching = []
        for group in interface.groups:
            tags = self._fresh(self._group_tag_cache, group) or {}
            if self._cluster_tag in tags and all(tags.get(k) == v
                                                 for k, v in self._group_tags.items()):
                matching.append(group)
        if len(matching) == 1:
            return matching[0]
        wanted = self._cluster_tag + "".join(f", {k}={v}" for k, v in
                                             sorted(self._group_tags.items()))
        if not interface.groups:
            raise AmbiguousSecurityGroup(f"network interface {interface.eni_id} is in no "
                                         "security group")
        raise AmbiguousSecurityGroup(
            f"network interface {interface.eni_id} has security groups "
            f"{', '.join(interface.groups)}: expected exactly one tagged {wanted}, found "
            f"{len(matching)} (cluster {self._cluster})")


__all__ = ["ADDRESS_CHUNK", "AmbiguousSecurityGroup", "Interface", "InterfaceResolver",
           "NetworkingError", "PodAddress"]
