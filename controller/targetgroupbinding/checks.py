"""What a binding's spec must agree on with its target group. The reconciler checks it before it
registers anything, and admission checks it when the binding is written, with this one
function: a denial and a Warning Event say the same thing."""

from __future__ import annotations

from controller.apis.targetgroupbinding import InvalidSpec, TargetGroupBindingSpec
from controller.targetgroupbinding.targetgroups import TargetGroupInfo

SUPPORTED_TARGET_TYPES = ("ip", "instance")


def check_target_group(spec: TargetGroupBindingSpec, tg: TargetGroupInfo) -> str:
    """The binding's target type (the spec's, else the target group's); raises InvalidSpec when
    the two disagree on target type, IP address family or VPC."""
    shown = tg.name or tg.arn
    if spec.target_type and spec.target_type != tg.target_type:
        raise InvalidSpec(f"targetType {spec.target_type} does not match target group "
                          f"{shown} of type {tg.target_type}")
    target_type = spec.target_type or tg.target_type
    if target_type not in SUPPORTED_TARGET_TYPES:
        raise InvalidSpec(f"target group {shown} has unsupported target type {target_type}")
    family = spec.ip_address_type or "ipv4"
    tg_family = tg.ip_address_type or "ipv4"
    if family != tg_family:
        raise InvalidSpec(f"ipAddressType {family} does not match target group {shown} of IP "
                          f"address type {tg_family}")
    if spec.vpc_id and tg.vpc_id and spec.vpc_id != tg.vpc_id:
        raise InvalidSpec(f"vpcID {spec.vpc_id} does not match target group {shown} in VPC "
                          f"{tg.vpc_id}")
    return target_type


__all__ = ["SUPPORTED_TARGET_TYPES", "check_target_group"]
