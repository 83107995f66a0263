"""The Ingress controller's priority function: which lane a group's request goes to.

An initial-list add or resync of a group whose checkpoint matches on every member, with the
Kubernetes side of its last deploy intact (`status.converged_in_cache`), goes to the paced LOW
lane; anything else keeps its default (NORMAL). A group whose members carry one checkpoint
between them needs its model built to tell: that is decided off the event path (`Deferred`);
any other is NORMAL at once. Without the lane (checkpoints off, or `lane=False`) every request
is NORMAL: a matching checkpoint then only makes the reconcile skip its AWS calls.

A restart replays every member of a group, its backend Services, bindings and class, each
mapping to the same request: the decision is made once per group and remembered by the
resourceVersions of its candidate members (`GroupLoader.versions`); any other event (a change)
forgets every decision.
"""

from __future__ import annotations

from controller import checkpoint
from controller.ingress.groups import Group, GroupLoader
from controller.ingress.model import BUILDER_VERSION
from controller.ingress.qualify import Qualifier
from controller.ingress.status import converged_in_cache
from controller.ingress.watches import BINDING_STACK_INDEX
from runtime.predicates import Event, EventKind
from runtime.prioritydecisions import Deferred
from runtime.reconcile import LOW, NORMAL, Request
from runtime.store import Store

Versions = tuple[tuple[str, str], ...]


class GroupPriority:
    """A `runtime.handlers.PriorityFn` for group requests."""

    def __init__(self, *, loader: GroupLoader, qualifier: Qualifier, bindings: Store,
                 enabled: bool = True) -> None:
        self._loader = loader
        self._qualifier = qualifier
        self._bindings = bindings
        self._enabled = enabled
        self._decisions: dict[Request, tuple[Versions, int | Deferred]] = {}

    def __call__(self, request: Request, event: Event, default: int) -> int | Deferred:
        if not self._enabled:
            return NORMAL
        if event.kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            self._decisions.clear()
            return default
        versions = self._loader.versions(request)
        known = self._decisions.get(request)
        if known is not None and known[0] == versions:
            return known[1]  # the others of the group ask for the same (deferred) decision
        stored = {checkpoint.stored(m.ingress) for m in self._loader.load(request).members}
        decision: int | Deferred = NORMAL
        if len(stored) == 1 and next(iter(stored)):
            decision = Deferred(lambda: self._decide(request))
        # Else no member, a member without a checkpoint, or members that disagree: a change.
        self._decisions[request] = (versions, decision)
        return decision

    def _decide(self, request: Request) -> int:
        """The deferred half, on the caches as they are by then."""
        versions = self._loader.versions(request)
        known = self._decisions.get(request)
        if known is not None and known[0] == versions and not isinstance(known[1], Deferred):
            return known[1]
        group = self._loader.load(request)
        value = self.deployed_checkpoint(group)
        decision = NORMAL
        if (value is not None and group.members
                and all(checkpoint.stored(m.ingress) == value for m in group.members)):
            decision = LOW
        self._decisions[request] = (versions, decision)
        return decision

    def deployed_checkpoint(self, group: Group) -> str | None:
        """The group's checkpoint when the Kubernetes side of its last deploy is still what the
        cache holds, else None: a managed binding deleted by hand while the controller was down
        (one without its finalizer yet leaves no deletion event to replay), a member's
        finalizer, address or member record gone, is a real change, not for the paced lane."""
        settled = self._qualifier.settle(group)
        if settled.built is None or settled.group.unknown:
            return None
        value = checkpoint.compute(settled.built.stack, version=BUILDER_VERSION)
        bindings = self._bindings.by_index(BINDING_STACK_INDEX, group.request.key)
        if not converged_in_cache(settled.group, settled.built, value, bindings):
            return None
        return value


__all__ = ["GroupPriority"]
