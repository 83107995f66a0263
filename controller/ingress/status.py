"""What a deploy leaves on a group's members, and how to tell from the caches that it is still in
place: the load balancer's hostname in `status.loadBalancer.ingress`, the group's finalizer, the
checkpoint and, for a group named in annotations or class parameters, the record of its members
(`vanished.py`); plus the group's managed TargetGroupBindings as the model wants them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller import checkpoint
from controller.apis import GROUP_MEMBERS_ANNOTATION
from controller.bindings import matches_model
from controller.ingress.groups import Group, is_explicit
from controller.ingress.model import BuiltGroup
from controller.ingress.vanished import record
from runtime.objects import Obj, key_of, meta
from runtime.reconcile import Request


def record_of(request: Request, members: Iterable[Obj]) -> str | None:
    """The member record a named group keeps on each member; None for an implicit group."""
    return record(request, (key_of(ing) for ing in members)) if is_explicit(request) else None


def stored_record(ing: Obj) -> str | None:
    annotations = meta(ing).get("annotations")
    value = annotations.get(GROUP_MEMBERS_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else None


def hostname_patch(ing: Obj, hostname: str, frontend: str = "") -> Obj | None:
    """Status patch giving the Ingress `hostname` ("" for none) and, after it, its frontend
    NLB's (upstream appends that one, lower-cased, as an entry of its own); None when it has
    them."""
    wanted = [{"hostname": hostname}] if hostname else []
    if hostname and frontend:
        wanted.append({"hostname": frontend.lower()})
    status = ing.get("status") if isinstance(ing.get("status"), dict) else {}
    balancer = (status or {}).get("loadBalancer") or {}
    current = balancer.get("ingress") if isinstance(balancer, dict) else None
    if (current or []) == wanted:
        return None
    return {"status": {"loadBalancer": {"ingress": wanted}}}


def converged_in_cache(group: Group, built: BuiltGroup, value: str,
                       bindings: Sequence[Obj]) -> bool:
    """The caches show the Kubernetes side of a deploy of checkpoint `value` whole: on every
    member the checkpoint, an address, the member record and the finalizer; the managed
    bindings as the model wants them; and no member leaving."""
    if group.leaving:
        return False
    wanted_record = record_of(group.request, (m.ingress for m in group.members))
    for member in group.members:
        ing = member.ingress
        hostnames = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress")
        if (checkpoint.stored(ing) != value or not hostnames
                or (wanted_record is not None and stored_record(ing) != wanted_record)
                or group.finalizer not in (meta(ing).get("finalizers") or [])):
            return False
    return matches_model(bindings, built.stack.target_group_bindings.values())


__all__ = ["converged_in_cache", "hostname_patch", "record_of", "stored_record"]
