"""The webhook server's settings: its flags (`WebhookConfig`: one declaration each, next to the
field it fills, and the server and TLS options they make) and `Settings`, what `setup` takes."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

from controller import flagrules, ingress
from controller.apis import DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME
from controller.defaults import (
    DEFAULT_WEBHOOK_BIND_PORT,
    DEFAULT_WEBHOOK_CERT_DIR,
    DEFAULT_WEBHOOK_CONFIGURATION_NAME,
    DEFAULT_WEBHOOK_SECRET_NAME,
    DEFAULT_WEBHOOK_SERVICE_NAME,
)
from controller.networking.policy import NetworkingPolicy
from controller.service.settings import ServiceConfig
from controller.targetgroupbinding import Scope
from runtime import flagvalues
from runtime.featuregates import FeatureGates
from runtime.flags import flag
from runtime.webhook import SelfManagedTLS, WebhookServerOptions, service_dns_names


def _host(text: str) -> str:
    """An address (brackets around IPv6 dropped) or a DNS name; empty: every interface."""
    host = text.strip().removeprefix("[").removesuffix("]")
    if host:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            problem = flagrules.dns_subdomain_problem(host)
            if problem:
                raise ValueError(problem) from None
    return host


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookConfig:
    bind_port: int = flag(
        "--webhook-bind-port", default=DEFAULT_WEBHOOK_BIND_PORT, parse=flagvalues.parse_int,
        check=flagvalues.within(0, 65535),
        help="port the admission webhook server listens on (0: no webhook server)")
    bind_host: str = flag(
        "--webhook-bind-host", default="", parse=_host,
        help="address the webhook server listens on (default: every interface)")
    cert_dir: str = flag(
        "--webhook-cert-dir", default=DEFAULT_WEBHOOK_CERT_DIR, parse=str,
        check=flagvalues.non_empty, help="directory of the webhook serving certificate and key")
    cert_file: str = flag(
        "--webhook-cert-file", default="tls.crt", parse=str, check=flagvalues.non_empty,
        help="certificate file in --webhook-cert-dir")
    key_file: str = flag(
        "--webhook-key-file", default="tls.key", parse=str, check=flagvalues.non_empty,
        help="key file in --webhook-cert-dir")
    tls_mode: Literal["self-managed", "files"] = flag(
        "--webhook-tls-mode", default="self-managed",
        parse=flagvalues.choice("self-managed", "files"),
        help="self-managed: the controller keeps its own CA and certificate in "
        "--webhook-secret-name and injects the CA into its webhook configurations; files: serve "
        "the files in --webhook-cert-dir (e.g. mounted from cert-manager), reloaded on change")
    secret_name: str = flag(
        "--webhook-secret-name", default=DEFAULT_WEBHOOK_SECRET_NAME, parse=str,
        check=flagvalues.non_empty,
        help="Secret (in the controller's namespace) of the self-managed certificate")
    service_name: str = flag(
        "--webhook-service-name", default=DEFAULT_WEBHOOK_SERVICE_NAME, parse=str,
        check=flagvalues.non_empty,
        help="Service the API server calls the webhooks through (the certificate's DNS names)")
    configuration_name: str = flag(
        "--webhook-configuration-name", default=DEFAULT_WEBHOOK_CONFIGURATION_NAME, parse=str,
        check=flagvalues.non_empty,
        help="Mutating- and ValidatingWebhookConfiguration that get the self-managed CA bundle")
    pod_readiness_gate_inject: bool = flag(
        "--enable-pod-readiness-gate-inject", default=True, parse=flagvalues.parse_bool,
        help="add target-health readiness gates to new pods in namespaces labelled "
        "elbv2.k8s.aws/pod-readiness-gate-inject=enabled")
    service_mutator: bool = flag(
        "--enable-service-mutator-webhook", default=False, parse=flagvalues.parse_bool,
        help="give LoadBalancer Services without spec.loadBalancerClass --load-balancer-class "
        "(needs the mservice webhook in the MutatingWebhookConfiguration)")

    def server_options(self) -> WebhookServerOptions:
        return WebhookServerOptions(host=self.bind_host or None, port=self.bind_port,
                                    cert_dir=self.cert_dir, cert_name=self.cert_file,
                                    key_name=self.key_file)

    def self_managed_tls(self, namespace: str) -> SelfManagedTLS | None:
        """None with `--webhook-tls-mode=files`. The Secret lives in `namespace`, the
        controller's own, with its Lease and the webhook Service."""
        if self.tls_mode != "self-managed":
            return None
        return SelfManagedTLS(
            secret_namespace=namespace, secret_name=self.secret_name,
            dns_names=service_dns_names(self.service_name, namespace),
            mutating_configurations=(self.configuration_name,),
            validating_configurations=(self.configuration_name,))


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    server: WebhookServerOptions
    tls: SelfManagedTLS | None  # None: serve the files in server.cert_dir as they change
    # Whose target groups bindings may use (the TargetGroupBinding controller's scope) and how
    # Ingresses are read (the Ingress controller's settings).
    scope: Scope
    ingress: ingress.Settings
    # What a binding's `spec.networking` may ask for (the TargetGroupBinding controller's
    # policy); None: not checked at admission.
    networking: NetworkingPolicy | None = None
    # Which handlers act (--enable-pod-readiness-gate-inject, --enable-service-mutator-webhook).
    config: WebhookConfig = field(default_factory=WebhookConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)  # the mutator's class
    gates: FeatureGates = field(default_factory=FeatureGates)
    # --quic-environment-variable-name (the TargetGroupBinding controller's flag, which reads
    # the IDs the pod webhook injects).
    quic_env: str = DEFAULT_QUIC_ENVIRONMENT_VARIABLE_NAME
    # Where the ALB target control agent's config is looked for after the pod's namespace
    # (upstream: kube-system, where it is installed; here, wherever the controller runs).
    controller_namespace: str = "kube-system"


__all__ = ["Settings", "WebhookConfig"]
