"""The runtime's public facade: what a controller author needs, importable from `runtime`
(kopf's `kopf/__init__.py`). The modules stay the homes of their names; this page only lists
them. Names are loaded on first use (PEP 562), so `import runtime.clock` — or the local API
server, which stands on the clock alone — does not load the whole runtime.

    from runtime import ControllerBuilder, Manager, Request, Result, LabelChanged
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.builder import ControllerBuilder
    from runtime.client import KubeClient
    from runtime.clock import Clock, FakeClock, RealClock
    from runtime.controller import Controller, ControllerOptions
    from runtime.errors import AlreadyExists, ApiError, Conflict, NotFound
    from runtime.events import EventRecorder
    from runtime.failures import FailureLog
    from runtime.handlers import MapFn, PriorityFn, default_priority
    from runtime.informer import SharedInformer
    from runtime.manager import Manager, ManagerOptions, run_main
    from runtime.objects import (
        Obj,
        annotations_of,
        finalizers,
        has_finalizer,
        is_deleting,
        key_of,
        labels_of,
        meta,
        name_of,
        namespace_of,
    )
    from runtime.predicates import (
        And,
        AnnotationChanged,
        DeletionStarted,
        Event,
        EventKind,
        GenerationChanged,
        LabelChanged,
        Not,
        Or,
        Predicate,
        ResourceVersionChanged,
        ViewChanged,
    )
    from runtime.prioritydecisions import Deferred
    from runtime.reconcile import (
        LOW,
        NORMAL,
        ReconcileError,
        Reconciler,
        Request,
        Result,
        TerminalError,
        reconcile_priority,
    )
    from runtime.resources import Resource
    from runtime.store import Store
    from runtime.workqueue import LowLaneOptions, QueueOptions

# name → the module that owns it
_HOMES: dict[str, str] = {
    **dict.fromkeys(("LOW", "NORMAL", "ReconcileError", "Reconciler", "Request", "Result",
                     "TerminalError", "reconcile_priority"), "runtime.reconcile"),
    **dict.fromkeys(("Obj", "annotations_of", "finalizers", "has_finalizer", "is_deleting",
                     "key_of", "labels_of", "meta", "name_of", "namespace_of"),
                    "runtime.objects"),
    **dict.fromkeys(("And", "AnnotationChanged", "DeletionStarted", "Event", "EventKind",
                     "GenerationChanged", "LabelChanged", "Not", "Or", "Predicate",
                     "ResourceVersionChanged", "ViewChanged"), "runtime.predicates"),
    **dict.fromkeys(("MapFn", "PriorityFn", "default_priority"), "runtime.handlers"),
    "Deferred": "runtime.prioritydecisions",
    "ControllerBuilder": "runtime.builder",
    "Controller": "runtime.controller",
    "ControllerOptions": "runtime.controller",
    **dict.fromkeys(("LowLaneOptions", "QueueOptions"), "runtime.workqueue"),
    **dict.fromkeys(("Manager", "ManagerOptions", "run_main"), "runtime.manager"),
    "KubeClient": "runtime.client",
    **dict.fromkeys(("AlreadyExists", "ApiError", "Conflict", "NotFound"), "runtime.errors"),
    "Resource": "runtime.resources",
    "Store": "runtime.store",
    "SharedInformer": "runtime.informer",
    "EventRecorder": "runtime.events",
    "FailureLog": "runtime.failures",
    **dict.fromkeys(("Clock", "FakeClock", "RealClock"), "runtime.clock"),
}

__all__ = [
    "LOW",
    "NORMAL",
    "AlreadyExists",
    "And",
    "AnnotationChanged",
    "ApiError",
    "Clock",
    "Conflict",
    "Controller",
    "ControllerBuilder",
    "ControllerOptions",
    "Deferred",
    "DeletionStarted",
    "Event",
    "EventKind",
    "EventRecorder",
    "FailureLog",
    "FakeClock",
    "GenerationChanged",
    "KubeClient",
    "LabelChanged",
    "LowLaneOptions",
    "Manager",
    "ManagerOptions",
    "MapFn",
    "Not",
    "NotFound",
    "Obj",
    "Or",
    "Predicate",
    "PriorityFn",
    "QueueOptions",
    "RealClock",
    "ReconcileError",
    "Reconciler",
    "Request",
    "Resource",
    "ResourceVersionChanged",
    "Result",
    "SharedInformer",
    "Store",
    "TerminalError",
    "ViewChanged",
    "annotations_of",
    "default_priority",
    "finalizers",
    "has_finalizer",
    "is_deleting",
    "key_of",
    "labels_of",
    "meta",
    "name_of",
    "namespace_of",
    "reconcile_priority",
    "run_main",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
