"""Names aiolbc shares with upstream and with users: annotation prefixes, finalizers, labels,
the checkpoint annotations. One home, so no two modules can disagree on one."""

from __future__ import annotations

from typing import Final

SERVICE_ANNOTATION_PREFIX: Final = "service.beta.kubernetes.io/"
INGRESS_ANNOTATION_PREFIX: Final = "alb.ingress.kubernetes.io/"
LEGACY_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"
ALB_CONTROLLER: Final = "ingress.k8s.aws/alb"  # IngressClass spec.controller
# Upstream's backend port name pointing a path at an `actions.<service name>` annotation.
USE_ANNOTATION: Final = "use-annotation"

# Written on Services, Ingresses and TargetGroupBindings after a successful deploy.
CHECKPOINT_ANNOTATION: Final = "elbv2.k8s.aws/checkpoint"
CHECKPOINT_TIMESTAMP_ANNOTATION: Final = "elbv2.k8s.aws/checkpoint-timestamp"
CHECKPOINT_ANNOTATIONS: Final = frozenset({CHECKPOINT_ANNOTATION, CHECKPOINT_TIMESTAMP_ANNOTATION})
# On every member of a named Ingress group, with its checkpoint: the group's member keys at that
# deploy, so a restarted controller knows which members vanished while it was down.
GROUP_MEMBERS_ANNOTATION: Final = "elbv2.k8s.aws/checkpoint-members"

# On a TargetGroupBinding: the target group it registers into, written before the first
# registration there. A changed spec is drained from the recorded group first, and deletion
# deregisters from it, so no target is left behind in a group the spec no longer names.
REGISTERED_TARGET_GROUP_ANNOTATION: Final = "aiolbc/registered-target-group"

SERVICE_FINALIZER: Final = "service.k8s.aws/resources"
TARGETGROUPBINDING_FINALIZER: Final = "elbv2.k8s.aws/resources"
INGRESS_FINALIZER: Final = "ingress.k8s.aws/resources"  # an Ingress on its own
INGRESS_GROUP_FINALIZER_PREFIX: Final = "group.ingress.k8s.aws/"  # + explicit group name

# Labels of the TargetGroupBindings a stack owns.
SERVICE_STACK_NAME_LABEL: Final = "service.k8s.aws/stack-name"
SERVICE_STACK_NAMESPACE_LABEL: Final = "service.k8s.aws/stack-namespace"
INGRESS_STACK_LABEL: Final = "ingress.k8s.aws/stack"  # explicit group: the group name
INGRESS_STACK_NAME_LABEL: Final = "ingress.k8s.aws/stack-name"  # implicit group: the Ingress
INGRESS_STACK_NAMESPACE_LABEL: Final = "ingress.k8s.aws/stack-namespace"

# Pod readiness gates (upstream's names): a namespace labelled `<inject label>: enabled` gets the
# gate `target-health.elbv2.k8s.aws/<binding name>` on its new pods, for each binding whose
# Service selects them; the TargetGroupBinding controller sets the pod condition of that type.
# Which of several controllers of one cluster (`--controller-id`) a TargetGroupBinding belongs
# to: absent for the default controller's (so nothing changes for bindings made before).
CONTROLLER_LABEL: Final = "elbv2.k8s.aws/controller"


def controller_labels(controller_id: str) -> dict[str, str]:
    """The labels of a managed TargetGroupBinding that name its controller."""
    return {CONTROLLER_LABEL: controller_id} if controller_id else {}


def service_finalizer(controller_id: str) -> str:
    """The finalizer a controller puts on the Services it provisions for: upstream's for the
    default controller, `<id>.service.k8s.aws/resources` for another, so that each cleans up
    only what it made (a Service's class cannot change, but a controller's can)."""
    return f"{controller_id}.{SERVICE_FINALIZER}" if controller_id else SERVICE_FINALIZER


def controller_selector(controller_id: str) -> str:
    """The label selector of the TargetGroupBindings a controller serves."""
    return f"{CONTROLLER_LABEL}={controller_id}" if controller_id else f"!{CONTROLLER_LABEL}"


READINESS_GATE_INJECT_LABEL: Final = "elbv2.k8s.aws/pod-readiness-gate-inject"
READINESS_GATE_INJECT_VALUE: Final = "enabled"
TARGET_HEALTH_CONDITION_PREFIX: Final = "target-health.elbv2.k8s.aws/"
# The AWS ALB Ingress controller's (v1) prefix: removed when new gates are injected.
LEGACY_TARGET_HEALTH_CONDITION_PREFIX: Final = "target-health.alb.ingress.k8s.aws/"

# QUIC server IDs (upstream's names): a pod annotated with the containers that serve QUIC gets
# a server ID in each of them (an environment variable, `--quic-environment-variable-name`)
# from the pod webhook in namespaces labelled `<inject label>: enabled`; its targets in QUIC
# target groups are registered with it.
QUIC_ENABLED_CONTAINERS_ANNOTATION: Final = (
    "service.beta.kubernetes.io/aws-load-balancer-quic-enabled-containers")
QUIC_SERVER_ID_INJECT_LABEL: Final = "elbv2.k8s.aws/quic-server-id-inject"
DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME: Final = "AWS_LBC_QUIC_SERVER_ID"
QUIC_PROTOCOLS: Final = frozenset({"QUIC", "TCP_QUIC"})


def target_health_condition(binding_name: str) -> str:
    """The pod condition (and readiness gate) type of one TargetGroupBinding."""
    return TARGET_HEALTH_CONDITION_PREFIX + binding_name
