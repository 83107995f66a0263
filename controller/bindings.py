"""The managed TargetGroupBindings of a stack (a Service's or an Ingress group's), as
Kubernetes objects: what they should look like, whether the cached ones already do, and the
writes that make them so.

A managed binding carries its stack's labels (upstream's `service.k8s.aws/stack-*` or
`ingress.k8s.aws/stack*`); the TargetGroupBinding controller registers its targets.
Comparisons look at the spec and the stack's labels only: annotations are not ours (the TGB
controller writes its `elbv2.k8s.aws/checkpoint*` there), so they are neither compared nor
overwritten.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from controller.deploy import ResolvedTargetGroupBinding
from controller.model import Ref, SharedBackendSecurityGroup, TargetGroupBindingResource
from runtime.client import KubeClient
from runtime.errors import AlreadyExists, NotFound
from runtime.objects import Obj


def desired_spec(resource: TargetGroupBindingResource, target_group_arn: str,
                 networking: Obj | None = None) -> Obj:
    """`networking`: the resource's networking with its security group IDs filled in."""
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
    if networking is not None:
        spec["networking"] = copy.deepcopy(networking)
    return spec


_ANY_GROUP = object()


def _networking_shape(resource: TargetGroupBindingResource) -> Any:
    """The networking the model wants, with the IDs only a deploy knows left open."""
    if resource.networking is None:
        return None
    rules = []
    for rule in resource.networking.ingress:
        peers: list[Any] = []
        for peer in rule.from_:
            group = peer.security_group
            if group is None:
                peers.append({"ipBlock": {"cidr": peer.ip_block}})
            elif isinstance(group, Ref | SharedBackendSecurityGroup):
                peers.append({"securityGroup": {"groupID": _ANY_GROUP}})
            else:
                peers.append({"securityGroup": {"groupID": group}})
        ports = [{"protocol": p.protocol, **({"port": p.port} if p.port is not None else {})}
                 for p in rule.ports]
        rules.append({"from": peers, "ports": ports})
    return {"ingress": rules}


def _shape_holds(have: Any, want: Any) -> bool:
    if want is _ANY_GROUP:
        return isinstance(have, str) and bool(have)
    if isinstance(want, dict):
        return (isinstance(have, dict) and set(have) == set(want)
                and all(_shape_holds(have[k], v) for k, v in want.items()))
    if isinstance(want, list):
        return (isinstance(have, list) and len(have) == len(want)
                and all(_shape_holds(h, w) for h, w in zip(have, want, strict=True)))
    return bool(have == want)


def desired_object(binding: ResolvedTargetGroupBinding) -> Obj:
    resource = binding.spec
    return {
        "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
        "metadata": {"name": resource.name, "namespace": resource.namespace,
                     "labels": dict(resource.labels)},
        "spec": desired_spec(resource, binding.target_group_arn, binding.networking),
    }


def _labels_hold(existing: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def up_to_date(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return (existing.get("spec") == desired["spec"]
            and _labels_hold(existing, desired["metadata"]["labels"]))


def matches_model(existing: Mapping[str, Any] | None,
                  resource: TargetGroupBindingResource) -> bool:
    """Whether a cached binding already is what the model wants, judged without AWS: the
    target group ARN and the security group IDs only a deploy knows are taken on trust from
    the object (the deploy that wrote them knew them)."""
    if existing is None or (existing.get("metadata") or {}).get("deletionTimestamp"):
        return False
    spec = dict(existing.get("spec") or {})
    arn = spec.get("targetGroupARN")
    networking = spec.pop("networking", None)
    return (isinstance(arn, str) and bool(arn)
            and spec == desired_spec(resource, arn)
            and _shape_holds(networking, _networking_shape(resource))
            and _labels_hold(existing, resource.labels))


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
        updated["spec"] = desired["spec"]
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


__all__ = ["BindingWriter", "desired_object", "desired_spec", "matches_model", "up_to_date"]
