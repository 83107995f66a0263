"""Controller wiring that reads the same in every controller (controller-runtime's builder):

    controller = (ControllerBuilder(manager, "configmap-mirror")
                  .for_(manager.informer(CONFIGMAPS), predicates=[LabelChanged()])
                  .watches(manager.informer(NAMESPACES), configmaps_of_namespace)
                  .with_options(ControllerOptions(max_concurrent_reconciles=2))
                  .complete(MirrorTeam(...)))

`for_` watches the primary kind (each object enqueues itself), `watches` any kind whose objects
map to requests (a controller whose requests are not objects, such as the Ingress controller's
groups, has only `watches`). Every watch takes the same three things: predicates (with the
builder's `with_event_filter` ones, controller-runtime's WithEventFilter, first), a map function
and a priority function that prices each mapped request (runtime.handlers). The
queue is built from the options (`ControllerOptions`, defaults in `controller_options`) with the
manager's clock and metrics registry (a paced LOW lane also waits, a bounded while, for the real
changes any controller of the manager is reconciling: `runtime.prioritydecisions.Foreground`), and
`complete` registers the controller with the manager, which starts it while leading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from runtime.controller import Controller, ControllerOptions, Source, controller_options
from runtime.failures import FailureLog
from runtime.handlers import EnqueueForObject, EnqueueFromMap, MapFn, PriorityFn
from runtime.manager import Manager
from runtime.predicates import Predicate
from runtime.reconcile import Reconciler, Request
from runtime.workqueue import AllGates, PriorityQueue, QueueOptions

__all__ = ["ControllerBuilder"]

@dataclass(frozen=True, slots=True)
class _Watch:
    source: Source
    map_fn: MapFn | None  # None: the object itself (`for_`)
    priority: PriorityFn | None
    predicates: tuple[Predicate, ...]


class ControllerBuilder:
    def __init__(self, manager: Manager, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a controller needs a name (it labels its logs and metrics)")
        self._manager = manager
        self._name = name
        self._watches: list[_Watch] = []
        self._filters: tuple[Predicate, ...] = ()
        self._options: ControllerOptions | None = None
        self._has_for = False
        self._completed = False

    def for_(self, informer: Source, *, priority: PriorityFn | None = None,
             predicates: Sequence[Predicate] = ()) -> ControllerBuilder:
        """The primary kind: each of its objects enqueues its own request. Once per builder."""
        if self._has_for:
            raise ValueError(f"controller {self._name!r}: for_() was already called")
        self._has_for = True
        self._watches.append(_Watch(informer, None, priority, tuple(predicates)))
        return self

    def watches(self, informer: Source, map_fn: MapFn, *, priority: PriorityFn | None = None,
                predicates: Sequence[Predicate] = ()) -> ControllerBuilder:
        """Another kind: `map_fn` says which requests one of its objects concerns."""
        self._watches.append(_Watch(informer, map_fn, priority, tuple(predicates)))
        return self

    def with_event_filter(self, *predicates: Predicate) -> ControllerBuilder:
        self._filters = (*self._filters, *predicates)
        return self

    def with_options(self, options: ControllerOptions) -> ControllerBuilder:
        self._options = options
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Build the controller, wire its watches and register it with the manager."""
        if self._completed:
            raise ValueError(f"controller {self._name!r} is already complete")
        if not self._watches:
            raise ValueError(f"controller {self._name!r} watches nothing: call for_() or "
                             "watches() first")
        if any(c.name == self._name for c in self._manager.controllers):
            raise ValueError(f"the manager already has a controller named {self._name!r}")
        options = controller_options(self._options)
        assert options.max_concurrent_reconciles is not None
        manager = self._manager
        queue: PriorityQueue[Request] = PriorityQueue(
            self._name, clock=manager.clock, registry=manager.registry,
            options=_behind_real_changes(options.queue, manager))
        controller = Controller(self._name, reconciler,
                                max_concurrent_reconciles=options.max_concurrent_reconciles,
                                queue=queue, clock=manager.clock, registry=manager.registry,
                                hot_loop=options.hot_loop, foreground=manager.foreground)
        for watch in self._watches:
            controller.watch(watch.source, self._handler(watch, controller))
        manager.add_controller(controller)
        self._completed = True
        return controller

    def _handler(self, watch: _Watch, controller: Controller
                 ) -> EnqueueForObject | EnqueueFromMap:
        predicates = (*self._filters, *watch.predicates)
        failures = FailureLog(clock=self._manager.clock)
        if watch.map_fn is None:
            return EnqueueForObject(controller, priority=watch.priority, predicates=predicates,
                                    failures=failures)
        return EnqueueFromMap(controller, watch.map_fn, priority=watch.priority,
                              predicates=predicates, failures=failures)


def _behind_real_changes(options: QueueOptions, manager: Manager) -> QueueOptions:
    """A paced LOW lane (verifications) also waits while a real change is being reconciled."""
    low = options.low_lane
    if low.qps is None:
        return options
    gate = manager.foreground if low.gate is None else AllGates(low.gate, manager.foreground)
    return replace(options, low_lane=replace(low, gate=gate))
