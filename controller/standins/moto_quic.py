"""QUIC in the moto stand-in, as AWS's ELBv2 API reference describes it. Applied with
`moto_fidelity` by `MotoStandIn`; moto 5.2 refuses both protocols (`ValidationError`, "Member
must satisfy enum value set") and ignores `QuicServerId`.

- `CreateTargetGroup`: `Protocol` `QUIC` or `TCP_QUIC` for instance and ip targets (otherwise
  `ValidationError`); the group behaves as the UDP or TCP_UDP group it carries (moto's
  defaults and checks for those), and is described with its own protocol.
- `CreateListener` and `ModifyListener`: `QUIC` and `TCP_QUIC` on network load balancers
  only; such a listener forwards only to target groups of its own protocol, and a QUIC or
  TCP_QUIC target group only from a listener of its protocol (`IncompatibleProtocols`).
- `RegisterTargets` (`TargetDescription.QuicServerId`): "required if the protocol is QUIC or
  TCP_QUIC and can't be used with other protocols"; `0x` and 16 lowercase hexadecimal digits;
  unique (here: within the target group); "You can't modify the server ID for a registered
  target" (registering it again with another one is `ValidationError`).
- `DescribeTargetHealth` answers each target's `QuicServerId`.
"""

from __future__ import annotations

import re
from typing import Any, Final

QUIC_PROTOCOLS: Final = {"QUIC": "UDP", "TCP_QUIC": "TCP_UDP"}
_SERVER_ID: Final = re.compile(r"0x[0-9a-f]{16}")
_applied = False


def apply() -> None:
    """Patch moto's ELBv2 backend (idempotent); after `moto_fidelity.apply`."""
    global _applied
    if _applied:
        return
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import ELBv2Backend, FakeHealthStatus, FakeTargetGroup

    def fail(code: str, message: str) -> ELBClientError:
        return ELBClientError(code, message)

    create_tg = ELBv2Backend.create_target_group

    def create_target_group(self: Any, name: str, **kwargs: Any) -> Any:
        protocol = kwargs.get("protocol")
        if protocol not in QUIC_PROTOCOLS:
            return create_tg(self, name, **kwargs)
        if (kwargs.get("target_type") or "instance") not in ("instance", "ip"):
            raise fail("ValidationError", f"Target type '{kwargs.get('target_type')}' is not "
                       f"supported for target groups with the {protocol} protocol")
        group = create_tg(self, name, **{**kwargs, "protocol": QUIC_PROTOCOLS[protocol]})
        group.protocol = protocol
        return group

    def check_forwards(backend: Any, protocol: str, actions: list[Any]) -> None:
        for action in actions:
            data = action if isinstance(action, dict) else getattr(action, "data", {})
            if str(data.get("Type", data.get("type", ""))).lower() != "forward":
                continue
            for arn in backend._get_target_group_arns_from(action_data=data):
                group = backend.target_groups.get(arn)
                if group is None:
                    continue
                quic = protocol in QUIC_PROTOCOLS or group.protocol in QUIC_PROTOCOLS
                if quic and group.protocol != protocol:
                    raise fail("IncompatibleProtocols",
                               f"The target group {group.name} uses protocol {group.protocol}, "
                               f"which is incompatible with listener protocol {protocol}")

    create_listener = ELBv2Backend.create_listener

    def create(self: Any, load_balancer_arn: str, protocol: str, port: str, ssl_policy: str,
               certificate: str | None, actions: list[dict[str, Any]],
               alpn_policy: list[str] | None = None,
               tags: list[dict[str, str]] | None = None) -> Any:
        check_forwards(self, protocol, actions)
        if protocol not in QUIC_PROTOCOLS:
            return create_listener(self, load_balancer_arn, protocol, port, ssl_policy,
                                   certificate, actions, alpn_policy, tags)
        balancer = self.load_balancers.get(load_balancer_arn)
        if balancer is not None and balancer.type != "network":
            raise fail("InvalidConfigurationRequest", f"Protocol {protocol} is supported by "
                       "network load balancers only")
        listener = create_listener(self, load_balancer_arn, QUIC_PROTOCOLS[protocol], port,
                                   ssl_policy, certificate, actions, alpn_policy, tags)
        listener.protocol = protocol
        return listener

    modify_listener = ELBv2Backend.modify_listener

    def modify(self: Any, arn: str, port: str | None = None, protocol: str | None = None,
               ssl_policy: str | None = None, certificates: list[dict[str, Any]] | None = None,
               actions: list[dict[str, Any]] | None = None) -> Any:
        current = self.describe_listeners(load_balancer_arn=None, listener_arns=[arn])[0]
        wanted = protocol or current.protocol
        check_forwards(self, wanted, actions or [])
        if wanted not in QUIC_PROTOCOLS:
            return modify_listener(self, arn, port, protocol, ssl_policy, certificates,
                                   actions)
        listener = modify_listener(self, arn, port, QUIC_PROTOCOLS[wanted], ssl_policy,
                                   certificates, actions)
        listener.protocol = wanted
        return listener

    register = FakeTargetGroup.register

    def register_quic(self: Any, targets: list[dict[str, Any]]) -> None:
        quic = self.protocol in QUIC_PROTOCOLS
        ids: dict[str, str] = {t["Id"]: t["QuicServerId"] for t in self.targets.values()
                               if t.get("QuicServerId")}
        for target in targets:
            server_id = target.get("QuicServerId")
            if not quic:
                if server_id is not None:
                    raise fail("ValidationError", "QuicServerId can be used only with target "
                               "groups of protocol QUIC or TCP_QUIC")
                continue
            if server_id is None:
                raise fail("ValidationError", f"A QuicServerId is required for target "
                           f"{target['Id']} of a {self.protocol} target group")
            if _SERVER_ID.fullmatch(str(server_id)) is None:
                raise fail("ValidationError", f"QuicServerId '{server_id}' must be 0x followed "
                           "by 16 lowercase hexadecimal characters")
            known = ids.get(target["Id"])
            if known is not None and known != server_id:
                raise fail("ValidationError", f"Target {target['Id']} is registered with "
                           f"QuicServerId {known}; deregister it to change its server ID")
            if server_id in ids.values() and known != server_id:
                raise fail("ValidationError", f"QuicServerId {server_id} is already in use")
            ids[target["Id"]] = server_id
        register(self, targets)
        if quic:
            for target in targets:
                self.targets[target["Id"]]["QuicServerId"] = target["QuicServerId"]

    health_for = FakeTargetGroup.health_for

    def health_with_server_id(self: Any, target: dict[str, Any], ec2_backend: Any) -> Any:
        status = health_for(self, target, ec2_backend)
        registered = self.targets.get(target["Id"]) or {}
        setattr(status, "quic_server_id", registered.get("QuicServerId"))  # noqa: B010
        return status

    def target(self: Any) -> dict[str, Any]:
        found: dict[str, Any] = {"Id": self.instance_id, "Port": self.port}
        server_id = getattr(self, "quic_server_id", None)
        if server_id:
            found["QuicServerId"] = server_id
        return found

    ELBv2Backend.create_target_group = create_target_group  # type: ignore[method-assign]
    ELBv2Backend.create_listener = create  # type: ignore[method-assign]
    ELBv2Backend.modify_listener = modify  # type: ignore[method-assign]
    FakeTargetGroup.register = register_quic  # type: ignore[method-assign]
    FakeTargetGroup.health_for = health_with_server_id  # type: ignore[method-assign]
    FakeHealthStatus.target = property(target)  # type: ignore[method-assign,assignment]
    _applied = True


__all__ = ["QUIC_PROTOCOLS", "apply"]
