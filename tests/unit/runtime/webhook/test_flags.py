"""The webhook flags of `aiolbc run`: upstream's names and defaults, ours for self-managed TLS,
and one clear message per bad value."""

from __future__ import annotations

import pytest

from controller.config import ConfigError, parse_config
from runtime.webhook import DEFAULT_CERT_DIR, DEFAULT_PORT


def test_defaults_match_upstream_and_the_server() -> None:
    cfg = parse_config(["--cluster-name", "c"])
    hooks = cfg.webhooks
    assert (hooks.bind_port, hooks.cert_dir, hooks.cert_file,
            hooks.key_file) == (9443, "/tmp/k8s-webhook-server/serving-certs", "tls.crt",
                                "tls.key")
    assert (hooks.bind_port, hooks.cert_dir) == (DEFAULT_PORT, DEFAULT_CERT_DIR)
    assert hooks.tls_mode == "self-managed"
    # The names upstream's Helm chart uses, so its Secret is adopted after a switch.
    assert (hooks.secret_name, hooks.service_name,
            hooks.configuration_name) == ("aws-load-balancer-tls",
                                                "aws-load-balancer-webhook-service",
                                                "aws-load-balancer-webhook")


def test_values_are_parsed() -> None:
    cfg = parse_config(["--cluster-name", "c", "--webhook-bind-port", "10250",
                        "--webhook-cert-dir", "/certs", "--webhook-cert-file", "cert.pem",
                        "--webhook-key-file", "key.pem", "--webhook-tls-mode", "files",
                        "--webhook-secret-name", "s", "--webhook-service-name", "svc",
                        "--webhook-configuration-name", "hooks"])
    hooks = cfg.webhooks
    assert (hooks.bind_port, hooks.cert_dir, hooks.cert_file,
            hooks.key_file, hooks.tls_mode, hooks.secret_name,
            hooks.service_name, hooks.configuration_name) == (
        10250, "/certs", "cert.pem", "key.pem", "files", "s", "svc", "hooks")


def test_port_zero_turns_the_server_off_and_the_host_is_an_address_or_a_name() -> None:
    from controller.app import webhook_settings
    off = parse_config(["--cluster-name", "c", "--webhook-bind-port", "0"])
    assert webhook_settings(off, region="us-west-2") is None
    on = parse_config(["--cluster-name", "c", "--webhook-bind-host", "[::1]",
                       "--webhook-bind-port", "9444"])
    settings = webhook_settings(on, region="us-west-2")
    assert settings is not None
    assert (settings.server.host, settings.server.port) == ("::1", 9444)
    assert settings.tls is not None
    assert settings.tls.dns_names[0].startswith("aws-load-balancer-webhook-service.")
    assert settings.tls.mutating_configurations == ("aws-load-balancer-webhook",)
    files = parse_config(["--cluster-name", "c", "--webhook-tls-mode", "files"])
    assert webhook_settings(files, region="us-west-2").tls is None  # type: ignore[union-attr]


def test_readiness_gate_and_service_mutator_flags() -> None:
    cfg = parse_config(["--cluster-name", "c"])
    assert cfg.webhooks.pod_readiness_gate_inject is True
    assert cfg.webhooks.service_mutator is False
    assert cfg.targetgroupbinding.requeue_duration == 15.0
    cfg = parse_config(["--cluster-name", "c", "--enable-pod-readiness-gate-inject=false",
                        "--enable-service-mutator-webhook", "--targetgroupbinding-requeue-duration",
                        "2s"])
    assert (cfg.webhooks.pod_readiness_gate_inject, cfg.webhooks.service_mutator,
            cfg.targetgroupbinding.requeue_duration) == (False, True, 2.0)


@pytest.mark.parametrize(("argv", "message"), [
    (["--webhook-bind-port", "-1"], "--webhook-bind-port: Input should be greater than or "
                                    "equal to 0"),
    (["--webhook-bind-host", "not a host"], "--webhook-bind-host: 'not a host' is not"),
    (["--targetgroupbinding-requeue-duration", "0s"],
     "--targetgroupbinding-requeue-duration: Input should be greater than 0"),
    (["--enable-pod-readiness-gate-inject", "maybe"],
     "--enable-pod-readiness-gate-inject: expected true or false"),
    (["--webhook-bind-port", "70000"], "--webhook-bind-port: Input should be less than or "
                                       "equal to 65535"),
    (["--webhook-bind-port", "https"], "--webhook-bind-port: Input should be a valid integer"),
    (["--webhook-tls-mode", "cert-manager"],
     "--webhook-tls-mode: Input should be 'self-managed' or 'files'"),
    (["--webhook-secret-name", ""], "--webhook-secret-name: String should have at least 1"),
])
def test_bad_values_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["--cluster-name", "c", *argv])
    assert str(info.value).startswith(message)
