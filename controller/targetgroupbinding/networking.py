"""The networking step of a TargetGroupBinding reconcile: the rules `spec.networking` asks for,
checked against the networking policy (`controller.networking.policy`), on the security group
of each target's network interface, kept by the shared `NetworkingManager` together with every
other binding's.

The policy is checked while the binding is built, with the words admission uses
(`check_networking`), before anything is written: a refusal is a Warning Event and
`Ready=False`, and the binding needs no rule (what it had goes). The rules are placed before
targets are registered (they would fail their health checks without them) and dropped when the
binding goes (its finalizer; they go unless another binding needs them). Ports: a number, a
named port (resolved to this binding's target ports, which for ip targets are the pods'
container ports of that name), none (every port); a rule without ports admits every TCP port.
The binding's checkpoint covers the settings that decide where rules go and whether its
namespace has the administrator's grant, so a restart with them changed reconciles it at once.

The manager keeps each group to what every binding in the cache needs: it reads them through
`BindingClaims` (a binding's spec parsed once per version of the object).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from controller.apis.targetgroupbinding import (
    InvalidSpec,
    Networking,
    NetworkingPeer,
    NetworkingPort,
    TargetGroupBindingSpec,
    parse_spec,
)
from controller.aws import AWSClientPool, Caller
from controller.networking.enis import InterfaceResolver, NetworkingError, PodAddress
from controller.networking.groupfacts import GroupFactsCache, GroupFactsSource
from controller.networking.manager import Claim, NetworkingManager, PermissionsByGroup
from controller.networking.permissions import Permission
from controller.networking.policy import (
    BindingScope,
    NetworkingNotAllowed,
    NetworkingPolicy,
    check,
    claimed_rules,
    group_sources,
    target_group_stacks,
)
from controller.networking.settings import NetworkingSettings
from controller.targetgroupbinding.targetgroups import TargetGroupInfo
from controller.targetgroupbinding.targets import Endpoint
from runtime.clock import Clock
from runtime.objects import Obj, key_of, meta, namespace_of
from runtime.reconcile import NORMAL, reconcile_priority

ALL_PORTS = (0, 65535)


def pod_address(endpoint: Endpoint) -> PodAddress:
    """ip endpoints carry `<ip>:<port>:<pod uid>` as their checkpoint id."""
    prefix = endpoint.target.identifier + ":"
    uid = endpoint.checkpoint_id[len(prefix):] if endpoint.checkpoint_id.startswith(prefix) \
        else ""
    return PodAddress(endpoint.target.id, uid)


def permissions_for(networking: Networking, *, target_ports: Iterable[int] | None
                    ) -> list[Permission]:
    """The rules `networking` asks for; `target_ports` resolve named ports (None: they
    cannot be resolved, as for instance targets)."""
    found: list[Permission] = []
    for rule in networking.ingress:
        ports = rule.ports or (NetworkingPort(protocol="TCP", port=None),)
        for peer in rule.from_:
            for port in ports:
                for low, high in _ranges(port, target_ports):
                    found.append(_permission(peer, port.protocol.lower(), low, high))
    return found


def _ranges(port: NetworkingPort, target_ports: Iterable[int] | None
            ) -> list[tuple[int, int]]:
    if port.port is None:
        return [ALL_PORTS]
    if isinstance(port.port, int):
        return [(port.port, port.port)]
    if target_ports is None:
        raise InvalidSpec(f"networking port {port.port!r}: named ports can only be used with "
                          "ip targets")
    return [(p, p) for p in sorted(set(target_ports))]


def _permission(peer: NetworkingPeer, protocol: str, low: int, high: int) -> Permission:
    if peer.security_group is not None:
        return Permission(protocol, low, high, "group", peer.security_group.group_id)
    assert peer.ip_block is not None
    cidr = peer.ip_block.cidr
    v6 = ipaddress.ip_network(cidr, strict=False).version == 6
    return Permission(protocol, low, high, "cidr6" if v6 else "cidr", cidr)


def networking_version(spec: Mapping[str, Any]) -> str:
    """What a binding's networking is, as a string (its known rules are current while the
    cache's is the same)."""
    return json.dumps(spec.get("networking"), sort_keys=True, separators=(",", ":"),
                      default=str)


# ---- the policy check (reconcile and admission) ----------------------------------------------

def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def binding_ports(target_type: str, service_port: Mapping[str, Any] | None,
                  endpoints: Iterable[Endpoint], tg: TargetGroupInfo) -> frozenset[int] | None:
    """The binding's target ports (its endpoints', the Service port's numeric target port for
    ip targets, its node port for instance targets) and its target group's health-check port;
    None while its target ports cannot be told (ip targets of a named port, no endpoints)."""
    ports = {e.target.port for e in endpoints}
    known = bool(ports)
    if service_port is not None:
        if target_type == "instance":
            own = _int(service_port.get("nodePort"))
        else:
            own = _int(service_port.get("targetPort", service_port.get("port")))
        if own is not None:
            ports.add(own)
            known = True
    if not known:
        return None
    if tg.health_check_port is not None:
        ports.add(tg.health_check_port)
    return frozenset(ports)


async def check_networking(tgb: Obj, spec: TargetGroupBindingSpec, tg: TargetGroupInfo,
                           target_type: str, endpoints: Iterable[Endpoint],
                           service_port: Mapping[str, Any] | None, *,
                           policy: NetworkingPolicy, facts: GroupFactsSource) -> None:
    """Raises NetworkingNotAllowed when the binding's networking exceeds what its namespace
    may have; the same words at admission (no endpoints known) and in the reconciler."""
    namespace = namespace_of(tgb)
    if spec.networking is None or policy.unrestricted(namespace):
        return
    found = await facts.load(group_sources(spec.networking))
    scope = BindingScope(namespace=namespace,
                         stacks=target_group_stacks(tg.tags, cluster=policy.cluster,
                                                    namespace=namespace),
                         ports=binding_ports(target_type, service_port, endpoints, tg))
    check(spec.networking, scope=scope, policy=policy, facts=found)


# ---- what every binding in the cache could need ----------------------------------------------

class BindingClaims:
    """The manager's view of the bindings with networking in the cache: one `Claim` each,
    parsed once per resourceVersion (every reconcile asks for all of them)."""

    def __init__(self, bindings: Callable[[], Iterable[Obj]], policy: NetworkingPolicy) -> None:
        self._bindings = bindings
        self._policy = policy
        self._memo: dict[str, tuple[str, Claim]] = {}

    def __call__(self) -> list[Claim]:
        memo: dict[str, tuple[str, Claim]] = {}
        for obj in self._bindings():
            spec = obj.get("spec")
            if not isinstance(spec, dict) or not spec.get("networking"):
                continue
            key = key_of(obj)
            version = str(meta(obj).get("resourceVersion") or "")
            seen = self._memo.get(key)
            memo[key] = seen if seen is not None and seen[0] == version else (
                version, self._claim(obj, spec))
        self._memo = memo
        return [claim for _, claim in memo.values()]

    def _claim(self, obj: Obj, spec: Mapping[str, Any]) -> Claim:
        namespace = namespace_of(obj)
        try:
            networking = parse_spec(obj).networking
        except InvalidSpec:
            networking = None  # cannot be acted on: it needs nothing
        rules = () if networking is None else tuple(claimed_rules(
            networking, namespace=namespace, policy=self._policy))
        return Claim(key=key_of(obj), uid=str(meta(obj).get("uid") or ""),
                     version=networking_version(spec), namespace=namespace, rules=rules)


class BindingNetworking:
    def __init__(self, manager: NetworkingManager, interfaces: InterfaceResolver) -> None:
        self._manager = manager
        self._interfaces = interfaces

    @classmethod
    def create(cls, pool: AWSClientPool, settings: NetworkingSettings, *,
               policy: NetworkingPolicy, bindings: Callable[[], Iterable[Obj]],
               clock: Clock) -> BindingNetworking:
        """`bindings`: the binding cache's objects."""
        calls = Caller(pool)
        return cls(NetworkingManager(calls, settings, policy=policy, clock=clock,
                                     claims=BindingClaims(bindings, policy),
                                     facts=GroupFactsCache(calls, clock=clock)),
                   InterfaceResolver(calls, vpc_id=settings.cluster.vpc_id,
                                     cluster=settings.cluster.name,
                                     group_tags=settings.backend.eni_security_group_tags,
                                     clock=clock))

    @property
    def manager(self) -> NetworkingManager:
        return self._manager

    def checkpoint_spec(self, spec: dict[str, Any], *, namespace: str) -> dict[str, Any]:
        """The spec a binding's checkpoint digests: with networking, also what decides where
        and how its rules go, and the administrator's grant to its namespace."""
        if not spec.get("networking"):
            return spec
        settings = self._manager.settings
        context: dict[str, Any] = {
            "clusterName": settings.cluster.name, "vpcID": settings.cluster.vpc_id,
            "restrictedRules": settings.backend.restricted_rules,
            "eniSecurityGroupTags": dict(sorted(
                settings.backend.eni_security_group_tags.items()))}
        if self._manager.policy.unrestricted(namespace):
            context["unrestricted"] = True  # absent otherwise: ungranted checkpoints stay
        return {**spec, "networkingContext": context}

    async def check(self, tgb: Obj, spec: TargetGroupBindingSpec, tg: TargetGroupInfo,
                    target_type: str, endpoints: Iterable[Endpoint],
                    service_port: Mapping[str, Any] | None, *,
                    reread: Callable[[], Any] | None = None) -> None:
        """The policy check: raises NetworkingNotAllowed (the caller then reports the binding
        `refused`). `reread`: the target group read afresh (a cached one may predate a new
        health-check port), tried once before refusing."""
        if spec.networking is None:
            return
        targets = list(endpoints)
        policy, facts = self._manager.policy, self._manager.facts
        try:
            await check_networking(tgb, spec, tg, target_type, targets, service_port,
                                   policy=policy, facts=facts)
            return
        except NetworkingNotAllowed as exc:
            refused = exc
        if reread is not None:
            fresh: TargetGroupInfo = await reread()
            try:
                await check_networking(tgb, spec, fresh, target_type, targets, service_port,
                                       policy=policy, facts=facts)
                return
            except NetworkingNotAllowed as exc:
                refused = exc
        raise refused

    async def refused(self, tgb: Obj) -> None:
        """The binding cannot be acted on (bad input, a refusal): it needs no rule, and what
        it had goes."""
        spec = tgb.get("spec")
        key = key_of(tgb)
        if (isinstance(spec, dict) and spec.get("networking")) or self._manager.knows(key):
            await self._manager.refuse(key, networking_version(
                spec if isinstance(spec, dict) else {}))

    async def reconcile(self, tgb: Obj, spec: TargetGroupBindingSpec, target_type: str,
                        endpoints: list[Endpoint], *,
                        other_pods: Callable[[], Iterable[PodAddress]] = tuple,
                        other_instances: Callable[[], Iterable[str]] = tuple) -> int:
        """Raises NetworkingError (an interface or its group cannot be told; retried: until
        then the binding holds back what it could need) or InvalidSpec (the networking cannot
        be acted on: the caller reports it `refused`)."""
        key = key_of(tgb)
        version = networking_version(tgb.get("spec") or {})
        if spec.networking is None:
            if not self._manager.knows(key):
                return 0  # never had rules: nothing to drop, nothing to look at
            return await self._manager.reconcile(key, version, {})
        try:
            wanted = await self._permissions(spec.networking, target_type, endpoints,
                                             other_pods, other_instances)
        except NetworkingError:
            self._manager.unresolved(key)
            raise
        return await self._manager.reconcile(key, version, wanted)

    async def release(self, tgb: Obj) -> int:
        """The binding is going: its rules go unless another binding needs them."""
        key = key_of(tgb)
        spec = tgb.get("spec")
        if not (isinstance(spec, dict) and spec.get("networking")) \
                and not self._manager.knows(key):
            return 0
        return await self._manager.forget(key, str(meta(tgb).get("uid") or ""))

    async def _permissions(self, networking: Networking, target_type: str,
                           endpoints: list[Endpoint],
                           other_pods: Callable[[], Iterable[PodAddress]],
                           other_instances: Callable[[], Iterable[str]]) -> PermissionsByGroup:
        if not endpoints:
            return {}
        # A paced verification fills its lookups with the other bindings' targets (after a
        # restart they all come, and a few calls then cover them); a real change asks for its
        # own only, which AWS answers fastest.
        verifying = reconcile_priority() < NORMAL
        if target_type == "ip":
            pods = [pod_address(e) for e in endpoints]
            interfaces = list((await self._interfaces.pods(
                pods, also=_lazy(other_pods) if verifying else ())).values())
            permissions = permissions_for(networking,
                                          target_ports=[e.target.port for e in endpoints])
        else:
            instances = [e.target.id for e in endpoints]
            interfaces = list((await self._interfaces.instances(
                instances, also=_lazy(other_instances) if verifying else ())).values())
            permissions = permissions_for(networking, target_ports=None)
        groups = await self._interfaces.target_groups(interfaces)
        return {group: list(permissions) for group in sorted(set(groups.values()))}


def _lazy(source: Callable[[], Iterable[Any]]) -> Iterator[Any]:
    """The other targets, computed only if an interface lookup happens."""
    yield from source()


__all__ = ["BindingClaims", "BindingNetworking", "NetworkingError", "binding_ports",
           "check_networking", "networking_version", "permissions_for", "pod_address"]
