"""The shared AWS client pool: one aiobotocore session per process, one client per (service,
region), client-side throttling with upstream's `--aws-api-throttle` syntax, botocore
`standard` retries and upstream's AWS API metrics."""

from controller.aws.budget import VerificationBudget
from controller.aws.errors import AWSConfigError, AWSError
from controller.aws.metrics import AWSMetrics, metrics_for
from controller.aws.pool import AWSClientPool
from controller.aws.settings import AWSSettings, parse_endpoints
from controller.aws.throttle import (
    DEFAULT_THROTTLE,
    ELBV2,
    ThrottleConfig,
    Throttler,
    ThrottleRule,
    parse_throttle,
)

__all__ = [
    "DEFAULT_THROTTLE",
    "ELBV2",
    "AWSClientPool",
    "AWSConfigError",
    "AWSError",
    "AWSMetrics",
    "AWSSettings",
    "ThrottleConfig",
    "ThrottleRule",
    "Throttler",
    "VerificationBudget",
    "metrics_for",
    "parse_endpoints",
    "parse_throttle",
]
