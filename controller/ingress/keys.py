"""Names the Ingress controller shares with upstream: annotation keys, finalizers, labels,
resources."""

from __future__ import annotations

from typing import Final

from runtime.resources import Resource

CONTROLLER_NAME: Final = "ingress"
ALB_CONTROLLER: Final = "ingress.k8s.aws/alb"  # IngressClass spec.controller
PREFIX: Final = "alb.ingress.kubernetes.io/"
LEGACY_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"

IMPLICIT_FINALIZER: Final = "ingress.k8s.aws/resources"
EXPLICIT_FINALIZER_PREFIX: Final = "group.ingress.k8s.aws/"

# Labels of the TargetGroupBindings a group's stack owns.
STACK_LABEL: Final = "ingress.k8s.aws/stack"  # explicit group: the group name
STACK_NAME_LABEL: Final = "ingress.k8s.aws/stack-name"  # implicit group: the Ingress name
STACK_NAMESPACE_LABEL: Final = "ingress.k8s.aws/stack-namespace"

INGRESSCLASSPARAMS: Final = Resource("elbv2.k8s.aws", "v1beta1", "ingressclassparams",
                                     "IngressClassParams", namespaced=False)

# Upstream uses this backend port name to point a path at an `actions.<service name>` annotation.
USE_ANNOTATION: Final = "use-annotation"
