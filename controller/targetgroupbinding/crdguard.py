"""The TargetGroupBinding CRD's own deletion. Deleting the CRD makes the API server delete every
binding in the cluster, and a binding's deletion normally deregisters what it registered: one
`kubectl delete -k` of a tree that held the CRD, or an uninstall that removed it, would take
every target out of every load balancer. That cascade is nobody's decision about any one
binding, so while the CRD is being deleted (or is gone) a binding's finalizer is released
without a deregistration or any other AWS call: the load balancers keep their targets, and the
controller says so (a Warning Event on each binding, a log line when the CRD starts going).

The CRD is watched by name (a field selector; RBAC grants that one CRD, read-only). The cache
can lag behind the bindings' own deletion events, which come on another watch, so a binding
about to be finalized asks the API server once more when the cache says the CRD stays."""

from __future__ import annotations

import structlog

from runtime.client import KubeClient
from runtime.errors import NotFound
from runtime.informer import SharedInformer
from runtime.manager import Manager
from runtime.objects import Obj, is_deleting
from runtime.resources import CUSTOMRESOURCEDEFINITIONS
from runtime.store import DeletedFinalStateUnknown, Store

CRD_NAME = "targetgroupbindings.elbv2.k8s.aws"

log = structlog.get_logger(__name__)


def crd_informer(manager: Manager) -> SharedInformer:
    """The TargetGroupBinding CRD alone, on every replica (a standby that takes over mid-cascade
    knows at once)."""
    informer = manager.informer(CUSTOMRESOURCEDEFINITIONS,
                                field_selector=f"metadata.name={CRD_NAME}")
    informer.add_handler(_Announcer())
    return informer


class CRDGuard:
    """Whether the TargetGroupBinding CRD is being deleted, for the finalizer's decision."""

    def __init__(self, client: KubeClient, store: Store) -> None:
        self._client = client
        self._store = store

    def cached(self) -> bool:
        crd = self._store.get(CRD_NAME)
        return crd is not None and is_deleting(crd)

    async def deleting(self) -> bool:
        """The cache first; when it says the CRD stays, the API server (the CRD's deletion may
        not have reached the cache yet). A CRD that is gone took its bindings with it."""
        if self.cached():
            return True
        try:
            crd = await self._client.get(CUSTOMRESOURCEDEFINITIONS, CRD_NAME)
        except NotFound:
            return True
        return is_deleting(crd)


class _Announcer:
    """One log line when the CRD starts going, and one if it is back."""

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        if is_deleting(obj):
            _announce()

    def on_update(self, old: Obj, new: Obj) -> None:
        if is_deleting(new) and not is_deleting(old):
            _announce()

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        log.warning("TargetGroupBinding CRD deleted", crd=CRD_NAME)


def _announce() -> None:
    log.warning("TargetGroupBinding CRD is being deleted: bindings deleted with it are "
                "released without deregistering their targets", crd=CRD_NAME)
