"""The real kubectl against webhooks: configurations applied and listed like on a cluster, and
denials, call failures and warnings printed as kubectl prints them from a real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.integration.runtime.envtest.webhooks import (
    WebhookServer,
    allow,
    configuration,
    deny,
    hook,
    rule,
    url_client,
)
from tests.support.kubectl import Kubectl


def _write(tmp_path: Path, name: str, *docs: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _configmap(name: str, policy: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"policy": policy}}, "data": {"k": "v"}}


def _policy_hook(name: str, hooks: WebhookServer, path: str, policy: str,
                 operations: list[str] | None = None) -> dict[str, Any]:
    # Every defaulted field spelled out, so that a second apply has nothing to change.
    return hook(name, url_client(hooks, path),
                [rule(["configmaps"], operations=operations, scope="*")],
                objectSelector={"matchLabels": {"policy": policy}}, namespaceSelector={},
                failurePolicy="Fail", matchPolicy="Equivalent", timeoutSeconds=10)


async def test_configurations_apply_and_list(kubectl: Kubectl, hooks: WebhookServer,
                                             tmp_path: Path) -> None:
    manifest = _write(tmp_path, "config", configuration(
        "ValidatingWebhookConfiguration", "policies",
        [_policy_hook("a.example.com", hooks, "/a", "a"),
         _policy_hook("b.example.com", hooks, "/b", "b")]), configuration(
        "MutatingWebhookConfiguration", "defaults",
        [{**_policy_hook("c.example.com", hooks, "/c", "c"), "reinvocationPolicy": "Never"}]))
    out = (await kubectl("apply", "-f", manifest)).stdout
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/policies created" in out
    assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/defaults created" in out
    assert "unchanged" in (await kubectl("apply", "-f", manifest)).stdout
    table = (await kubectl("get", "validatingwebhookconfigurations")).stdout.splitlines()
    assert table[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert table[1].split()[:2] == ["policies", "2"]
    rows = (await kubectl("api-resources", "--api-group=admissionregistration.k8s.io",
                          "--no-headers")).stdout.splitlines()
    assert sorted(r.split()[0] for r in rows) == ["mutatingwebhookconfigurations",
                                                  "validatingwebhookconfigurations"]


async def test_denials_and_failures_read_as_on_a_cluster(kubectl: Kubectl,
                                                         hooks: WebhookServer,
                                                         tmp_path: Path) -> None:
    hooks.on("/forbid", deny("configmaps named bad are not allowed", code=403,
                             reason="Forbidden"))
    hooks.on("/plain", deny("not today"))
    await kubectl("apply", "-f", _write(tmp_path, "config", configuration(
        "ValidatingWebhookConfiguration", "policies",
        [_policy_hook("forbid.example.com", hooks, "/forbid", "forbid"),
         _policy_hook("plain.example.com", hooks, "/plain", "plain"),
         hook("down.example.com", {"url": "https://127.0.0.1:1/x"}, [rule(["configmaps"])],
              objectSelector={"matchLabels": {"policy": "down"}})])))
    for verb in ("create", "apply"):
        manifest = _write(tmp_path, f"forbid-{verb}", _configmap("bad", "forbid"))
        result = await kubectl(verb, "-f", manifest, check=False)
        assert result.returncode == 1
        assert result.stderr == (
            f'Error from server (Forbidden): error when creating "{manifest}": admission '
            'webhook "forbid.example.com" denied the request: configmaps named bad are not '
            "allowed\n")
    manifest = _write(tmp_path, "plain", _configmap("plain", "plain"))
    result = await kubectl("create", "-f", manifest, check=False)
    assert result.stderr == (f'Error from server: error when creating "{manifest}": admission '
                             'webhook "plain.example.com" denied the request: not today\n')
    manifest = _write(tmp_path, "down", _configmap("down", "down"))
    result = await kubectl("create", "-f", manifest, check=False)
    assert result.stderr == (
        f'Error from server (InternalError): error when creating "{manifest}": Internal error '
        'occurred: failed calling webhook "down.example.com": failed to call webhook: Post '
        '"https://127.0.0.1:1/x?timeout=10s": dial tcp 127.0.0.1:1: connect: connection '
        "refused\n")
    assert (await kubectl("get", "configmaps", "-o", "name")).stdout == ""


async def test_warnings_are_printed(kubectl: Kubectl, hooks: WebhookServer,
                                    tmp_path: Path) -> None:
    hooks.on("/warn", allow(warnings=["spec.k is deprecated", 'use "data" instead']))
    await kubectl("apply", "-f", _write(tmp_path, "config", configuration(
        "ValidatingWebhookConfiguration", "policies",
        [_policy_hook("warn.example.com", hooks, "/warn", "warn")])))
    result = await kubectl("create", "-f", _write(tmp_path, "cm", _configmap("c", "warn")))
    assert result.stdout == "configmap/c created\n"
    assert result.stderr == 'Warning: spec.k is deprecated\nWarning: use "data" instead\n'


async def test_a_delete_webhook_keeps_an_object(kubectl: Kubectl, hooks: WebhookServer,
                                                tmp_path: Path) -> None:
    hooks.on("/keep", deny("it stays", code=403, reason="Forbidden"))
    await kubectl("apply", "-f", _write(tmp_path, "config", configuration(
        "ValidatingWebhookConfiguration", "policies",
        [_policy_hook("keep.example.com", hooks, "/keep", "keep", operations=["DELETE"])])))
    await kubectl("create", "-f", _write(tmp_path, "cm", _configmap("c", "keep")))
    result = await kubectl("delete", "configmap", "c", check=False)
    assert result.returncode == 1
    assert result.stderr == ('Error from server (Forbidden): admission webhook '
                             '"keep.example.com" denied the request: it stays\n')
    assert (await kubectl("get", "configmap", "c", "-o", "name")).stdout == "configmap/c\n"
    [request] = hooks.requests("/keep")
    assert request["operation"] == "DELETE"
    assert request["oldObject"]["metadata"]["labels"] == {"policy": "keep"}
