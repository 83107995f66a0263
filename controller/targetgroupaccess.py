"""Whether the controller may act on an AWS target group it did not create for the object in
hand. Every register, deregister and forward-to-ARN is checked here first; a refusal is bad
input (`InvalidInput`): one Warning Event and condition, no AWS mutation, no retry until the
object changes.

The rules (a namespace user can only make the controller act on what that namespace owns):
- the target group is in the expected VPC: the cluster's, or the one a binding names in
  `vpcID` (upstream's field for target groups in another VPC, honoured as upstream does);
- it is not tagged `elbv2.k8s.aws/cluster` for another cluster;
- if this cluster's Service or Ingress controller created it (stack and resource tags), the
  resource tag's namespace is the object's namespace;
- no other TargetGroupBinding holds it, unless both are multi-cluster and in one namespace.
  A binding holds the target group it registered into (it records the ARN,
  `REGISTERED_TARGET_GROUP_ANNOTATION`, before its first registration there); of two holders
  the older one keeps it. A binding that never registered anywhere blocks nobody, so a broken
  binding cannot keep a working one out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.apis import REGISTERED_TARGET_GROUP_ANNOTATION
from controller.aws import AWSClientPool, Caller, DirectReader
from controller.deploy import CLUSTER_TAG, resource_tag, stack_tag
from controller.errors import InvalidInput
from runtime.clock import Clock, RealClock
from runtime.objects import Obj, annotations_of, key_of, meta, namespace_of

# TargetGroupBinding → "arn:<targetGroupARN>" or "name:<targetGroupName>" (never raises).
TARGET_GROUP_INDEX: Final = "target-group"
FACTS_TTL: Final = 300.0  # tags and VPC change rarely; five minutes like the target health


class NotOwned(InvalidInput):
    """The target group is not this object's to act on."""

    condition_reason = "TargetGroupNotOwned"


class TargetGroupInAnotherVPC(NotOwned):
    condition_reason = "TargetGroupInAnotherVPC"


class TargetGroupOfAnotherCluster(NotOwned):
    condition_reason = "TargetGroupOfAnotherCluster"


class TargetGroupOfAnotherNamespace(NotOwned):
    condition_reason = "TargetGroupOfAnotherNamespace"


class TargetGroupInUse(NotOwned):
    condition_reason = "TargetGroupInUse"


class TargetGroupMissing(InvalidInput):
    condition_reason = "TargetGroupNotFound"


@dataclass(frozen=True, slots=True)
class TargetGroupFacts:
    """What the checks read of a target group (DescribeTargetGroups and DescribeTags)."""

    arn: str
    name: str
    vpc_id: str
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        return self.name or self.arn


def owning_namespace(tags: Mapping[str, str]) -> str | None:
    """The namespace of the Service or Ingress whose stack created the target group, from its
    resource tag (`<namespace>/...`); None when no stack of ours created it."""
    for kind in ("service", "ingress"):
        resource = tags.get(resource_tag(kind))
        if tags.get(stack_tag(kind)) and resource and "/" in resource:
            return resource.split("/", 1)[0]
    return None


def check_target_group(tg: TargetGroupFacts, *, namespace: str, vpc_id: str,
                       cluster_name: str) -> None:
    """Raises a `NotOwned` for a target group `namespace` may not act on."""
    if tg.vpc_id != vpc_id:
        raise TargetGroupInAnotherVPC(
            f"target group {tg.shown} is in VPC {tg.vpc_id or '(none)'}, not {vpc_id}")
    cluster = tg.tags.get(CLUSTER_TAG)
    if cluster is not None and cluster != cluster_name:
        raise TargetGroupOfAnotherCluster(
            f"target group {tg.shown} belongs to cluster {cluster} ({CLUSTER_TAG})")
    owner = owning_namespace(tg.tags) if cluster == cluster_name else None
    if owner is not None and owner != namespace:
        raise TargetGroupOfAnotherNamespace(
            f"target group {tg.shown} belongs to a load balancer of namespace {owner}")


# ---- bindings of one target group ---------------------------------------------------------

def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def binding_target_group_index(obj: Obj) -> list[str]:
    spec = _spec(obj)
    found = []
    arn, name = spec.get("targetGroupARN"), spec.get("targetGroupName")
    if isinstance(arn, str) and arn:
        found.append(f"arn:{arn}")
    if isinstance(name, str) and name:
        found.append(f"name:{name}")
    return found


def bindings_of(store_by_index: Callable[[str, str], list[Obj]],
                tg: TargetGroupFacts) -> list[Obj]:
    """Every binding naming `tg` by ARN or by name (`store_by_index`: a Store's `by_index`)."""
    found: dict[str, Obj] = {}
    for value in (f"arn:{tg.arn}", f"name:{tg.name}"):
        for obj in store_by_index(TARGET_GROUP_INDEX, value):
            found[key_of(obj)] = obj
    return [found[k] for k in sorted(found)]


def holds(binding: Obj, arn: str) -> bool:
    """The binding registered targets into `arn` (and has not let go of them yet)."""
    return annotations_of(binding).get(REGISTERED_TARGET_GROUP_ANNOTATION) == arn


def _precedence(binding: Obj) -> tuple[str, str]:
    return (str(meta(binding).get("creationTimestamp") or ""), key_of(binding))


def is_multi_cluster(binding: Obj) -> bool:
    return _spec(binding).get("multiClusterTargetGroup") is True


def may_share(a: Obj, b: Obj) -> bool:
    return (is_multi_cluster(a) and is_multi_cluster(b)
            and namespace_of(a) == namespace_of(b))


def rival(binding: Obj, others: Iterable[Obj], arn: str) -> Obj | None:
    """The first other binding holding target group `arn` that may not share it with
    `binding` and comes first: `binding` holds nothing there, or is the younger holder."""
    mine = _precedence(binding)
    me, held = key_of(binding), holds(binding, arn)
    for other in sorted(others, key=_precedence):
        if key_of(other) == me or not holds(other, arn) or may_share(binding, other):
            continue
        if not held or _precedence(other) < mine:
            return other
    return None


def check_rivals(binding: Obj, others: Iterable[Obj], tg: TargetGroupFacts) -> None:
    found = rival(binding, others, tg.arn)
    if found is None:
        return
    raise TargetGroupInUse(
        f"target group {tg.shown} is used by TargetGroupBinding {key_of(found)}; bindings "
        "share a target group only within one namespace and with multiClusterTargetGroup: "
        "true on each")


def check_forward(tg: TargetGroupFacts, *, namespace: str, bindings: Iterable[Obj]) -> None:
    """A forward action of an Ingress in `namespace` to a target group it names by ARN: a
    target group filled by another namespace's binding is that namespace's."""
    for binding in bindings:
        if namespace_of(binding) != namespace:
            raise TargetGroupOfAnotherNamespace(
                f"target group {tg.shown} is used by TargetGroupBinding {key_of(binding)}")


# ---- looking target groups up --------------------------------------------------------------

class TargetGroupLookup:
    """Target groups by ARN, with the facts the checks need, cached for `ttl` seconds."""

    def __init__(self, pool: AWSClientPool, *, clock: Clock | None = None,
                 ttl: float = FACTS_TTL) -> None:
        self._reader = DirectReader(Caller(pool))
        self._clock = clock or RealClock()
        self._ttl = ttl
        self._cache: dict[str, tuple[float, TargetGroupFacts]] = {}

    async def facts_by_name(self, name: str) -> TargetGroupFacts:
        """The target group of this name (upstream's `targetGroupName`), as `facts`."""
        now = self._clock.now()
        cached = self._cache.get(f"name:{name}")
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        found = await self._reader.target_group(name=name)
        if found.desc is None:
            self._cache.pop(f"name:{name}", None)
            raise TargetGroupMissing("not found")
        facts = TargetGroupFacts(arn=str(found.desc["TargetGroupArn"]),
                                 name=str(found.desc.get("TargetGroupName", "")),
                                 vpc_id=str(found.desc.get("VpcId", "")), tags=found.tags)
        self._cache[f"name:{name}"] = (now, facts)
        return facts

    async def facts(self, arn: str) -> TargetGroupFacts:
        now = self._clock.now()
        cached = self._cache.get(arn)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        found = await self._reader.target_group(arn=arn)
        if found.desc is None:
            self._cache.pop(arn, None)
            raise TargetGroupMissing(f"target group {arn} not found")
        facts = TargetGroupFacts(arn=str(found.desc["TargetGroupArn"]),
                                 name=str(found.desc.get("TargetGroupName", "")),
                                 vpc_id=str(found.desc.get("VpcId", "")), tags=found.tags)
        self._cache[arn] = (now, facts)
        return facts


__all__ = [
    "FACTS_TTL",
    "TARGET_GROUP_INDEX",
    "NotOwned",
    "TargetGroupFacts",
    "TargetGroupInAnotherVPC",
    "TargetGroupInUse",
    "TargetGroupLookup",
    "TargetGroupMissing",
    "TargetGroupOfAnotherCluster",
    "TargetGroupOfAnotherNamespace",
    "binding_target_group_index",
    "bindings_of",
    "check_forward",
    "check_rivals",
    "check_target_group",
    "holds",
    "is_multi_cluster",
    "may_share",
    "owning_namespace",
    "rival",
]
