"""Filled caches and a group loader for the Ingress unit tests (the objects come from
tests/support/objects.py)."""

from __future__ import annotations

from controller.ingress.caches import Caches
from controller.ingress.groups import CLASS_INDEX, GROUP_INDEX, GroupLoader, class_keys, index_keys
from controller.ingress.model import BuilderSettings
from runtime.objects import Obj

SETTINGS = BuilderSettings(cluster_name="test-cluster", region="us-west-2", vpc_id="vpc-1",
                           default_target_type="ip")


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
