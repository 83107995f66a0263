"""The controllers' settings for tests: the seeded VPC, quick retries of in-use target groups,
quick polling for deleted bindings, `aiolbc run`'s feature gates, and whatever a test overrides.
Nested pieces may be given flat: lane settings (`service_settings(seed, verify_qps=4.0)`), the
kind's own flags (`tgb_settings(seed, requeue_duration=0.05)`) and stack defaults
(`ingress_settings(seed, target_type="ip")`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from controller import ingress as ingress_controller
from controller import service as service_controller
from controller import targetgroupbinding as tgb_controller
from controller.config.featuregates import GATES
from controller.networking.settings import NetworkingSettings
from controller.reconcilers import LaneSettings
from controller.settings import ClusterScope, StackDefaults
from controller.standins import AwsSeed


def _nest(overrides: dict[str, Any], name: str, cls: type[Any],
          base: Any | None = None) -> None:
    """Overrides naming fields of `cls` gathered into `overrides[name]` (on top of `base`)."""
    flat = {k: overrides.pop(k) for k in list(overrides)
            if k in {f.name for f in dataclasses.fields(cls)}}
    if flat or base is not None:
        overrides[name] = dataclasses.replace(base, **flat) if base is not None else cls(**flat)


def _scope(seed: AwsSeed) -> ClusterScope:
    return ClusterScope(name=seed.cluster_name, region=seed.region, vpc_id=seed.vpc_id)


def service_settings(seed: AwsSeed, **overrides: Any) -> service_controller.Settings:
    """The Service controller on the seeded VPC, retrying in-use target groups and polling
    for deleted bindings quickly."""
    _nest(overrides, "lanes", LaneSettings)
    _nest(overrides, "config", service_controller.ServiceConfig)
    _nest(overrides, "defaults", StackDefaults)
    values: dict[str, Any] = {"cluster": _scope(seed), "gates": GATES, "in_use_backoff": 0.01,
                              "cleanup_poll": 0.2, "security_group_backoff": 0.05, **overrides}
    return service_controller.Settings(**values)


def ingress_settings(seed: AwsSeed, **overrides: Any) -> ingress_controller.Settings:
    """As `service_settings`, with ip targets by default."""
    _nest(overrides, "lanes", LaneSettings)
    _nest(overrides, "config", ingress_controller.IngressConfig)
    _nest(overrides, "defaults", StackDefaults, StackDefaults(target_type="ip"))
    values: dict[str, Any] = {"cluster": _scope(seed), "gates": GATES, "in_use_backoff": 0.01,
                              "cleanup_poll": 0.2, "security_group_backoff": 0.05, **overrides}
    return ingress_controller.Settings(**values)


def tgb_settings(seed: AwsSeed, **overrides: Any) -> tgb_controller.Settings:
    """The TargetGroupBinding controller for the seeded cluster and VPC, otherwise its own
    defaults, with these overrides; managing `spec.networking` rules in the seeded VPC (every
    group's rules read again on each pass, so drift tests see repairs at once)."""
    _nest(overrides, "lanes", LaneSettings)
    _nest(overrides, "config", tgb_controller.TargetGroupBindingConfig)
    scope = _scope(seed)
    values: dict[str, Any] = {
        "cluster": scope, "gates": GATES,
        "networking": NetworkingSettings(cluster=scope, verify_interval=0.0),
        **overrides}
    return tgb_controller.Settings(**values)
