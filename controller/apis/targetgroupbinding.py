"""The TargetGroupBinding spec as the controller reads it (elbv2.k8s.aws/v1beta1).

The API server has already checked the CRD's schema; what is parsed here are the rules the schema
cannot say (one of ARN or name, selector operators), each failing with one message meant for
the object's Warning Event and condition.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from controller.apis.selectors import LabelSelector, LabelSelectorRequirement
from controller.errors import InvalidInput


class InvalidSpec(InvalidInput):
    """The spec cannot be acted on; the message is shown to the user as is."""

    condition_reason = "InvalidSpec"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")


class ServiceReference(_Model):
    name: str = Field(min_length=1)
    port: int | str


class TargetGroupBindingSpec(_Model):
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN")
    target_group_name: str | None = Field(default=None, alias="targetGroupName")
    target_type: Literal["instance", "ip"] | None = Field(default=None, alias="targetType")
    service_ref: ServiceReference = Field(alias="serviceRef")
    node_selector: LabelSelector | None = Field(default=None, alias="nodeSelector")
    ip_address_type: Literal["ipv4", "ipv6"] | None = Field(default=None, alias="ipAddressType")
    vpc_id: str | None = Field(default=None, alias="vpcID")
    multi_cluster_target_group: bool = Field(default=False, alias="multiClusterTargetGroup")
    networking: dict[str, Any] | None = None
    iam_role_arn_to_assume: str | None = Field(default=None, alias="iamRoleArnToAssume")

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


__all__ = ["InvalidSpec", "LabelSelector", "LabelSelectorRequirement", "ServiceReference",
           "TargetGroupBindingSpec", "parse_spec"]
