"""AWS API metrics, with upstream's names and labels (subsystem `aws`), so existing dashboards
work. `service` is the SDK service id (`Elastic Load Balancing v2`), as upstream reports it.

`aws_api_call_retries` is a histogram per call, as upstream: `_count` is calls, `_sum` is
retries.
"""

from __future__ import annotations

import weakref

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

# The AWS SDK for Go's throttle error codes (`retry.DefaultThrottleErrorCodes`), by which
# upstream counts a call in aws_api_call_throttled_errors_total.
THROTTLE_ERROR_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException",
    "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
    "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
    "EC2ThrottledException"})
_CALL_LABELS = ["service", "operation", "status_code", "error_code"]

_RETRY_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
_WAIT_BUCKETS = (0.0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class AWSMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "aws_api_calls_total", "AWS API calls, after retries.",
            ["service", "operation", "status_code", "error_code"], registry=registry)
        self.call_duration = Histogram(
            "aws_api_call_duration_seconds", "Duration of AWS API calls, retries included.",
            ["service", "operation"], registry=registry)
        self.call_retries = Histogram(
            "aws_api_call_retries", "Retries per AWS API call.",
            ["service", "operation"], buckets=_RETRY_BUCKETS, registry=registry)
        # A failed call counted once more by why it failed, in upstream's order
        # (pkg/metrics/aws/collector.go): permissions, service limits, throttling, validation.
        self.permission_errors = Counter(
            "aws_api_call_permission_errors_total",
            "AWS API calls that failed for authentication or authorization.",
            _CALL_LABELS, registry=registry)
        self.limit_exceeded_errors = Counter(
            "aws_api_call_service_limit_exceeded_errors_total",
            "AWS API calls that failed for exceeding a service limit.",
            _CALL_LABELS, registry=registry)
        self.throttled_errors = Counter(
            "aws_api_call_throttled_errors_total",
            "AWS API calls that failed for throttling.", _CALL_LABELS, registry=registry)
        self.validation_errors = Counter(
            "aws_api_call_validation_errors_total",
            "AWS API calls that failed validation.", _CALL_LABELS, registry=registry)
        # 1 for each TargetGroupBinding's target group, as upstream, so that CloudWatch's
        # target group metrics (their `TargetGroup` dimension) join to namespace and Service.
        self.target_group_info = Gauge(
            "aws_target_group_info", "Information available about target group.",
            ["namespace", "service", "target_group"], registry=registry)
        self.requests = Counter(
            "aws_api_requests_total", "HTTP requests (attempts) sent to AWS APIs.",
            ["service", "operation", "status_code", "error_code"], registry=registry)
        self.throttle_wait = Histogram(
            "aws_api_throttle_wait_seconds",
            "Time AWS API calls waited for the client-side throttle.",
            ["service", "operation"], buckets=_WAIT_BUCKETS, registry=registry)
        # Not an upstream metric: the calls paced LOW-lane verifications charged to the
        # verification budget (their waits for it are part of aws_api_throttle_wait_seconds).
        self.verification_calls = Counter(
            "aiolbc_aws_verification_calls_total",
            "AWS API calls made by paced verifications and charged to the verification budget.",
            ["service", "operation"], registry=registry)


def count_failure(metrics: AWSMetrics, service: str, operation: str, status: str,
                  code: str) -> None:
    """A finished call in the failure counter its status and error code belong to, if any."""
    labels = (service, operation, status, code)
    if status in ("401", "403") or code in ("AccessDeniedException", "AuthFailure"):
        metrics.permission_errors.labels(*labels).inc()
    elif "LimitExceeded" in code:
        metrics.limit_exceeded_errors.labels(*labels).inc()
    elif code in THROTTLE_ERROR_CODES:
        metrics.throttled_errors.labels(*labels).inc()
    elif code == "ValidationError":
        metrics.validation_errors.labels(*labels).inc()


def target_group_dimension(arn: str) -> str:
    """CloudWatch's `TargetGroup` dimension of a target group ARN
    (`targetgroup/<name>/<id>`)."""
    return arn[arn.rfind(":") + 1:]


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, AWSMetrics] = (
    weakref.WeakKeyDictionary())


def metrics_for(registry: CollectorRegistry | None) -> AWSMetrics:
    """The AWS metrics of `registry` (the process default when None), registered once: several
    pools in one process share them instead of failing on duplicate registration."""
    target = REGISTRY if registry is None else registry
    metrics = _BY_REGISTRY.get(target)
    if metrics is None:
        metrics = AWSMetrics(target)
        _BY_REGISTRY[target] = metrics
    return metrics
