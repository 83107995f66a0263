"""The admission webhook server and its self-managed TLS (see README.md)."""

from runtime.webhook.admission import (
    AdmissionRequest,
    AdmissionResponse,
    GroupVersionKind,
    GroupVersionResource,
    ReviewError,
    allowed,
    denied,
    errored,
    patched,
)
from runtime.webhook.certs import CertificateError, KeyPair
from runtime.webhook.jsonpatch import create_patch
from runtime.webhook.selfmanaged import (
    SecretBundle,
    SelfManagedCertificates,
    SelfManagedTLS,
    service_dns_names,
)
from runtime.webhook.server import (
    DEFAULT_CERT_DIR,
    DEFAULT_PORT,
    FailurePolicy,
    Handler,
    WebhookServer,
    WebhookServerOptions,
)

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_PORT",
    "AdmissionRequest",
    "AdmissionResponse",
    "CertificateError",
    "FailurePolicy",
    "GroupVersionKind",
    "GroupVersionResource",
    "Handler",
    "KeyPair",
    "ReviewError",
    "SecretBundle",
    "SelfManagedCertificates",
    "SelfManagedTLS",
    "WebhookServer",
    "WebhookServerOptions",
    "allowed",
    "create_patch",
    "denied",
    "errored",
    "patched",
    "service_dns_names",
]
