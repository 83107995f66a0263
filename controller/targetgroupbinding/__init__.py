"""TargetGroupBinding → target registration: the same facade as every controller package, plus
what admission shares with the reconciler (defaults and checks, readiness-gate injection)."""

from controller.targetgroupbinding.admission import BindingAdmission
from controller.targetgroupbinding.checks import Scope
from controller.targetgroupbinding.injection import gates_for, with_gates
from controller.targetgroupbinding.quic import ServerIdGenerator, WorkerIds, with_server_ids
from controller.targetgroupbinding.settings import Settings, TargetGroupBindingConfig
from controller.targetgroupbinding.wiring import (
    CONTROLLER_NAME,
    build_reconciler,
    pods_informer,
    setup,
)

__all__ = [
    "CONTROLLER_NAME",
    "BindingAdmission",
    "Scope",
    "ServerIdGenerator",
    "Settings",
    "TargetGroupBindingConfig",
    "WorkerIds",
    "build_reconciler",
    "gates_for",
    "pods_informer",
    "setup",
    "with_gates",
    "with_server_ids",
]
