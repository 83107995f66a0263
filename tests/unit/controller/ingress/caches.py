"""Filled caches and a group loader for the Ingress unit tests (the objects come from
tests/support/objects.py)."""

from __future__ import annotations

from controller import checkpoint
from controller.apis import CHECKPOINT_ANNOTATION, GROUP_MEMBERS_ANNOTATION
from controller.ingress.caches import Caches
from controller.ingress.groups import (
    CLASS_INDEX,
    GROUP_INDEX,
    GroupLoader,
    class_keys,
    finalizer_of,
    index_keys,
    is_explicit,
)
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, build_group
from controller.ingress.priority import GroupPriority
from controller.ingress.qualify import Qualifier
from controller.ingress.vanished import VanishedMembers, record
from controller.ingress.watches import BINDING_STACK_INDEX, binding_stack_index
from controller.settings import ClusterScope, StackDefaults
from controller.targetgroupaccess import TargetGroupLookup
from runtime.objects import Obj, key_of
from runtime.reconcile import Request
from runtime.store import Store
from tests.support.deployed import HOSTNAME, bindings_as_deployed

# Upstream's tolerance of missing backends off: a missing Service is these tests' plainest bad
# input. With it on (the flags' default), see test_routing.py.
SETTINGS = BuilderSettings(
    cluster=ClusterScope(name="test-cluster", region="us-west-2", vpc_id="vpc-1"),
    defaults=StackDefaults(target_type="ip"), tolerate_missing_service=False,
    tolerate_missing_action=False)


def caches(*objects: Obj) -> Caches:
    c = Caches()
    c.ingresses.add_indexer(GROUP_INDEX, index_keys)
    c.ingresses.add_indexer(CLASS_INDEX, class_keys)
    for obj in objects:
        if "data" in obj:
            c.secrets.upsert(obj)
        elif "controller" in (obj.get("spec") or {}):
            c.classes.upsert(obj)
        elif "ports" in (obj.get("spec") or {}):
            c.services.upsert(obj)
        elif "rules" in (obj.get("spec") or {}) or "defaultBackend" in (obj.get("spec") or {}):
            c.ingresses.upsert(obj)
        elif "labels" in (obj.get("metadata") or {}) and "spec" not in obj:
            c.namespaces.upsert(obj)
        else:
            c.params.upsert(obj)
    return c


def loader(c: Caches, ingress_class: str = "alb") -> GroupLoader:
    return GroupLoader(c, ingress_class=ingress_class)


def group_priority(c: Caches, bindings: Store, *, lookup: TargetGroupLookup,
                   enabled: bool = True) -> GroupPriority:
    """The Ingress controller's priority function on these caches (`lookup` is never asked:
    priorities settle groups without looking at AWS)."""
    return GroupPriority(loader=loader(c), bindings=bindings, enabled=enabled,
                         qualifier=Qualifier(caches=c, settings=SETTINGS, policy="params",
                                             vanished=VanishedMembers(), target_groups=lookup,
                                             bindings_by_index=Store().by_index))


def bindings_store(*objects: Obj) -> Store:
    store = Store()
    store.add_indexer(BINDING_STACK_INDEX, binding_stack_index)
    for obj in objects:
        store.upsert(obj)
    return store


def deploy_in_cache(c: Caches, request: Request, bindings: Store) -> str:
    """Leave group `request` in the caches as its reconcile would after deploying it: every
    member with the checkpoint, the member record, the finalizer and the address, and the
    stack's managed bindings in `bindings`. Returns the checkpoint."""
    group = loader(c).load(request)
    built = build_group(group, c, SETTINGS)
    value = checkpoint.compute(built.stack, version=BUILDER_VERSION)
    members = [m.ingress for m in group.members]
    for ing in members:
        annotations = ing["metadata"].setdefault("annotations", {})
        annotations[CHECKPOINT_ANNOTATION] = value
        if is_explicit(request):
            annotations[GROUP_MEMBERS_ANNOTATION] = record(request, map(key_of, members))
        ing["metadata"]["finalizers"] = [finalizer_of(request)]
        ing["status"] = {"loadBalancer": {"ingress": [{"hostname": HOSTNAME}]}}
    for obj in bindings_as_deployed(built.stack):
        bindings.upsert(obj)
    return value
