"""The managed TargetGroupBindings of a stack (a Service's or an Ingress group's), as
Kubernetes objects: what they should look like, whether the cached ones already do, and the
writes that make them so.

A managed binding carries its stack's labels (upstream's `service.k8s.aws/stack-*` or
`ingress.k8s.aws/stack*`); the TargetGroupBinding controller registers its targets.
Comparisons look at the spec and the stack's labels only: annotations are not ours (the TGB
controller writes its `elbv2.k8s.aws/checkpoint*` there), so they are neither compared nor
overwritten. The TargetGroupBinding mutating webhook fills `ADMISSION_DEFAULTS` in from the
target group when a binding is created, and admission keeps them from changing: a binding that
has them is still what the model wants, and an update keeps them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from controller.apis import TARGETGROUPBINDINGS
from controller.deploy import ResolvedTargetGroupBinding
from controller.model import TargetGroupBindingResource
from runtime.client import KubeClient
from runtime.errors import AlreadyExists, NotFound
from runtime.objects import Obj

ADMISSION_DEFAULTS: Final = ("vpcID", "targetGroupProtocol")


def _comparable(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """`existing` without the admission defaults the model does not set itself."""
    return {k: v for k, v in existing.items()
            if k not in ADMISSION_DEFAULTS or k in desired}


def desired_spec(resource: TargetGroupBindingResource, target_group_arn: str) -> Obj:
    spec: Obj = {
        "targetGroupARN": target_group_arn,
        "targetType": resource.target_type,
        "serviceRef": {"name": resource.service_ref.name, "port": resource.service_ref.port},
        "ipAddressType": resource.ip_address_type,
    }
    if resource.multi_cluster_target_group:
        spec["multiClusterTargetGroup"] = True
    if resource.node_selector:
        spec["nodeSelector"] = {"matchLabels": dict(resource.node_selector)}
    return spec


def desired_object(binding: ResolvedTargetGroupBinding) -> Obj:
    resource = binding.spec
    return {
        "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
        "metadata": {"name": resource.name, "namespace": resource.namespace,
                     "labels": dict(resource.labels)},
        "spec": desired_spec(resource, binding.target_group_arn),
    }


def _labels_hold(existing: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def up_to_date(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return (_comparable(existing.get("spec") or {}, desired["spec"]) == desired["spec"]
            and _labels_hold(existing, desired["metadata"]["labels"]))


def matches_model(existing: Mapping[str, Any] | None,
                  resource: TargetGroupBindingResource) -> bool:
    """Whether a cached binding already is what the model wants, judged without AWS: the
    target group ARN is taken on trust from the object (the deploy that wrote it knew it)."""
    if existing is None or (existing.get("metadata") or {}).get("deletionTimestamp"):
        return False
    spec = existing.get("spec") or {}
    arn = spec.get("targetGroupARN")
    if not isinstance(arn, str) or not arn:
        return False
    desired = desired_spec(resource, arn)
    return _comparable(spec, desired) == desired and _labels_hold(existing, resource.labels)


class BindingWriter:
    """Creates, updates and deletes managed bindings; every method returns how many writes it
    made, so that a converged reconcile can tell it made none."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def apply(self, wanted: Iterable[ResolvedTargetGroupBinding],
                    cached: Mapping[str, Obj]) -> int:
        """`cached`: the managed bindings of this stack in the cache, by name."""
        writes = 0
        for binding in wanted:
            desired = desired_object(binding)
            existing = cached.get(binding.spec.name)
            if existing is not None and up_to_date(existing, desired):
                continue
            writes += await self._put(desired, existing)
        return writes

    async def _put(self, desired: Obj, existing: Obj | None) -> int:
        meta = desired["metadata"]
        if existing is None:
            try:
                await self._client.create(TARGETGROUPBINDINGS, desired, meta["namespace"])
                return 1
            except AlreadyExists:
                # The cache lags behind an earlier reconcile's create: compare with the real one.
                existing = await self._client.get(TARGETGROUPBINDINGS, meta["name"],
                                                  meta["namespace"])
                if up_to_date(existing, desired):
                    return 0
        updated = copy.deepcopy(existing)
        kept = {k: v for k, v in (existing.get("spec") or {}).items()
                if k in ADMISSION_DEFAULTS and k not in desired["spec"]}
        updated["spec"] = {**desired["spec"], **kept}
        labels = updated["metadata"].get("labels") or {}
        updated["metadata"]["labels"] = {**labels, **meta["labels"]}
        updated.setdefault("apiVersion", TARGETGROUPBINDINGS.api_version)
        updated.setdefault("kind", TARGETGROUPBINDINGS.kind)
        await self._client.update(TARGETGROUPBINDINGS, updated)
        return 1

    async def delete(self, bindings: Iterable[Obj]) -> int:
        """Delete the bindings not already being deleted (their finalizer deregisters targets)."""
        writes = 0
        for obj in bindings:
            meta = obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            try:
                await self._client.delete(TARGETGROUPBINDINGS, str(meta["name"]),
                                          str(meta["namespace"]))
                writes += 1
            except NotFound:
                continue
        return writes


__all__ = ["ADMISSION_DEFAULTS", "BindingWriter", "desired_object", "desired_spec",
           "matches_model", "up_to_date"]
