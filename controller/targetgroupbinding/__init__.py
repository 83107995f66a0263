"""TargetGroupBinding → target registration: the same facade as every controller package."""

from controller.targetgroupbinding.wiring import (
    CONTROLLER_NAME,
    Settings,
    build_reconciler,
    setup,
)

__all__ = ["CONTROLLER_NAME", "Settings", "build_reconciler", "setup"]
