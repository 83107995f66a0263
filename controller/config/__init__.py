"""`aiolbc run`'s configuration: the per-concern sections, each declaring its own flags
(upstream's names and defaults, one parser and one help each, `runtime.flags`), assembled into
one frozen `ControllerConfig`, plus the feature gates. A bad value stops start-up with one
message naming the flag, and so does a value AWS or Kubernetes would refuse later (tags, names,
timings): nothing starts with it. Sections used by one controller are declared in its package;
only app.py, main.py and preflight/ (and tests) import this package."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from controller.config.checkpoints import CheckpointConfig
from controller.config.cloud import CloudConfig
from controller.config.cluster import ClusterConfig
from controller.config.featuregates import GATES
from controller.config.metrics import MetricsConfig
from controller.config.runtime import RuntimeConfig
from controller.config.unbuilt import UnbuiltConfig
from controller.ingress.settings import IngressConfig
from controller.networking.settings import BackendSettings
from controller.service.settings import ServiceConfig
from controller.settings import StabilizationMonitor, StackDefaults
from controller.targetgroupbinding.settings import TargetGroupBindingConfig
from controller.webhooks.settings import WebhookConfig
from runtime import flags
from runtime.featuregates import FeatureGates
from runtime.flags import flag, section


class ConfigError(flags.FlagError):
    """A flag value that cannot be used; the message names the flag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerConfig:
    cluster: ClusterConfig = section(ClusterConfig, title="cluster", required=True)
    aws: CloudConfig = section(CloudConfig, title="AWS")
    runtime: RuntimeConfig = section(RuntimeConfig, title="runtime and leader election")
    metrics: MetricsConfig = section(MetricsConfig, title="metrics and health probes")
    webhooks: WebhookConfig = section(WebhookConfig, title="admission webhooks")
    checkpoints: CheckpointConfig = section(CheckpointConfig, title="checkpoints")
    # Shared by the Ingress and Service controllers (and, for security groups, the
    # TargetGroupBinding controller).
    defaults: StackDefaults = section(StackDefaults, title="stack defaults")
    networking: BackendSettings = section(BackendSettings, title="security groups")
    stabilization: StabilizationMonitor = section(StabilizationMonitor,
                                                  title="load balancer stabilization")
    ingress: IngressConfig = section(IngressConfig, title="Ingress")
    service: ServiceConfig = section(ServiceConfig, title="Service")
    targetgroupbinding: TargetGroupBindingConfig = section(TargetGroupBindingConfig,
                                                           title="TargetGroupBinding")
    unbuilt: UnbuiltConfig = section(
        UnbuiltConfig, title="capabilities not built yet (Gateway API, Global Accelerator)")
    gates: FeatureGates = flag(
        "--feature-gates", default=GATES, parse=GATES.parse, show=FeatureGates.text,
        metavar="NAME=BOOL,...",
        help="feature gates with upstream's names and defaults (listed below)")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register the `aiolbc run` flags; names and defaults follow the upstream controller."""
    flags.add_arguments(parser, ControllerConfig)
    parser.epilog = (
        "feature gates (--feature-gates=Name=true,Other=false), with upstream v3.5.0's\n"
        "defaults; a gate aiolbc does not act on yet is pinned to what aiolbc does, and\n"
        "the other value is refused:\n" + GATES.describe())
    # The gates' table keeps its lines; the flags' help is wrapped as usual.
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def config_from_args(args: argparse.Namespace) -> ControllerConfig:
    """Build the config; raises ConfigError with one line naming the offending flag."""
    try:
        return flags.load(ControllerConfig, flags.given(args, ControllerConfig))
    except flags.FlagError as exc:
        raise ConfigError(str(exc)) from None


def parse_config(argv: Sequence[str]) -> ControllerConfig:
    """Parse flags alone (used by tests and by `aiolbc run`)."""
    parser = argparse.ArgumentParser(prog="aiolbc run")
    add_flags(parser)
    return config_from_args(parser.parse_args(list(argv)))


__all__ = ["ConfigError", "ControllerConfig", "add_flags", "config_from_args", "parse_config"]
