"""Admission of TargetGroupBinding writes: the defaults a new binding takes from its target
group (the mutating webhook), and the reconciler's checks made when the binding is written (the
validating webhook), with the reconciler's own parser and target-group rules, so that a denial
says what the Warning Event would have said.

Target groups are read through the webhooks' `ReadCache` (controller/aws/readcache.py): anyone
who reaches the webhook port can ask for reviews, so a review costs an AWS call only on a miss,
one per target group at a time, at a bounded rate. A target group that is not there is
remembered for 5 s only, so one created a moment ago is soon seen. When the cache has no answer
in time (`LookupUnavailable`: the rate limit, or AWS's error), the caller fails open: defaults
are left to the reconciler, and checks that need the target group to the reconcile.

A binding with `iamRoleArnToAssume` has its target group in the role's account: admission
checks the role's ARN and external id as the reconciler's parser does, and leaves what needs
the target group (defaults, ownership, the networking policy) to the reconciler, which reads it
as the role; admission never assumes a role for whoever reaches its port.

Updates are checked only when the spec changes, and never while the binding is being deleted:
the controller's own writes (finalizer, checkpoint, status) always go through. A binding with
`spec.networking` is checked against the networking policy each time its spec changes, with the
reconciler's function (`networking.check_networking`) and words; the security groups it names
are read through the same `ReadCache`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from controller.apis import INGRESS_STACK_LABEL, INGRESS_STACK_NAME_LABEL, SERVICE_STACK_NAME_LABEL
from controller.apis.targetgroupbinding import InvalidSpec, TargetGroupBindingSpec, parse_spec
from controller.aws import ReadCache
from controller.errors import InvalidInput
from controller.networking.groupfacts import ReadCacheGroupFacts
from controller.networking.policy import NetworkingPolicy
from controller.targetgroupbinding.checks import (
    SUPPORTED_TARGET_TYPES,
    Scope,
    check_role_target_type,
    check_target_group,
    check_target_type,
    role_of,
)
from controller.targetgroupbinding.networking import check_networking
from controller.targetgroupbinding.targetgroups import TargetGroupInfo, looked_up
from controller.targetgroupbinding.targets import find_service_port
from runtime.objects import Obj, is_deleting, labels_of, namespace_of
from runtime.store import Store

# The spec fields a binding may gain but never change once set; (field, spec attribute).
IMMUTABLE_FIELDS: Final = (("targetGroupARN", "target_group_arn"),
                           ("targetType", "target_type"),
                           ("ipAddressType", "ip_address_type"), ("vpcID", "vpc_id"))
# The CRD's enum for spec.targetGroupProtocol: a target group of another protocol (GENEVE)
# leaves the field unset rather than have the API server refuse the binding.
BINDING_PROTOCOLS: Final = frozenset({"HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "QUIC",
                                      "TCP_QUIC"})
_MANAGED_LABELS: Final = (SERVICE_STACK_NAME_LABEL, INGRESS_STACK_LABEL, INGRESS_STACK_NAME_LABEL)


def _spec_of(obj: Obj) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _managed(obj: Obj) -> bool:
    """Written by the Service or Ingress controller, which gives a binding the new ARN when the
    target group it deployed had to be created again."""
    labels = labels_of(obj)
    return any(label in labels for label in _MANAGED_LABELS)


class BindingAdmission:
    """`reads`: AWS as admission reads it (the networking check reads the security groups a
    binding names there too); `bindings`: the binding cache, with
    `controller.targetgroupaccess.TARGET_GROUP_INDEX`. `networking`: what `spec.networking`
    may ask for (None: not checked), with `services`, the Service cache its target ports are
    read from. Methods that read AWS raise `LookupUnavailable` when there is no answer in
    time."""

    def __init__(self, reads: ReadCache, bindings: Store, scope: Scope, *,
                 networking: NetworkingPolicy | None = None,
                 services: Store | None = None) -> None:
        self.reads = reads
        self._bindings = bindings
        self._scope = scope
        self._networking = networking
        self._services = services
        self._groups = ReadCacheGroupFacts(reads)

    async def _target_group(self, spec: TargetGroupBindingSpec) -> TargetGroupInfo:
        arn, name = spec.target_group_arn, spec.target_group_name
        return looked_up(await self.reads.target_group(arn=arn, name=name), arn=arn, name=name)

    # ---- defaults ---------------------------------------------------------------------------

    async def default(self, tgb: Obj) -> Obj:
        """A new binding with what its target group says filled in where the spec is silent
        (ARN from the name, targetType, ipAddressType, vpcID, targetGroupProtocol); raises
        InvalidSpec when there is no target group to read them from."""
        if is_deleting(tgb):
            return tgb
        spec = parse_spec(tgb)
        if role_of(spec) is not None:
            return tgb  # another account's target group: the reconciler reads it as the role
        tg = await self._target_group(spec)
        out = copy.deepcopy(tgb)
        filled: dict[str, Any] = out.setdefault("spec", {})
        if not spec.target_group_arn:
            filled["targetGroupARN"] = tg.arn
        if not spec.target_type and tg.target_type in SUPPORTED_TARGET_TYPES:
            filled["targetType"] = tg.target_type
        if not spec.ip_address_type:
            filled["ipAddressType"] = tg.ip_address_type or "ipv4"
        if not spec.vpc_id and tg.vpc_id:
            filled["vpcID"] = tg.vpc_id
        if "targetGroupProtocol" not in filled and tg.protocol in BINDING_PROTOCOLS:
            filled["targetGroupProtocol"] = tg.protocol
        return out

    # ---- validation -------------------------------------------------------------------------

    async def validate(self, tgb: Obj, old: Obj | None) -> list[str]:
        """Warnings; raises InvalidSpec (its text is the denial)."""
        if is_deleting(tgb) or (old is not None and _spec_of(old) == _spec_of(tgb)):
            return []
        spec = parse_spec(tgb)
        cross_account = role_of(spec) is not None
        check_role_target_type(spec, spec.target_type)
        if spec.node_selector is not None and spec.target_type == "ip":
            raise InvalidSpec("TargetGroupBinding cannot set nodeSelector when targetType is ip")
        tg: TargetGroupInfo | None = None
        if (old is None or self._check_immutable(tgb, spec, old)) and not cross_account:
            # What the reconciler checks before registering (ownership: VPC, cluster,
            # namespace, other bindings; IP family; target type), with its own functions.
            tg = await self._target_group(spec)
            check_target_group(tgb, spec, tg, scope=self._scope, bindings=self._bindings)
            check_target_type(spec, tg)
        if spec.networking is not None and not cross_account:
            await self._check_networking(tgb, spec, tg)
        return []

    async def _check_networking(self, tgb: Obj, spec: TargetGroupBindingSpec,
                                tg: TargetGroupInfo | None) -> None:
        """The reconciler's networking policy, with the target ports the Service gives (its
        endpoints are not known here)."""
        if self._networking is None or self._networking.unrestricted(namespace_of(tgb)):
            return
        tg = tg or await self._target_group(spec)
        service_port = None
        if self._services is not None:
            key = f"{namespace_of(tgb)}/{spec.service_ref.name}"
            try:
                service_port = find_service_port(self._services.get(key), spec.service_ref.port,
                                                 service_key=key)
            except InvalidInput:
                service_port = None  # the reconciler reports a missing Service
        await check_networking(tgb, spec, tg, spec.target_type or tg.target_type, (),
                               service_port, policy=self._networking, facts=self._groups)

    def _check_immutable(self, tgb: Obj, spec: TargetGroupBindingSpec, old: Obj) -> bool:
        """Raises for a changed immutable field; True when a field was newly set (or a managed
        binding's ARN replaced), which must then agree with the target group."""
        try:
            before: TargetGroupBindingSpec | None = parse_spec(old)
        except InvalidSpec:
            before = None  # stored before anything checked it: every value is new
        changed: list[str] = []
        gained = False
        for name, attr in IMMUTABLE_FIELDS:
            was = getattr(before, attr) if before is not None else None
            now = getattr(spec, attr)
            if was == now:
                continue
            if not was or (name == "targetGroupARN" and now and _managed(tgb)):
                gained = True
            else:
                changed.append(f"spec.{name}")
        if changed:
            raise InvalidSpec("TargetGroupBinding update may not change these fields: "
                              + ",".join(changed))
        return gained


__all__ = ["BINDING_PROTOCOLS", "IMMUTABLE_FIELDS", "BindingAdmission"]
