"""Target groups, their health checks, and the TargetGroupBinding objects that fill them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.model.base import Model, Ref, Tagged
from controller.model.limits import (
    ALB_PROTOCOLS,
    TARGET_GROUP_ATTRIBUTES,
    unknown_attributes,
)
from controller.model.loadbalancer import check_elb_name
from controller.model.securitygroup import TargetGroupBindingNetworking

TargetGroupProtocol = Literal["HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "QUIC",
                              "TCP_QUIC"]
ProtocolVersion = Literal["HTTP1", "HTTP2", "GRPC"]
TargetType = Literal["instance", "ip"]
TargetIpAddressType = Literal["ipv4", "ipv6"]


class HealthCheckMatcher(Model):
    http_code: str | None = None
    grpc_code: str | None = None

    @model_validator(mode="after")
    def _one(self) -> HealthCheckMatcher:
        if (self.http_code is None) == (self.grpc_code is None):
            raise ValueError("health check matcher: set exactly one of http_code, grpc_code")
        return self


class HealthCheck(Model):
    protocol: Literal["HTTP", "HTTPS", "TCP"] = "HTTP"
    port: Literal["traffic-port"] | int = "traffic-port"
    path: str | None = None
    interval_seconds: int = Field(default=15, ge=5, le=300)
    timeout_seconds: int = Field(default=5, ge=2, le=120)
    healthy_threshold: int = Field(default=2, ge=2, le=10)
    unhealthy_threshold: int = Field(default=2, ge=2, le=10)
    matcher: HealthCheckMatcher | None = None

    @field_validator("port")
    @classmethod
    def _port(cls, value: str | int) -> str | int:
        if isinstance(value, int) and not 1 <= value <= 65535:
            raise ValueError(f"health check port {value}: want 1..65535 or 'traffic-port'")
        return value


class LoadBalancerTarget(Model):
    """The one target of an `alb` target group (a frontend NLB's): the stack's own application
    load balancer, by resource id, on one of its listener ports. Not a `$ref`: the load
    balancer comes after its target groups, so the deployer registers it once it exists."""

    load_balancer: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)


class TargetGroup(Tagged):
    name: str
    protocol: TargetGroupProtocol
    protocol_version: ProtocolVersion | None = None
    port: int = Field(ge=1, le=65535)
    target_type: TargetType | Literal["alb"]
    ip_address_type: TargetIpAddressType = "ipv4"
    health_check: HealthCheck = Field(default_factory=HealthCheck)
    attributes: dict[str, str] = Field(default_factory=dict)
    # Target type `alb` only; left out of the canonical JSON otherwise, so other stacks keep
    # their checkpoints.
    load_balancer_target: LoadBalancerTarget | None = Field(
        default=None, exclude_if=lambda value: value is None)

    @model_validator(mode="after")
    def _alb_target(self) -> TargetGroup:
        if (self.target_type == "alb") != (self.load_balancer_target is not None):
            raise ValueError(f"target group {self.name}: an alb target group, and only one, "
                             "names the load balancer it targets")
        if self.target_type == "alb" and self.protocol not in ("TCP", "TLS"):
            raise ValueError(f"target group {self.name}: an alb target group's protocol is TCP")
        return self
    # The ALB Target Optimizer's agent port (`target-control-port.<svc>.<port>`); fixed once
    # the target group exists, so a change replaces it (its name hashes it). Left out of the
    # canonical JSON while unset, so every stored checkpoint stays as it was.
    target_control_port: int | None = Field(default=None, ge=1, le=65535,
                                            exclude_if=lambda value: value is None)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_elb_name(value, what="target group")

    @model_validator(mode="after")
    def _known_attributes(self) -> TargetGroup:
        kind = "application" if self.protocol in ALB_PROTOCOLS else "network"
        unknown = unknown_attributes(set(self.attributes), TARGET_GROUP_ATTRIBUTES[kind])
        if unknown:
            raise ValueError(f"target group attribute {unknown[0]!r} is not one a "
                             f"{self.protocol} target group has")
        return self

    @model_validator(mode="after")
    def _version(self) -> TargetGroup:
        if self.protocol_version is not None and self.protocol not in ("HTTP", "HTTPS"):
            raise ValueError(
                f"target group {self.name}: protocol version is only valid for HTTP/HTTPS"
            )
        return self

    @model_validator(mode="after")
    def _timeout(self) -> TargetGroup:
        # An ALB (HTTP/HTTPS) target group needs a timeout shorter than the interval; NLB target
        # groups accept equal values, and upstream's NLB defaults are 10 s / 10 s.
        hc = self.health_check
        if self.protocol in ("HTTP", "HTTPS") and hc.timeout_seconds >= hc.interval_seconds:
            raise ValueError(
                f"target group {self.name}: health check timeout ({hc.timeout_seconds}s) must "
                f"be shorter than the interval ({hc.interval_seconds}s)"
            )
        return self


class ServiceReference(Model):
    name: str
    port: int | str


class TargetGroupBindingResource(Model):
    """The TargetGroupBinding object the stack wants in Kubernetes. The AWS deployer does not
    apply it; it reports it back with the target group ARN filled in."""

    name: str
    namespace: str
    target_group_arn: Ref
    target_type: TargetType
    service_ref: ServiceReference
    ip_address_type: TargetIpAddressType = "ipv4"
    multi_cluster_target_group: bool = False
    node_selector: dict[str, str] | None = None
    # The inbound rules the targets' security groups need (None: the controller manages none).
    networking: TargetGroupBindingNetworking | None = None
    labels: dict[str, str] = Field(default_factory=dict)
