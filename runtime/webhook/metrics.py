"""The webhook server's metrics, with controller-runtime's names and labels (`webhook` is the
path a handler is registered on; `code` is the HTTP status of the answer), so dashboards built
for controller-runtime webhooks work unchanged."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runtime import metrics

__all__ = ["CertificateMetrics", "HookMetrics"]

# controller-runtime uses Prometheus' default buckets for webhook latency.
LATENCY_BUCKETS = Histogram.DEFAULT_BUCKETS


class HookMetrics:
    """The children of one registered path."""

    def __init__(self, registry: CollectorRegistry, path: str) -> None:
        self.path = path
        self._requests = metrics.counter(
            registry, "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.", ("webhook", "code"))
        self.latency = metrics.histogram(
            registry, "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests", ("webhook",),
            buckets=LATENCY_BUCKETS).labels(webhook=path)
        self.in_flight = metrics.gauge(
            registry, "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.", ("webhook",)).labels(
            webhook=path)
        self._responses = metrics.counter(
            registry, "controller_runtime_webhook_admission_responses_total",
            "Total number of admission responses by status code and allowed status.",
            ("webhook", "allowed", "admission_code"))
        self.panics: Counter = metrics.counter(
            registry, "controller_runtime_webhook_panics_total",
            "Total number of webhook panics")
        # Present from the start, as controller-runtime initialises the likely codes.
        for code in ("200", "500"):
            self._requests.labels(webhook=path, code=code)
        for allowed, code in (("true", "200"), ("false", "400"), ("false", "403"),
                              ("false", "500")):
            self._responses.labels(webhook=path, allowed=allowed, admission_code=code)

    def answered(self, code: int) -> None:
        self._requests.labels(webhook=self.path, code=str(code)).inc()

    def admission(self, *, allowed: bool, code: int) -> None:
        self._responses.labels(webhook=self.path, allowed=str(allowed).lower(),
                               admission_code=str(code)).inc()


class CertificateMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reads: Counter = metrics.counter(
            registry, "certwatcher_read_certificate_total", "Total number of certificate reads")
        self.errors: Counter = metrics.counter(
            registry, "certwatcher_read_certificate_errors_total",
            "Total number of certificate read errors")
        # Ours (controller-runtime has none): an alert on what is served, whoever renews it
        # (the controller itself, cert-manager, or an operator's Secret).
        self.expiry: Gauge = metrics.gauge(
            registry, "certwatcher_certificate_expiry_timestamp_seconds",
            "Unix time at which the webhook serving certificate in use expires (0: none loaded)")

