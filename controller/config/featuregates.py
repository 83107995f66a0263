"""Upstream v3.5.0's feature gates (`pkg/config/feature_gates.go`), their names and defaults,
declared once: `--feature-gates=Name=true,Other=false`.

Each gate says whether aiolbc acts on it. One it does not act on yet is pinned to the behaviour
aiolbc has today; asking for the other state is a start-up error, never silently ignored. The
parsed gates reach the controllers through their settings (`settings.gates.enabled(name)`), so
a gate's behaviour is filled in by unpinning it here and reading it where it acts."""

from __future__ import annotations

from runtime.featuregates import FeatureGates, Gate

# (name, upstream's default, the state aiolbc behaves as or None when it acts on the gate, what
# the gate switches).
_DECLARED: tuple[tuple[str, bool, bool | None, str], ...] = (
    ("ListenerRulesTagging", True, None, "tag listeners and rules"),
    ("WeightedTargetGroups", True, None, "weighted forward actions over several target groups"),
    ("ServiceTypeLoadBalancerOnly", False, None, "serve Services of type LoadBalancer only"),
    ("EndpointsFailOpen", True, None,
     "with no Ready node, register the nodes whose readiness is Unknown"),
    ("EnableServiceController", True, None, "the Service controller"),
    ("EnableIPTargetType", True, None, "ip targets for Ingresses and Services"),
    ("EnableRGTAPI", False, None,
     "find the cluster's load balancers and target groups through the Resource Groups Tagging "
     "API"),
    ("SubnetsClusterTagCheck", True, None,
     "subnet discovery checks the kubernetes.io/cluster/<name> tag"),
    ("NLBHealthCheckAdvancedConfig", True, None, "advanced NLB health check settings"),
    ("NLBSecurityGroup", True, None, "security groups on NLBs"),
    ("ALBSingleSubnet", False, None, "ALBs in a single subnet"),
    ("SubnetDiscoveryByReachability", True, None, "subnet discovery by route reachability"),
    ("LBCapacityReservation", True, None, "load balancer capacity reservations"),
    ("NLBGatewayAPI", True, False, "Gateway API for NLBs"),
    ("ALBGatewayAPI", True, False, "Gateway API for ALBs"),
    ("GlobalAcceleratorController", False, False, "the Global Accelerator controller"),
    ("EnableTCPUDPListener", False, None, "TCP_UDP listeners for a port with TCP and UDP"),
    ("EnhancedDefaultBehavior", False, None,
     "removing the mutual-authentication or ALPN annotation turns mutual TLS or ALPN off"),
    ("EnableDefaultTagsLowPriority", False, None,
     "annotation tags win over --default-tags"),
    ("ALBTargetControlAgent", False, None,
     "the ALB Target Control Agent sidecar injected by the alb-target-control pod webhooks"),
    ("GatewayListenerSet", True, False, "ListenerSets in the Gateway API"),
    ("EnableCertificateManagement", False, None, "ACM certificates created for Ingresses"),
    ("IngressPlanAnnotation", False, None, "the model in an Ingress's dry-run-plan annotation"),
)

GATES = FeatureGates.of(
    (Gate(name=name, default=default, pinned=pinned, help=text)
     for name, default, pinned, text in _DECLARED),
    program="aiolbc")


__all__ = ["GATES"]
