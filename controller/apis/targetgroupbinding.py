"""The TargetGroupBinding spec as the controller reads it (elbv2.k8s.aws/v1beta1).

The API server has already checked the CRD's schema; what is parsed here are the rules the schema
cannot say (one of ARN or name, selector operators), each failing with one message meant for
the object's Warning Event and condition.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller.apis.selectors import LabelSelector, LabelSelectorRequirement
from controller.aws.assumerole import external_id_problem, role_arn_problem
from controller.errors import InvalidInput


class InvalidSpec(InvalidInput):
    """The spec cannot be acted on; the message is shown to the user as is."""

    condition_reason = "InvalidSpec"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")


class ServiceReference(_Model):
    name: str = Field(min_length=1)
    port: int | str


class IPBlock(_Model):
    cidr: str

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError(f"{value!r} is not a CIDR") from None
        return value


class SecurityGroupPeer(_Model):
    group_id: str = Field(alias="groupID", min_length=1)


class NetworkingPeer(_Model):
    ip_block: IPBlock | None = Field(default=None, alias="ipBlock")
    security_group: SecurityGroupPeer | None = Field(default=None, alias="securityGroup")

    @model_validator(mode="after")
    def _one(self) -> NetworkingPeer:
        if (self.ip_block is None) == (self.security_group is None):
            raise ValueError("each peer needs exactly one of ipBlock, securityGroup")
        return self


class NetworkingPort(_Model):
    protocol: Literal["TCP", "UDP"] = "TCP"
    port: int | str | None = None  # None: every port

    @field_validator("port")
    @classmethod
    def _port(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 0 <= value <= 65535:
            raise ValueError(f"port {value}: want 0..65535 or a port name")
        return value


class NetworkingIngressRule(_Model):
    from_: tuple[NetworkingPeer, ...] = Field(alias="from", min_length=1)
    ports: tuple[NetworkingPort, ...] = ()  # none: every TCP port


class Networking(_Model):
    """`spec.networking`: what the targets' security groups must admit."""

    ingress: tuple[NetworkingIngressRule, ...] = ()


class TargetGroupBindingSpec(_Model):
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN")
    target_group_name: str | None = Field(default=None, alias="targetGroupName")
    target_type: Literal["instance", "ip"] | None = Field(default=None, alias="targetType")
    service_ref: ServiceReference = Field(alias="serviceRef")
    node_selector: LabelSelector | None = Field(default=None, alias="nodeSelector")
    ip_address_type: Literal["ipv4", "ipv6"] | None = Field(default=None, alias="ipAddressType")
    vpc_id: str | None = Field(default=None, alias="vpcID")
    multi_cluster_target_group: bool = Field(default=False, alias="multiClusterTargetGroup")
    networking: Networking | None = None
    iam_role_arn_to_assume: str | None = Field(default=None, alias="iamRoleArnToAssume")
    assume_role_external_id: str | None = Field(default=None, alias="assumeRoleExternalId")

    @field_validator("iam_role_arn_to_assume")
    @classmethod
    def _role(cls, value: str | None) -> str | None:
        # What STS would refuse is refused here, in its words, before anything is asked.
        problem = role_arn_problem(value) if value else None
        if problem is not None:
            raise ValueError(f"{value[:100]!r} is {problem}" if value else problem)
        return value

    @field_validator("assume_role_external_id")
    @classmethod
    def _external_id(cls, value: str | None) -> str | None:
        problem = external_id_problem(value) if value else None
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_target_group(self) -> TargetGroupBindingSpec:
        if not self.target_group_arn and not self.target_group_name:
            raise ValueError("one of targetGroupARN or targetGroupName is required")
        return self


def parse_spec(obj: dict[str, Any]) -> TargetGroupBindingSpec:
    """Parse `obj["spec"]`; raises InvalidSpec with one line naming the field."""
    try:
        return TargetGroupBindingSpec.model_validate(obj.get("spec") or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise InvalidSpec(f"invalid TargetGroupBinding spec: {where}: {message}") from None


__all__ = ["IPBlock", "InvalidSpec", "LabelSelector", "LabelSelectorRequirement", "Networking",
           "NetworkingIngressRule", "NetworkingPeer", "NetworkingPort", "SecurityGroupPeer",
           "ServiceReference", "TargetGroupBindingSpec", "parse_spec"]
