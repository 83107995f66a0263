"""Service → Network Load Balancer: which Services qualify, their annotations parsed, the pure
model builder, and the reconciler that deploys the stack and its TargetGroupBindings."""

from controller.apis import SERVICE_STACK_NAME_LABEL, SERVICE_STACK_NAMESPACE_LABEL
from controller.service.annotations import (
    PREFIX,
    SERVICE_ANNOTATION_KEYS,
    HealthCheckSettings,
    ServiceDefaults,
    ServiceLBConfig,
    parse_service_config,
    qualifies,
    relevant_annotations,
)
from controller.service.model import (
    MODEL_VERSION,
    InvalidService,
    ModelSettings,
    build_stack,
    checkpoint_input,
)

__all__ = [
    "MODEL_VERSION",
    "PREFIX",
    "SERVICE_ANNOTATION_KEYS",
    "SERVICE_STACK_NAMESPACE_LABEL",
    "SERVICE_STACK_NAME_LABEL",
    "HealthCheckSettings",
    "InvalidService",
    "ModelSettings",
    "ServiceDefaults",
    "ServiceLBConfig",
    "build_stack",
    "checkpoint_input",
    "parse_service_config",
    "qualifies",
    "relevant_annotations",
]
