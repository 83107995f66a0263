"""Upstream's defaults (pkg/config/*.go), one home for the flags, the model builders and the
docs. A leaf module: the pure model stages read defaults from here, never from the CLI."""

from __future__ import annotations

from typing import Final

DEFAULT_LEADER_ELECTION_ID: Final = "aws-load-balancer-controller-leader"
DEFAULT_METRICS_BIND_ADDR: Final = ":8080"
DEFAULT_HEALTH_PROBE_BIND_ADDR: Final = ":61779"
DEFAULT_INGRESS_CLASS: Final = "alb"
DEFAULT_LOAD_BALANCER_CLASS: Final = "service.k8s.aws/nlb"
DEFAULT_SSL_POLICY: Final = "ELBSecurityPolicy-2016-08"
# A rule whose backend Service or `actions.<name>` annotation is missing answers 503.
DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_SERVICE: Final = True
DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_ACTION: Final = True
DEFAULT_MAX_CONCURRENT_RECONCILES: Final = 3
DEFAULT_SYNC_PERIOD: Final = 10 * 3600.0
DEFAULT_MAX_BACKOFF: Final = 1000.0  # 16m40s: a failed reconcile's longest wait
# A new load balancer still provisioning: looked at again after this long before its capacity
# reservation is set (upstream's --lb-stabilization-monitor-interval).
DEFAULT_LB_STABILIZATION_MONITOR_INTERVAL: Final = 120.0
DEFAULT_TGB_REQUEUE_DURATION: Final = 15.0  # readiness gates: target health read again
DEFAULT_AWS_MAX_RETRIES: Final = 10
DEFAULT_WEBHOOK_BIND_PORT: Final = 9443
DEFAULT_WEBHOOK_CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
# Self-managed webhook TLS: the names upstream's Helm chart gives these objects, so that its
# Secret is adopted as it is after a switch.
DEFAULT_WEBHOOK_SECRET_NAME: Final = "aws-load-balancer-tls"
DEFAULT_WEBHOOK_SERVICE_NAME: Final = "aws-load-balancer-webhook-service"
DEFAULT_WEBHOOK_CONFIGURATION_NAME: Final = "aws-load-balancer-webhook"
