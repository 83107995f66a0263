"""Shared base for every model class, and the `$ref` placeholder that links resources."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

T = TypeVar("T")

# Any sequence in, a tuple out: builders may pass lists, models stay immutable.
Items = Annotated[Sequence[T], AfterValidator(tuple)]

LOAD_BALANCER = "AWS::ElasticLoadBalancingV2::LoadBalancer"
LISTENER = "AWS::ElasticLoadBalancingV2::Listener"
LISTENER_RULE = "AWS::ElasticLoadBalancingV2::ListenerRule"
TARGET_GROUP = "AWS::ElasticLoadBalancingV2::TargetGroup"
TARGET_GROUP_BINDING = "K8S::ElasticLoadBalancingV2::TargetGroupBinding"
SECURITY_GROUP = "AWS::EC2::SecurityGroup"
CERTIFICATE = "AWS::CertificateManager::Certificate"

# Dependency order: a resource may only reference resources of an earlier type.
RESOURCE_TYPES: tuple[str, ...] = (
    CERTIFICATE, SECURITY_GROUP, TARGET_GROUP, LOAD_BALANCER, LISTENER, LISTENER_RULE,
    TARGET_GROUP_BINDING,
)

# Status fields a `$ref` may point at, per resource type (filled in by the deployer).
STATUS_FIELDS: dict[str, frozenset[str]] = {
    CERTIFICATE: frozenset({"certificateARN"}),
    SECURITY_GROUP: frozenset({"groupID"}),
    LOAD_BALANCER: frozenset({"loadBalancerARN", "dnsName", "canonicalHostedZoneID"}),
    LISTENER: frozenset({"listenerARN"}),
    LISTENER_RULE: frozenset({"ruleARN"}),
    TARGET_GROUP: frozenset({"targetGroupARN"}),
}

MAX_TAGS = 50
_REF_PREFIX = "#/resources/"
_REF_RE = re.compile(r"^#/resources/([^/]+)/(.+)/status/([A-Za-z]+)$")


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Ref(Model):
    """`{"$ref": "#/resources/<type>/<id>/status/<field>"}`: a deploy-time value (an ARN, a DNS
    name) of another resource in the same stack. The canonical JSON keeps the placeholder, so
    digests never depend on ARNs."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    ref: str = Field(alias="$ref")

    @field_validator("ref")
    @classmethod
    def _shape(cls, value: str) -> str:
        m = _REF_RE.match(value)
        if m is None:
            raise ValueError(f"invalid $ref {value!r}: want #/resources/<type>/<id>/status/<field>")
        if m.group(1) not in STATUS_FIELDS or m.group(3) not in STATUS_FIELDS[m.group(1)]:
            raise ValueError(f"invalid $ref {value!r}: unknown resource type or status field")
        return value

    @classmethod
    def to(cls, resource_type: str, resource_id: str, field: str) -> Ref:
        path = f"{_REF_PREFIX}{resource_type}/{resource_id}/status/{field}"
        return cls.model_validate({"$ref": path})

    @property
    def target(self) -> tuple[str, str, str]:
        """(resource type, resource id, status field)."""
        m = _REF_RE.match(self.ref)
        assert m is not None  # validated on construction
        return m.group(1), m.group(2), m.group(3)


def sorted_unique(values: Any) -> Any:
    """Set-valued lists (subnets, security groups, condition values) are stored sorted and
    deduplicated so that the order a builder produced them in never changes the digest."""
    if isinstance(values, (list, tuple, set, frozenset)):
        items = list(values)
        if all(isinstance(v, str) for v in items):
            return tuple(sorted(set(items)))
    return values


def check_tags(tags: dict[str, str], *, reserve: int = 0) -> dict[str, str]:
    if len(tags) + reserve > MAX_TAGS:
        raise ValueError(
            f"{len(tags)} tags: at most {MAX_TAGS - reserve} allowed"
            + (f" ({MAX_TAGS} minus {reserve} tracking tags)" if reserve else "")
        )
    for key, value in tags.items():
        if not key or len(key) > 128 or len(value) > 256:
            raise ValueError(f"tag {key!r}: keys must be 1..128 chars and values at most 256")
        if key.startswith("aws:"):
            raise ValueError(f"tag {key!r}: the aws: prefix is reserved")
    return tags


TRACKING_TAG_COUNT = 3


class Tagged(Model):
    """Resources carrying user tags; the deployer adds the tracking tags on top."""

    RESERVE: ClassVar[int] = TRACKING_TAG_COUNT
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        return check_tags(value, reserve=cls.RESERVE)
