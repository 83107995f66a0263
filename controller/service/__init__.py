"""Service → Network Load Balancer: which Services qualify and their annotations, parsed."""

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

__all__ = [
    "PREFIX",
    "SERVICE_ANNOTATION_KEYS",
    "HealthCheckSettings",
    "ServiceDefaults",
    "ServiceLBConfig",
    "parse_service_config",
    "qualifies",
    "relevant_annotations",
]
