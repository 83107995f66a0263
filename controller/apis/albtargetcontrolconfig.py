"""The ALBTargetControlConfig spec as the agent injector reads it (elbv2.k8s.aws/v1beta1).

Upstream's apis/elbv2/v1beta1/albtargetcontrolconfig_types.go: where the ALB target control
agent sidecar comes from and the sockets it serves. The API server has already checked the CRD's
schema; the model checks it again, because a config written before the CRD was installed, or by
hand against another schema, must give one message rather than a sidecar that cannot start.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.errors import InvalidInput

CONFIG_NAME = "aws-load-balancer-controller-alb-target-control-agent-config"
"""The one config the injector reads, in the pod's namespace and then the controller's (upstream's
name, so that both controllers read the same object)."""

_ADDRESS = r"^.+:[0-9]+$"  # the CRD's pattern
_QUANTITY = int | str


class InvalidConfig(InvalidInput):
    """The config cannot be acted on; the message is shown to the user as is."""

    condition_reason = "InvalidALBTargetControlConfig"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")


class ResourceClaim(_Model):
    name: str
    request: str | None = None


class ResourceRequirements(_Model):
    """corev1.ResourceRequirements, copied onto the sidecar as written."""

    limits: dict[str, _QUANTITY] | None = None
    requests: dict[str, _QUANTITY] | None = None
    claims: tuple[ResourceClaim, ...] | None = None


class ALBTargetControlConfigSpec(_Model):
    image: str
    data_address: str = Field(alias="dataAddress", pattern=_ADDRESS)
    control_address: str = Field(alias="controlAddress", pattern=_ADDRESS)
    destination_address: str = Field(alias="destinationAddress", pattern=_ADDRESS)
    # The CRD's default: the API server fills it in on every read.
    max_concurrency: int = Field(default=1, alias="maxConcurrency", ge=0, le=1000)
    tls_cert_path: str | None = Field(default=None, alias="tlsCertPath")
    tls_key_path: str | None = Field(default=None, alias="tlsKeyPath")
    tls_security_policy: str | None = Field(default=None, alias="tlsSecurityPolicy")
    protocol_version: Literal["HTTP1", "HTTP2", "GRPC"] | None = Field(
        default=None, alias="protocolVersion")
    rust_log: Literal["debug", "info", "error"] | None = Field(default=None, alias="rustLog")
    resources: ResourceRequirements | None = None


def parse_spec(obj: dict[str, Any]) -> ALBTargetControlConfigSpec:
    """The spec of an ALBTargetControlConfig object; InvalidConfig with the first problem."""
    meta = obj.get("metadata") or {}
    where = f"ALBTargetControlConfig {meta.get('namespace', '')}/{meta.get('name', '')}"
    try:
        return ALBTargetControlConfigSpec.model_validate(obj.get("spec") or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "spec"
        raise InvalidConfig(f"{where}: spec.{field}: {first['msg']}") from None
