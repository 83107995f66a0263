"""`service.beta.kubernetes.io/actions.<PROTOCOL>-<port>`: an NLB listener's default action,
weighted between the Service's own target group (`baseServiceWeight`) and other target groups
(upstream's `Action`, `pkg/service/config_types.go`, with its JSON names and its checks).

Upstream validates an action so: the type is `forward` ("unknown action type"); each target
group names precisely one of `targetGroupARN` and `serviceName`, a `serviceName` with a
`servicePort`, a weight within 0..999; several target groups each carry a weight. Here also,
as one message before any AWS call (AWS or upstream would fail later, or crash): a
`forwardConfig` is present (upstream dereferences it unchecked), `baseServiceWeight` is within
0..999, at most four target groups beside the Service's own (AWS's five per action, upstream's
`MaxProperties=4`), and `targetGroupARN` is a target group's ARN.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from controller.annotations import AnnotationError, annotations_of, note_read, parse_json

ACTIONS: Final = "actions."
PREFIX: Final = "service.beta.kubernetes.io/"
MAX_OTHER_TARGET_GROUPS: Final = 4

_TARGET_GROUP_ARN = re.compile(
    r"arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:[0-9]{12}:targetgroup/[A-Za-z0-9-]{1,32}"
    r"/[0-9a-f]{16}")


class _Go(BaseModel):
    # Go's encoding/json ignores fields the struct lacks.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class TargetGroupTuple(_Go):
    target_group_arn: str | None = Field(default=None, alias="targetGroupARN")
    service_name: str | None = Field(default=None, alias="serviceName", max_length=253)
    service_port: int | str | None = Field(default=None, alias="servicePort")
    decrypt: bool | None = None
    weight: int | None = None

    @model_validator(mode="after")
    def _check(self) -> TargetGroupTuple:
        if (self.target_group_arn is not None) == (self.service_name is not None):
            raise ValueError("precisely one of targetGroupARN and serviceName can be specified")
        if self.service_name is not None and self.service_port is None:
            raise ValueError("missing servicePort")
        if self.weight is not None and not 0 <= self.weight <= 999:
            raise ValueError("target group weight must be between 0 and 999")
        if (self.target_group_arn is not None
                and _TARGET_GROUP_ARN.fullmatch(self.target_group_arn) is None):
            raise ValueError(f"targetGroupARN {self.target_group_arn[:120]!r} is not the ARN "
                             "of a target group")
        return self


class StickinessConfig(_Go):
    enabled: bool | None = None


class ForwardConfig(_Go):
    base_service_weight: int | None = Field(default=None, alias="baseServiceWeight")
    target_groups: tuple[TargetGroupTuple, ...] = Field(default=(), alias="targetGroups")
    stickiness: StickinessConfig | None = Field(default=None,
                                                alias="targetGroupStickinessConfig")

    @model_validator(mode="after")
    def _check(self) -> ForwardConfig:
        if len(self.target_groups) > 1 and any(t.weight is None for t in self.target_groups):
            raise ValueError("weight must be set when routing to multiple target groups")
        if len(self.target_groups) > MAX_OTHER_TARGET_GROUPS:
            raise ValueError(f"at most {MAX_OTHER_TARGET_GROUPS} target groups beside the "
                             "Service's own (AWS forwards to at most 5)")
        if self.base_service_weight is not None and not 0 <= self.base_service_weight <= 999:
            raise ValueError("baseServiceWeight must be between 0 and 999")
        return self


class ListenerAction(_Go):
    type: str
    forward_config: ForwardConfig | None = Field(default=None, alias="forwardConfig")

    @model_validator(mode="after")
    def _check(self) -> ListenerAction:
        if self.type != "forward":
            raise ValueError(f"unknown action type: {self.type[:40]}")
        if self.forward_config is None:
            raise ValueError("a forward action needs forwardConfig")
        return self

    @property
    def forward(self) -> ForwardConfig:
        assert self.forward_config is not None  # the validator's guarantee
        return self.forward_config

    @property
    def stickiness(self) -> bool | None:
        """Upstream's TargetGroupStickinessConfig.Enabled; None: not configured."""
        sticky = self.forward.stickiness
        return None if sticky is None else bool(sticky.enabled)


def parse_listener_actions(service: Mapping[str, Any]) -> dict[str, ListenerAction]:
    """The `actions.<PROTOCOL>-<port>` keys, by `<PROTOCOL>-<port>`; raises the first
    `AnnotationError` in key order."""
    start = PREFIX + ACTIONS
    note_read(start + "*")
    found: dict[str, ListenerAction] = {}
    for key, value in sorted(annotations_of(service).items()):
        if not (isinstance(key, str) and key.startswith(start) and len(key) > len(start)):
            continue
        if not isinstance(value, str):
            raise AnnotationError(key, None, f"is not a string (got {type(value).__name__})")
        found[key[len(start):]] = parse_json(key, value, ListenerAction)
    return found


def other_target_group_arns(actions: Mapping[str, ListenerAction]) -> list[str]:
    """The target groups by ARN the actions forward to (each checked before a deploy)."""
    return sorted({t.target_group_arn for a in actions.values() for t in a.forward.target_groups
                   if t.target_group_arn is not None})


__all__ = [
    "ACTIONS",
    "ForwardConfig",
    "ListenerAction",
    "TargetGroupTuple",
    "other_target_group_arns",
    "parse_listener_actions",
]
