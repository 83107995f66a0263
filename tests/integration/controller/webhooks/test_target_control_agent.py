"""The ALB target control agent's pod webhooks (`alb-target-control.namespace.elbv2.k8s.aws`,
`alb-target-control.object.elbv2.k8s.aws`, as shipped), in both states of the
ALBTargetControlAgent gate: on, a new pod in a namespace labelled
`elbv2.k8s.aws/alb-target-control-agent-injection=enabled`, or labelled
`elbv2.k8s.aws/alb-target-control-agent-inject=true` elsewhere, gets upstream's sidecar from the
ALBTargetControlConfig of its namespace or else the controller's; off, the paths are not served
and the pods that asked for the agent are refused (upstream's failurePolicy Fail)."""

from __future__ import annotations

import json
from typing import Any

from controller.apis import ALBTARGETCONTROLCONFIGS
from controller.apis.albtargetcontrolconfig import CONFIG_NAME
from controller.config.featuregates import GATES
from controller.webhooks.handlers import MUTATE_TARGET_CONTROL_NAMESPACE
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import NAMESPACES, PODS
from runtime.webhook import WebhookServer
from tests.support.cluster import Cluster
from tests.support.webhooks import NAMESPACE, WebhookHarness

AGENT = "alb-target-control-agent"
ENABLED = {"elbv2.k8s.aws/alb-target-control-agent-injection": "enabled"}
INJECT = "elbv2.k8s.aws/alb-target-control-agent-inject"


def _pod(name: str, namespace: str, *, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]}}


def _config(namespace: str, image: str) -> Obj:
    return {"metadata": {"name": CONFIG_NAME, "namespace": namespace},
            "spec": {"image": image, "dataAddress": "0.0.0.0:80",
                     "controlAddress": "0.0.0.0:3000", "destinationAddress": "127.0.0.1:8080",
                     "maxConcurrency": 3}}


def _agent(pod: Obj) -> dict[str, Any] | None:
    return next((c for c in pod["spec"]["containers"] if c["name"] == AGENT), None)


def _with_gate(hooks: WebhookHarness, state: str) -> Any:
    def setup(manager: Manager) -> WebhookServer:
        return hooks.setup(manager, gates=GATES.parse(f"ALBTargetControlAgent={state}"),
                           controller_namespace=NAMESPACE)
    return setup


async def _apply(hooks: WebhookHarness, pod: Obj) -> Any:
    return await hooks.kubectl("apply", "-f", "-", input=json.dumps(pod), check=False)


async def test_gate_on_pods_that_ask_get_upstreams_sidecar(cluster: Cluster,
                                                           hooks: WebhookHarness) -> None:
    await cluster.label_namespace(ENABLED)
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    await cluster.start(on_setup=_with_gate(hooks, "true"))
    await hooks.install()

    # No config anywhere yet: admitted as it is, with one warning saying so.
    result = await _apply(hooks, _pod("early", "default"))
    assert result.returncode == 0, result.stderr
    assert f"no ALBTargetControlConfig {CONFIG_NAME} in namespace default" in result.stderr
    assert _agent(await cluster.client.get(PODS, "early", "default")) is None

    # The controller's namespace's config serves every namespace without one.
    await cluster.client.create(ALBTARGETCONTROLCONFIGS, _config(NAMESPACE, "agent:shared"),
                                namespace=NAMESPACE)
    result = await _apply(hooks, _pod("a", "default"))
    assert result.returncode == 0, result.stderr
    pod = await cluster.client.get(PODS, "a", "default")
    agent = _agent(pod)
    assert agent is not None
    assert agent["image"] == "agent:shared"
    assert {e["name"]: e["value"] for e in agent["env"]} == {
        "TARGET_CONTROL_DATA_ADDRESS": "0.0.0.0:80",
        "TARGET_CONTROL_CONTROL_ADDRESS": "0.0.0.0:3000",
        "TARGET_CONTROL_DESTINATION_ADDRESS": "127.0.0.1:8080",
        "TARGET_CONTROL_MAX_CONCURRENCY": "3"}
    assert [(p["name"], p["containerPort"]) for p in agent["ports"]] == [
        ("data", 80), ("control", 3000)]
    assert pod["metadata"]["annotations"]["elbv2.k8s.aws/alb-target-control-agent-injected"] \
        == "true"

    # The pod's own namespace's config wins; a pod labelled "true" in an unlabelled namespace
    # gets it through the object webhook.
    await cluster.client.create(ALBTARGETCONTROLCONFIGS, _config("plain", "agent:plain"),
                                namespace="plain")
    result = await _apply(hooks, _pod("b", "plain", labels={INJECT: "true"}))
    assert result.returncode == 0, result.stderr
    agent = _agent(await cluster.client.get(PODS, "b", "plain"))
    assert agent is not None
    assert agent["image"] == "agent:plain"

    # Opted out, not asking, or the controller's own pods: nothing.
    for name, namespace, labels in (
            ("out", "default", {INJECT: "false"}), ("quiet", "plain", {}),
            ("controller", "default", {"app.kubernetes.io/name": "aiolbc"})):
        result = await _apply(hooks, _pod(name, namespace, labels=labels))
        assert result.returncode == 0, result.stderr
        assert _agent(await cluster.client.get(PODS, name, namespace)) is None

    # A bad annotation: one denial in upstream's words, counted; the pod is not created.
    result = await _apply(hooks, _pod("bad", "default", annotations={
        "elbv2.k8s.aws/alb-target-control-agent-max-concurrency": "5000"}))
    assert result.returncode != 0
    assert "pod default/bad: invalid concurrency value: 5000 (must be 0-1000)" in result.stderr
    assert await cluster.find(PODS, "bad") is None
    assert cluster.registry.get_sample_value("awslbc_webhook_mutation_failure_total", {
        "webhook_name": MUTATE_TARGET_CONTROL_NAMESPACE,
        "error_category": "InvalidALBTargetControlAgentAnnotation"}) == 1

    # A config the schema would refuse (written where the API server did not check it): one
    # denial naming it and its field, never a sidecar that cannot start.
    broken = _config("plain", "agent:plain")
    broken["spec"]["dataAddress"] = "nowhere"
    stored = await cluster.client.get(ALBTARGETCONTROLCONFIGS, CONFIG_NAME, "plain")
    await cluster.client.update(ALBTARGETCONTROLCONFIGS, {**stored, "spec": broken["spec"]})
    result = await _apply(hooks, _pod("c", "plain", labels={INJECT: "true"}))
    assert result.returncode != 0
    assert f"ALBTargetControlConfig plain/{CONFIG_NAME}: spec.dataAddress: " in result.stderr
    assert cluster.registry.get_sample_value("awslbc_webhook_mutation_failure_total", {
        "webhook_name": "/mutate-alb-target-control-object-v1-pod",
        "error_category": "InvalidALBTargetControlConfig"}) == 1


async def test_gate_off_pods_that_ask_wait_for_it(cluster: Cluster,
                                                  hooks: WebhookHarness) -> None:
    await cluster.label_namespace(ENABLED)
    await cluster.start(on_setup=_with_gate(hooks, "false"))
    await hooks.install()
    await cluster.client.create(ALBTARGETCONTROLCONFIGS, _config(NAMESPACE, "agent:shared"),
                                namespace=NAMESPACE)
    result = await _apply(hooks, _pod("asks", "default"))
    assert result.returncode != 0
    assert "alb-target-control.namespace.elbv2.k8s.aws" in result.stderr
    assert await cluster.find(PODS, "asks") is None
    # Pods that do not ask are untouched by the gate.
    result = await _apply(hooks, _pod("other", "default", labels={INJECT: "false"}))
    assert result.returncode == 0, result.stderr
    assert _agent(await cluster.client.get(PODS, "other", "default")) is None
