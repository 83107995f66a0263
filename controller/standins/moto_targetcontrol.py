"""The target control port of ALB target groups in the moto stand-in, as AWS's ELBv2 API
reference describes it (`CreateTargetGroup` `TargetControlPort`, the ALB Target Optimizer's
agent port). Applied with `moto_fidelity` by `MotoStandIn`; moto 5.2 drops the parameter and
never answers it.

- `CreateTargetGroup`: `TargetControlPort` (1 to 65535) for HTTP and HTTPS target groups of
  instance or ip targets, else `ValidationError`; fixed once the group exists (no other
  operation takes it).
- `DescribeTargetGroups` answers it.
"""

from __future__ import annotations

from typing import Any

_applied = False


def apply() -> None:
    """Patch moto's ELBv2 response and backend (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.responses import ELBV2Response

    original = ELBV2Response.create_target_group

    def create_target_group(self: Any) -> Any:
        raw = self._get_param("TargetControlPort")
        if raw is None:
            return original(self)
        port = int(raw)
        protocol = self._get_param("Protocol")
        target_type = self._get_param("TargetType") or "instance"
        if not 1 <= port <= 65535:
            raise ELBClientError("ValidationError",
                                 f"TargetControlPort {port} must be between 1 and 65535")
        if protocol not in ("HTTP", "HTTPS") or target_type not in ("instance", "ip"):
            raise ELBClientError("ValidationError", "TargetControlPort is supported only for "
                                 "HTTP and HTTPS target groups of instance or ip targets")
        result = original(self)
        [group] = list(self.elbv2_backend.describe_target_groups(
            load_balancer_arn=None, target_group_arns=[], names=[self._get_param("Name")]))
        group.target_control_port = port
        return result

    ELBV2Response.create_target_group = create_target_group  # type: ignore[method-assign]
    _applied = True


__all__ = ["apply"]
