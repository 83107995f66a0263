"""The controllers' settings for tests: the seeded VPC, quick retries of in-use target groups,
quick polling for deleted bindings, and whatever a test overrides (lane settings may be given
flat: `service_settings(seed, verify_qps=4.0)`)."""

from __future__ import annotations

from typing import Any

from controller import ingress as ingress_controller
from controller import service as service_controller
from controller import targetgroupbinding as tgb_controller
from controller.networking.manager import NetworkingSettings
from controller.reconcilers import LaneSettings
from controller.standins import AwsSeed


def _lanes(overrides: dict[str, Any]) -> None:
    """Lane settings may be given flat (`verify_qps=...`): gather them into `lanes`."""
    flat = {k: overrides.pop(k) for k in list(overrides)
            if k in LaneSettings.__dataclass_fields__}
    if flat:
        overrides["lanes"] = LaneSettings(**flat)


def service_settings(seed: AwsSeed, **overrides: Any) -> service_controller.Settings:
    """The Service controller on the seeded VPC, retrying in-use target groups and polling
    for deleted bindings quickly."""
    _lanes(overrides)
    values: dict[str, Any] = {"cluster_name": seed.cluster_name, "region": seed.region,
                              "vpc_id": seed.vpc_id, "in_use_backoff": 0.01,
                              "cleanup_poll": 0.2, "security_group_backoff": 0.05, **overrides}
    return service_controller.Settings(**values)


def ingress_settings(seed: AwsSeed, **overrides: Any) -> ingress_controller.Settings:
    """As `service_settings`, with ip targets by default."""
    _lanes(overrides)
    values: dict[str, Any] = {"cluster_name": seed.cluster_name, "region": seed.region,
                              "vpc_id": seed.vpc_id, "default_target_type": "ip",
                              "in_use_backoff": 0.01, "cleanup_poll": 0.2,
                              "security_group_backoff": 0.05, **overrides}
    return ingress_controller.Settings(**values)


def tgb_settings(seed: AwsSeed, **overrides: Any) -> tgb_controller.Settings:
    """The TargetGroupBinding controller for the seeded cluster and VPC, otherwise its own
    defaults, with these overrides; managing `spec.networking` rules in the seeded VPC (every
    group's rules read again on each pass, so drift tests see repairs at once)."""
    _lanes(overrides)
    values: dict[str, Any] = {
        "cluster_name": seed.cluster_name, "vpc_id": seed.vpc_id,
        "networking": NetworkingSettings(cluster_name=seed.cluster_name, vpc_id=seed.vpc_id,
                                         verify_interval=0.0),
        **overrides}
    return tgb_controller.Settings(**values)
