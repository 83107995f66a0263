"""Service → Network Load Balancer: which Services qualify, their annotations parsed, the pure
model builder, and the reconciler that deploys the stack and its TargetGroupBindings. The same
facade as every controller package: `Settings`, `setup(manager, *, pool, settings)`."""

from controller.service.annotations import (
    PREFIX,
    SERVICE_ANNOTATION_KEYS,
    HealthCheckSettings,
    ServiceLBConfig,
    admission_warnings,
    annotation_findings,
    parse_service_config,
    qualifies,
    relevant_annotations,
)
from controller.service.model import (
    MODEL_VERSION,
    InvalidService,
    ModelSettings,
    admission_refusal,
    build_stack,
    checkpoint_input,
)
from controller.service.settings import ServiceConfig, Settings
from controller.service.wiring import CONTROLLER_NAME, setup

__all__ = [
    "CONTROLLER_NAME",
    "MODEL_VERSION",
    "PREFIX",
    "SERVICE_ANNOTATION_KEYS",
    "HealthCheckSettings",
    "InvalidService",
    "ModelSettings",
    "ServiceConfig",
    "ServiceLBConfig",
    "Settings",
    "admission_refusal",
    "admission_warnings",
    "annotation_findings",
    "build_stack",
    "checkpoint_input",
    "parse_service_config",
    "qualifies",
    "relevant_annotations",
    "setup",
]
