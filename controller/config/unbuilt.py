"""Upstream's flags of capabilities aiolbc does not build yet (the Gateway API, Global
Accelerator), declared with upstream's names, defaults
and rules so that upstream's command lines start. Each capability is behind a feature gate
pinned off (`featuregates.py`), so no value of these flags can change what the controller does
yet; a value upstream would refuse is refused here too."""

from __future__ import annotations

from dataclasses import dataclass

from controller.defaults import DEFAULT_MAX_BACKOFF, DEFAULT_MAX_CONCURRENT_RECONCILES
from controller.reconcilers import MAX_CONCURRENT_RECONCILES
from runtime import flagvalues
from runtime.flags import flag

# Upstream's defaults (`pkg/config/controller_config.go`).
DEFAULT_GLOBAL_ACCELERATOR_MAX_CONCURRENT_RECONCILES = 1

_NOT_BUILT = " (not built yet: its feature gate is pinned off)"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnbuiltConfig:
    gateway_class_max_concurrent_reconciles: int = flag(
        "--gateway-class-max-concurrent-reconciles", default=DEFAULT_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many GatewayClasses are reconciled at once" + _NOT_BUILT)
    alb_gateway_max_concurrent_reconciles: int = flag(
        "--alb-gateway-max-concurrent-reconciles", default=DEFAULT_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many ALB Gateways are reconciled at once" + _NOT_BUILT)
    nlb_gateway_max_concurrent_reconciles: int = flag(
        "--nlb-gateway-max-concurrent-reconciles", default=DEFAULT_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many NLB Gateways are reconciled at once" + _NOT_BUILT)
    globalaccelerator_max_concurrent_reconciles: int = flag(
        "--globalaccelerator-max-concurrent-reconciles",
        default=DEFAULT_GLOBAL_ACCELERATOR_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many GlobalAccelerators are reconciled at once" + _NOT_BUILT)
    globalaccelerator_max_exponential_backoff_delay: float = flag(
        "--globalaccelerator-max-exponential-backoff-delay", default=DEFAULT_MAX_BACKOFF,
        parse=flagvalues.parse_duration, check=flagvalues.greater_than(0),
        help="the longest wait before a failed GlobalAccelerator is retried" + _NOT_BUILT)


__all__ = ["UnbuiltConfig"]
