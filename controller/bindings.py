"""The managed TargetGroupBindings of a stack (a Service's or an Ingress group's), as
Kubernetes objects: what they should look like, whether the cached ones already do, and the
writes that make them so.

A managed binding carries its stack's labels (upstream's `service.k8s.aws/stack-*` or
`ingress.k8s.aws/stack*`); the TargetGroupBinding controller registers its targets.

Identity, as upstream's (pkg/deploy/elbv2/target_group_binding_synthesizer.go): a stack's
binding is the one that points at the target group, whatever its name. The model's name is
used only to create one; an existing binding is never renamed, which would mean deleting it,
and its finalizer would deregister every target of a target group the load balancer still
forwards to. Bindings that point at no wanted target group are deleted only after the deploy
moved the listeners away from theirs (the caller's order).

Comparisons look at the spec fields this controller writes (`networking` included: the load
balancer's group admitted to the targets) and the stack's labels only. Other spec fields (the
`vpcID` and `targetGroupProtocol` upstream or the mutating webhook fill in from the target group)
are kept as they are, and annotations are not ours (the TGB controller writes its
`elbv2.k8s.aws/checkpoint*` there).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.apis import TARGETGROUPBINDINGS
from controller.deploy import ResolvedTargetGroupBinding
from controller.model import Ref, SharedBackendSecurityGroup, TargetGroupBindingResource
from runtime.client import KubeClient
from runtime.errors import AlreadyExists, NotFound
from runtime.objects import Obj, is_deleting

ARN_KEY = "targetGroupARN"
_WAITING, _TAKEN = -1, -2  # `BindingWriter._put`: not written, and why
# The spec fields this controller writes; any other field is left as someone else wrote it.
MANAGED_KEYS = (ARN_KEY, "targetType", "serviceRef", "ipAddressType",
                "multiClusterTargetGroup", "nodeSelector", "networking")


def desired_spec(resource: TargetGroupBindingResource, target_group_arn: str,
                 networking: Obj | None = None) -> Obj:
    """`networking`: the resource's networking with its security group IDs filled in."""
    spec: Obj = {
        ARN_KEY: target_group_arn,
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


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def managed_part(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `spec` this controller writes (`multiClusterTargetGroup: false` is the
    same as none, which is how upstream writes it)."""
    part = {k: spec[k] for k in MANAGED_KEYS if k in spec}
    if part.get("multiClusterTargetGroup") is False:
        del part["multiClusterTargetGroup"]
    return part


def target_group_arn(obj: Mapping[str, Any]) -> str | None:
    arn = _spec(obj).get(ARN_KEY)
    return arn if isinstance(arn, str) and arn else None


def _labels_hold(existing: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def up_to_date(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return (managed_part(_spec(existing)) == desired["spec"]
            and _labels_hold(existing, desired["metadata"]["labels"]))


def _fits(existing: Mapping[str, Any], resource: TargetGroupBindingResource) -> bool:
    arn = target_group_arn(existing)
    if arn is None or is_deleting(dict(existing)):
        return False
    part = managed_part(_spec(existing))
    networking = part.pop("networking", None)
    return (part == desired_spec(resource, arn)
            and _shape_holds(networking, _networking_shape(resource))
            and _labels_hold(existing, resource.labels))


def matches_model(cached: Iterable[Mapping[str, Any]],
                  wanted: Iterable[TargetGroupBindingResource]) -> bool:
    """Whether the cached bindings already are, one for one, what the model wants, judged
    without AWS: which target group each points at, and the security group IDs of its
    networking, are taken on trust from the objects (the deploy that wrote them knew them).
    Two wanted bindings that differ only in their target group fit the same objects, so
    pairing them greedily decides as well as any pairing."""
    left = list(cached)
    for resource in wanted:
        found = next((i for i, obj in enumerate(left) if _fits(obj, resource)), None)
        if found is None:
            return False
        left.pop(found)
    return not left


@dataclass
class Pairing:
    """Wanted bindings with the existing binding that points at their target group (None:
    create one); wanted bindings whose target group's binding is still being deleted (its
    finalizer is deregistering targets, so a new one waits until it is gone); and the existing
    bindings no wanted one points at. A second binding of the stack for one target group is in
    none of them: deleting it would deregister the targets the first one registers."""

    pairs: list[tuple[ResolvedTargetGroupBinding, Obj | None]] = field(default_factory=list)
    waiting: list[ResolvedTargetGroupBinding] = field(default_factory=list)
    stale: list[Obj] = field(default_factory=list)


def pair(wanted: Iterable[ResolvedTargetGroupBinding], cached: Iterable[Obj]) -> Pairing:
    live: dict[str, Obj] = {}
    going: set[str] = set()
    unusable: list[Obj] = []
    for obj in sorted(cached, key=lambda o: str((o.get("metadata") or {}).get("name"))):
        arn = target_group_arn(obj)
        if is_deleting(obj):
            going.update([arn] if arn else [])
        elif arn is None:
            unusable.append(obj)
        else:
            live.setdefault(arn, obj)
    found = Pairing()
    for binding in wanted:
        existing = live.pop(binding.target_group_arn, None)
        if existing is None and binding.target_group_arn in going:
            found.waiting.append(binding)
        else:
            found.pairs.append((binding, existing))
    found.stale = unusable + sorted(live.values(), key=lambda o: str(o["metadata"].get("name")))
    return found


@dataclass
class Applied:
    writes: int = 0
    # Bindings not created yet, because their target group's old binding, or the object that
    # holds their name, is still being deleted: the caller tries again shortly.
    waiting: list[str] = field(default_factory=list)
    # Bindings not created because a binding of another target group holds their name.
    taken: list[str] = field(default_factory=list)

    @property
    def blocked(self) -> list[str]:
        return self.waiting + self.taken


class BindingWriter:
    """Creates, updates and deletes managed bindings, counting the writes it made, so that a
    converged reconcile can tell it made none."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def apply(self, wanted: Iterable[ResolvedTargetGroupBinding],
                    cached: Iterable[Obj]) -> Applied:
        """Make the stack's bindings (`cached`: its managed bindings in the cache) the wanted
        ones: update or create each, then delete those no wanted one points at. Call it only
        after the deploy: by then nothing of the stack forwards to a stale one's target
        group."""
        paired = pair(wanted, cached)
        done = Applied(waiting=[binding.spec.name for binding in paired.waiting])
        for binding, existing in paired.pairs:
            desired = desired_object(binding)
            if existing is not None and up_to_date(existing, desired):
                continue
            written = await self._put(desired, existing)
            if written == _WAITING:
                done.waiting.append(binding.spec.name)
            elif written == _TAKEN:
                done.taken.append(binding.spec.name)
            else:
                done.writes += written
        done.writes += await self.delete(paired.stale)
        return done

    async def _put(self, desired: Obj, existing: Obj | None) -> int:
        """Writes made (0 or 1), or `_WAITING` / `_TAKEN` when the name is not free."""
        meta = desired["metadata"]
        if existing is None:
            try:
                await self._client.create(TARGETGROUPBINDINGS, desired, meta["namespace"])
                return 1
            except AlreadyExists:
                # The cache lags behind an earlier reconcile's create, or the name is held by
                # a binding of another target group: only the first is ours to update.
                existing = await self._client.get(TARGETGROUPBINDINGS, meta["name"],
                                                  meta["namespace"])
                if is_deleting(existing):
                    return _WAITING
                if target_group_arn(existing) != desired["spec"][ARN_KEY]:
                    return _TAKEN
                if up_to_date(existing, desired):
                    return 0
        updated = copy.deepcopy(existing)
        spec = {k: v for k, v in _spec(existing).items() if k not in MANAGED_KEYS}
        updated["spec"] = {**spec, **desired["spec"]}
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


def retained_arns(cached: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The target groups the stack's bindings point at, deleting ones included: the deployer
    keeps each until its binding is gone (`StackDeployer.deploy(retain=...)`)."""
    return frozenset(arn for obj in cached if (arn := target_group_arn(obj)) is not None)


__all__ = [
    "MANAGED_KEYS",
    "Applied",
    "BindingWriter",
    "Pairing",
    "desired_object",
    "desired_spec",
    "managed_part",
    "matches_model",
    "pair",
    "retained_arns",
    "target_group_arn",
    "up_to_date",
]
