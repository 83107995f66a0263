"""The webhook server answers for a handler that fails or runs out of time as the shipped
configurations' failurePolicy says, and well inside their timeoutSeconds."""

from __future__ import annotations

import yaml

from controller.webhooks import handlers
from runtime.webhook import WebhookServerOptions
from tests.support.paths import MANIFESTS

CONFIGURATIONS = ("mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml")


def shipped_webhooks() -> list[dict[str, object]]:
    hooks = []
    for name in CONFIGURATIONS:
        doc = yaml.safe_load((MANIFESTS / "webhook" / name).read_text())
        hooks += doc["webhooks"]
    return hooks


def test_the_server_answers_as_the_shipped_failure_policy_says() -> None:
    hooks = shipped_webhooks()
    assert hooks
    for hook in hooks:
        path = hook["clientConfig"]["service"]["path"]  # type: ignore[index]
        assert hook["failurePolicy"] == handlers.failure_policy(str(path)), hook["name"]
    # Fail only where upstream has it and a pod admitted without the webhook could never be
    # served: the QUIC server IDs, and the ALB target control agent (a pod that asked for the
    # sidecar would take the load balancer's traffic without it).
    assert {h["name"] for h in hooks if h["failurePolicy"] == "Fail"} == {
        "quicid.elbv2.k8s.aws", "alb-target-control.namespace.elbv2.k8s.aws",
        "alb-target-control.object.elbv2.k8s.aws"}


def test_every_handler_has_half_the_shipped_timeout_and_seconds_to_spare() -> None:
    share = WebhookServerOptions().answer_within
    for hook in shipped_webhooks():
        timeout = hook["timeoutSeconds"]
        assert isinstance(timeout, int)
        # The answer crosses a network and a loaded event loop before the API server's
        # deadline: at least two seconds are left for that.
        assert timeout * share <= timeout - 2, hook["name"]
