"""The networking step of a TargetGroupBinding reconcile: the rules `spec.networking` asks for,
on the security group of each target's network interface, kept by the shared
`NetworkingManager` together with every other binding's.

It runs before targets are registered (they would fail their health checks without the rules)
and when the binding goes (its finalizer drops its rules, which go unless another binding needs
them). Ports: a number, a named port (resolved to this binding's target ports, which for ip
targets are the pods' container ports of that name), none (every port); a rule without ports
admits every TCP port. The binding's checkpoint covers the settings that decide where rules go,
so a restart with changed settings reconciles it at once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from controller.apis.targetgroupbinding import (
    InvalidSpec,
    Networking,
    NetworkingPeer,
    NetworkingPort,
    TargetGroupBindingSpec,
)
from controller.aws import AWSClientPool, Caller
from controller.networking.enis import InterfaceResolver, NetworkingError, PodAddress
from controller.networking.manager import OWNED_DESCRIPTION, NetworkingManager, PermissionsByGroup
from controller.networking.permissions import Permission
from controller.networking.settings import NetworkingSettings
from controller.targetgroupbinding.targets import Endpoint
from runtime.clock import Clock
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
        return Permission(protocol, low, high, "group", peer.security_group.group_id,
                          OWNED_DESCRIPTION)
    assert peer.ip_block is not None
    cidr = peer.ip_block.cidr
    v6 = ipaddress.ip_network(cidr, strict=False).version == 6
    return Permission(protocol, low, high, "cidr6" if v6 else "cidr", cidr, OWNED_DESCRIPTION)


class BindingNetworking:
    def __init__(self, manager: NetworkingManager, interfaces: InterfaceResolver) -> None:
        self._manager = manager
        self._interfaces = interfaces

    @classmethod
    def create(cls, pool: AWSClientPool, settings: NetworkingSettings, *,
               bindings_with_networking: Callable[[], Iterable[str]],
               clock: Clock) -> BindingNetworking:
        calls = Caller(pool)
        return cls(NetworkingManager(calls, settings, clock=clock,
                                     bindings_with_networking=bindings_with_networking),
                   InterfaceResolver(calls, vpc_id=settings.cluster.vpc_id,
                                     cluster=settings.cluster.name,
                                     group_tags=settings.backend.eni_security_group_tags,
                                     clock=clock))

    def checkpoint_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The spec a binding's checkpoint digests: with networking, also what decides where
        and how its rules go."""
        if not spec.get("networking"):
            return spec
        settings = self._manager.settings
        return {**spec, "networkingContext": {
            "clusterName": settings.cluster.name, "vpcID": settings.cluster.vpc_id,
            "restrictedRules": settings.backend.restricted_rules,
            "eniSecurityGroupTags": dict(sorted(
                settings.backend.eni_security_group_tags.items()))}}

    async def reconcile(self, key: str, spec: TargetGroupBindingSpec, target_type: str,
                        endpoints: list[Endpoint], *,
                        other_pods: Callable[[], Iterable[PodAddress]] = tuple,
                        other_instances: Callable[[], Iterable[str]] = tuple) -> int:
        """Raises NetworkingError (an interface or its group cannot be told; retried) or
        InvalidSpec (the networking cannot be acted on)."""
        if spec.networking is None:
            if not self._manager.knows(key):
                return 0  # never had rules: nothing to drop, nothing to look at
            return await self._manager.reconcile(key, {})
        wanted = await self._permissions(spec.networking, target_type, endpoints,
                                         other_pods, other_instances)
        return await self._manager.reconcile(key, wanted)

    async def release(self, key: str, spec: TargetGroupBindingSpec | None) -> int:
        """The binding is going: its rules go unless another binding needs them."""
        if (spec is None or spec.networking is None) and not self._manager.knows(key):
            return 0
        return await self._manager.forget(key)

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


__all__ = ["BindingNetworking", "NetworkingError", "permissions_for", "pod_address"]
