"""What a TargetGroupBinding must pass before any target is registered or deregistered: a role to
assume that STS lets the controller assume (`AssumeRoleRefused`), a target group this binding
may act on (`controller.targetgroupaccess`: VPC, cluster, namespace, other bindings), an IP
family and a target type that match the target group's. Each refusal is `InvalidInput` with its
own condition reason: a Warning Event and `Ready=False`, and nothing changes in AWS. Admission
(`admission.py`) makes the same checks with these same functions when the binding is written,
so a denial says what the Event would. The target group a binding recorded as registered into
passes the same ownership checks before anything is deregistered from it."""

from __future__ import annotations

from dataclasses import dataclass

from controller import targetgroupaccess
from controller.apis.targetgroupbinding import InvalidSpec, TargetGroupBindingSpec
from controller.aws import AssumeRoleFailed, Role
from controller.errors import InvalidInput
from controller.targetgroupbinding.targetgroups import TargetGroupInfo
from runtime.objects import Obj, namespace_of
from runtime.store import Store


class AssumeRoleRefused(InvalidInput):
    """STS would not let the controller assume the binding's `iamRoleArnToAssume`."""

    condition_reason = "AssumeRoleFailed"

    @classmethod
    def of(cls, exc: AssumeRoleFailed) -> AssumeRoleRefused:
        return cls(f"{exc.message}; nothing is registered or deregistered ({exc.code})")


class IPAddressTypeMismatch(InvalidInput):
    condition_reason = "IPAddressTypeMismatch"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """Where this controller's target groups live: the cluster's name and VPC."""

    cluster_name: str
    vpc_id: str


def role_of(spec: TargetGroupBindingSpec) -> Role | None:
    """The role the binding's AWS calls are made as; None: the controller's own. (The spec's
    parser has refused what STS would refuse.)"""
    if not spec.iam_role_arn_to_assume:
        return None
    try:
        return Role(arn=spec.iam_role_arn_to_assume,
                    external_id=spec.assume_role_external_id or "")
    except ValueError as exc:
        raise InvalidSpec(f"invalid TargetGroupBinding spec: {exc}") from None


def check_target_group(tgb: Obj, spec: TargetGroupBindingSpec, tg: TargetGroupInfo, *,
                       scope: Scope, bindings: Store) -> str:
    """Raises for a target group this binding may not act on; returns the IP family of its
    targets (the spec's, which must equal the target group's, or the target group's)."""
    targetgroupaccess.check_target_group(tg.facts, namespace=namespace_of(tgb),
                                 vpc_id=spec.vpc_id or scope.vpc_id,
                                 cluster_name=scope.cluster_name)
    others = targetgroupaccess.bindings_of(bindings.by_index, tg.facts)
    targetgroupaccess.check_rivals(tgb, others, tg.facts)
    family = tg.ip_address_type or "ipv4"
    if spec.ip_address_type and spec.ip_address_type != family:
        raise IPAddressTypeMismatch(
            f"ipAddressType {spec.ip_address_type} does not match target group "
            f"{tg.name or tg.arn} of IP address type {family}; nothing is registered or "
            "deregistered")
    return family


def check_role_target_type(spec: TargetGroupBindingSpec, target_type: str | None) -> None:
    """Upstream's rule: instances are the cluster account's, never registered in another
    account's target group (its words, so that a denial reads the same)."""
    if spec.iam_role_arn_to_assume and target_type == "instance":
        raise InvalidSpec("Unable to use instance target type while using assume role")


SUPPORTED_TARGET_TYPES = ("ip", "instance")


def check_target_type(spec: TargetGroupBindingSpec, tg: TargetGroupInfo) -> str:
    """The binding's target type: the spec's, which must be the target group's, or the target
    group's, which must be one the controller registers."""
    if spec.target_type and spec.target_type != tg.target_type:
        raise InvalidSpec(f"targetType {spec.target_type} does not match target group "
                          f"{tg.name or tg.arn} of type {tg.target_type}")
    target_type = spec.target_type or tg.target_type
    if target_type not in SUPPORTED_TARGET_TYPES:
        raise InvalidSpec(f"target group {tg.name or tg.arn} has unsupported target type "
                          f"{target_type}")
    return target_type


def check_recorded(tgb: Obj, tg: TargetGroupInfo, *, scope: Scope) -> None:
    """Raises a `NotOwned` for a target group the binding's record names (the one it registered
    into) but that it may not deregister from. The record is an annotation: whoever may edit
    the binding may write it, so it earns no more than the spec would. The VPC may be the
    cluster's or the one `vpcID` names (the spec may have moved on since)."""
    spec = tgb.get("spec")
    named = spec.get("vpcID") if isinstance(spec, dict) else None
    vpcs = [scope.vpc_id, *([named] if isinstance(named, str) and named else [])]
    refusal: targetgroupaccess.NotOwned | None = None
    for vpc_id in vpcs:
        try:
            targetgroupaccess.check_target_group(tg.facts, namespace=namespace_of(tgb),
                                                 vpc_id=vpc_id, cluster_name=scope.cluster_name)
            return
        except targetgroupaccess.NotOwned as exc:
            refusal = refusal or exc
    assert refusal is not None
    raise refusal


__all__ = ["SUPPORTED_TARGET_TYPES", "AssumeRoleRefused", "IPAddressTypeMismatch", "Scope",
           "check_recorded", "check_role_target_type", "check_target_group",
           "check_target_type", "role_of"]
