"""client-go's REST client metrics, under the names controller-runtime exports them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from runtime.metrics import counter, default_registry, histogram

REQUEST_DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class RestClientMetrics:
    """`rest_client_requests_total{code,method,host}` and
    `rest_client_request_duration_seconds{verb,host}`; `code` is "<error>" when no HTTP answer
    arrived, as in client-go. Clients sharing a registry share the families."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = default_registry() if registry is None else registry
        self.requests = counter(
            registry, "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"])
        self.duration = histogram(
            registry, "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"], buckets=REQUEST_DURATION_BUCKETS)

    def observe(self, *, method: str, host: str, code: int | None, seconds: float) -> None:
        self.requests.labels(code=str(code) if code else "<error>", method=method,
                             host=host).inc()
        self.duration.labels(verb=method, host=host).observe(seconds)
