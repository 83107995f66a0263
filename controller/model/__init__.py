"""The ELBv2 stack model: pydantic resources, `$ref`s, canonical JSON, digests and names."""

from controller.model.actions import (
    REDACTED,
    Action,
    AuthenticateOidcAction,
    FixedResponseAction,
    ForwardAction,
    RedirectAction,
    Stickiness,
    WeightedTargetGroup,
)
from controller.model.base import (
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    RESOURCE_TYPES,
    TARGET_GROUP,
    TARGET_GROUP_BINDING,
    Ref,
)
from controller.model.canonical import canonical_json, checkpoint_digest, digest, secret_digest
from controller.model.conditions import (
    Condition,
    HostHeaderCondition,
    HttpHeaderCondition,
    HttpRequestMethodCondition,
    PathPatternCondition,
    QueryStringCondition,
    QueryStringKeyValue,
    SourceIpCondition,
)
from controller.model.listener import CertificateDiscovery, Listener, ListenerRule
from controller.model.loadbalancer import (
    LoadBalancer,
    SubnetDiscovery,
    SubnetPlaceholder,
    SubnetSelector,
)
from controller.model.naming import (
    load_balancer_name,
    service_load_balancer_name,
    target_group_name,
)
from controller.model.stack import InvalidStack, Resource, Stack, StackBuilder, StackKind
from controller.model.targetgroup import (
    HealthCheck,
    HealthCheckMatcher,
    ServiceReference,
    TargetGroup,
    TargetGroupBindingResource,
)

__all__ = [
    "LISTENER",
    "LISTENER_RULE",
    "LOAD_BALANCER",
    "REDACTED",
    "RESOURCE_TYPES",
    "TARGET_GROUP",
    "TARGET_GROUP_BINDING",
    "Action",
    "AuthenticateOidcAction",
    "CertificateDiscovery",
    "Condition",
    "FixedResponseAction",
    "ForwardAction",
    "HealthCheck",
    "HealthCheckMatcher",
    "HostHeaderCondition",
    "HttpHeaderCondition",
    "HttpRequestMethodCondition",
    "InvalidStack",
    "Listener",
    "ListenerRule",
    "LoadBalancer",
    "PathPatternCondition",
    "QueryStringCondition",
    "QueryStringKeyValue",
    "RedirectAction",
    "Ref",
    "Resource",
    "ServiceReference",
    "SourceIpCondition",
    "Stack",
    "StackBuilder",
    "StackKind",
    "Stickiness",
    "SubnetDiscovery",
    "SubnetPlaceholder",
    "SubnetSelector",
    "TargetGroup",
    "TargetGroupBindingResource",
    "WeightedTargetGroup",
    "canonical_json",
    "checkpoint_digest",
    "digest",
    "load_balancer_name",
    "secret_digest",
    "service_load_balancer_name",
    "target_group_name",
]
