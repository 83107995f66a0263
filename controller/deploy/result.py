"""What a deploy reports back to its caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.model import TargetGroupBindingResource


@dataclass(frozen=True)
class LoadBalancerStatus:
    resource_id: str
    arn: str
    dns_name: str
    canonical_hosted_zone_id: str
    state: str


@dataclass(frozen=True)
class ResolvedTargetGroupBinding:
    """A TargetGroupBinding the stack wants in Kubernetes, with its target group ARN known."""

    resource_id: str
    spec: TargetGroupBindingResource
    target_group_arn: str
    # `spec.networking` as Kubernetes stores it, security group IDs filled in.
    networking: dict[str, Any] | None = None


@dataclass(frozen=True)
class DeployResult:
    stack_id: str
    # The stack's load balancer; with a frontend NLB, the ALB behind it.
    load_balancer: LoadBalancerStatus | None
    target_groups: dict[str, str] = field(default_factory=dict)
    listeners: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    target_group_bindings: dict[str, ResolvedTargetGroupBinding] = field(default_factory=dict)
    # Target groups the model no longer has, kept because a binding still points at them
    # (`deploy(retain=...)`): the caller deletes those bindings and deploys again.
    retained_target_groups: tuple[str, ...] = ()
    # The load balancer is still provisioning, so its capacity reservation is not set yet: the
    # caller comes back after --lb-stabilization-monitor-interval (capacity.py).
    capacity_pending: bool = False
    # (reason, message) of what was left as it is (a setting AWS cannot change in place): the
    # caller turns each into a Warning Event on the stack's owners.
    warnings: tuple[tuple[str, str], ...] = ()
    calls: int = 0
    mutating_calls: int = 0
    # Every load balancer of the stack by resource id (the frontend NLB's too).
    load_balancers: dict[str, LoadBalancerStatus] = field(default_factory=dict)
