"""The QUIC server-ID pod webhook (`quicid.elbv2.k8s.aws`, as shipped): a new pod in a namespace
labelled `elbv2.k8s.aws/quic-server-id-inject=enabled` gets an ID in each container (and init
container) its `aws-load-balancer-quic-enabled-containers` annotation names, unless the
container has one; the worker ID is taken from the tracking ConfigMap; other namespaces and
the controller's own pods get nothing."""

from __future__ import annotations

import base64
import json

from controller.apis import QUIC_ENABLED_CONTAINERS_ANNOTATION, QUIC_SERVER_ID_INJECT_LABEL
from controller.targetgroupbinding.quic import WORKER_CONFIGMAP, WORKER_KEY, WORKER_NAMESPACE
from runtime.objects import Obj
from runtime.resources import CONFIGMAPS, NAMESPACES, PODS
from tests.support.cluster import Cluster
from tests.support.webhooks import WebhookHarness

ENV = "AWS_LBC_QUIC_SERVER_ID"


def _pod(name: str, namespace: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": {QUIC_ENABLED_CONTAINERS_ANNOTATION: "app,side,given"}},
            "spec": {"containers": [
                {"name": "app", "image": "quic", "env": [{"name": "OTHER", "value": "x"}]},
                {"name": "given", "image": "quic", "env": [{"name": ENV, "value": "AAAAAAAAAAE="}]},
                {"name": "unnamed", "image": "quic"}],
                "initContainers": [{"name": "side", "image": "proxy"}]}}


def _ids(pod: Obj) -> dict[str, str | None]:
    found = {}
    for kind in ("containers", "initContainers"):
        for container in pod["spec"].get(kind) or []:
            found[container["name"]] = next((e["value"] for e in container.get("env") or []
                                             if e["name"] == ENV), None)
    return found


async def test_new_pods_get_server_ids_in_the_named_containers(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    await cluster.label_namespace({QUIC_SERVER_ID_INJECT_LABEL: "enabled"})
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    await cluster.start(on_setup=hooks.setup)
    await hooks.install()

    for name in ("quic-1", "quic-2"):
        result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(
            _pod(name, "default")), check=False)
        assert result.returncode == 0, result.stderr
    first = _ids(await cluster.client.get(PODS, "quic-1", "default"))
    second = _ids(await cluster.client.get(PODS, "quic-2", "default"))
    for ids in (first, second):
        assert ids["unnamed"] is None
        assert ids["given"] == "AAAAAAAAAAE="  # kept as it was
        for name in ("app", "side"):
            assert len(base64.b64decode(str(ids[name]), validate=True)) == 8
    generated = [first["app"], first["side"], second["app"], second["side"]]
    assert len(set(generated)) == 4
    # The other variables stay.
    app = (await cluster.client.get(PODS, "quic-1", "default"))["spec"]["containers"][0]
    assert app["env"][0] == {"name": "OTHER", "value": "x"}
    # This process took its worker ID: the next one gets the following number.
    tracker = await cluster.client.get(CONFIGMAPS, WORKER_CONFIGMAP, WORKER_NAMESPACE)
    assert tracker["data"][WORKER_KEY].isdigit()

    # Not opted in, or the controller's own pods: nothing.
    for pod in (_pod("quic-3", "plain"),
                _pod("controller", "default", **{"app.kubernetes.io/name": "aiolbc"})):
        result = await hooks.kubectl("apply", "-f", "-", input=json.dumps(pod), check=False)
        assert result.returncode == 0, result.stderr
        found = await cluster.client.get(PODS, pod["metadata"]["name"],
                                         pod["metadata"]["namespace"])
        assert _ids(found) == {"app": None, "given": "AAAAAAAAAAE=", "unnamed": None,
                               "side": None}
