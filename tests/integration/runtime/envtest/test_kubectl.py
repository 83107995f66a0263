"""The real kubectl against the local API server: discovery, apply, get, watch, patch, replace,
delete with finalizers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml

from runtime.envtest import EnvTestServer
from tests.integration.runtime.envtest.rawhttp import WIDGET_CRD
from tests.support.kubectl import Kubectl

MANIFEST = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web}
data: {mode: fast}
"""


def configmap(name: str, **data: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": data})


async def test_api_resources_short_names(kubectl: Kubectl) -> None:
    out = (await kubectl("api-resources", "--no-headers")).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    for resource, short in [("services", "svc"), ("endpoints", "ep"), ("pods", "po"),
                            ("nodes", "no"), ("configmaps", "cm"), ("serviceaccounts", "sa"),
                            ("namespaces", "ns"), ("ingresses", "ing"),
                            ("customresourcedefinitions", "crd,crds")]:
        assert short in rows[resource], rows[resource]
    assert "leases" in rows
    assert "endpointslices" in rows


async def test_apply_get_and_reapply(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(MANIFEST)
    out = (await kubectl("apply", "-f", str(manifest))).stdout
    assert "service/web created" in out
    assert "configmap/settings created" in out
    out = (await kubectl("apply", "-f", str(manifest))).stdout
    assert "service/web unchanged" in out
    manifest.write_text(MANIFEST.replace("mode: fast", "mode: slow"))
    out = (await kubectl("apply", "-f", str(manifest))).stdout
    assert "configmap/settings configured" in out
    cm = json.loads((await kubectl("get", "cm", "settings", "-o", "json")).stdout)
    assert cm["data"] == {"mode": "slow"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in cm["metadata"]["annotations"]
    svc = json.loads((await kubectl("get", "svc", "web", "-o", "json")).stdout)
    assert svc["spec"]["ports"][0]["targetPort"] == 8080
    names = (await kubectl("get", "svc,cm", "-l", "app=web", "-o", "name")).stdout.split()
    assert names == ["service/web", "configmap/settings"]
    none = await kubectl("get", "svc", "-l", "app=other", "-o", "name")
    assert none.stdout.strip() == ""


async def test_crd_then_custom_object(kubectl: Kubectl, tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(WIDGET_CRD))
    await kubectl("apply", "-f", str(crd))
    out = (await kubectl("wait", "--for", "condition=established", "--timeout=10s",
                         "crd/widgets.example.com")).stdout
    assert "condition met" in out
    widget = tmp_path / "widget.yaml"
    widget.write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n"
                      "spec: {size: 3}\n")
    assert "widget.example.com/w1 created" in (await kubectl("apply", "-f", str(widget))).stdout
    widget.write_text(widget.read_text().replace("size: 3", "size: 4"))
    assert "configured" in (await kubectl("apply", "-f", str(widget))).stdout
    got = json.loads((await kubectl("get", "wd", "w1", "-o", "json")).stdout)
    assert got["spec"] == {"size": 4}
    assert got["metadata"]["generation"] == 2


async def test_get_watch_streams_changes(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", input=configmap("first"))
    proc = await kubectl.spawn("get", "cm", "-w", "-o", "name")
    assert proc.stdout is not None
    try:
        first = await asyncio.wait_for(proc.stdout.readline(), 10)
        assert first.decode().strip() == "configmap/first"
        await kubectl("apply", "-f", "-", input=configmap("second"))
        second = await asyncio.wait_for(proc.stdout.readline(), 10)
        assert second.decode().strip() == "configmap/second"
    finally:
        proc.terminate()
        await proc.wait()


async def test_patch_merge_and_json(kubectl: Kubectl) -> None:
    await kubectl("create", "-f", "-", input=configmap("c", a="1"))
    await kubectl("patch", "configmap", "c", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    await kubectl("patch", "configmap", "c", "--type", "json",
                  "-p", '[{"op":"replace","path":"/data/a","value":"9"}]')
    got = json.loads((await kubectl("get", "cm", "c", "-o", "json")).stdout)
    assert got["data"] == {"a": "9", "b": "2"}


async def test_replace_with_stale_version_conflicts(kubectl: Kubectl, tmp_path: Path) -> None:
    await kubectl("create", "-f", "-", input=configmap("c", a="1"))
    stale = json.loads((await kubectl("get", "cm", "c", "-o", "json")).stdout)
    await kubectl("patch", "configmap", "c", "--type", "merge", "-p", '{"data":{"a":"2"}}')
    stale["data"] = {"a": "3"}
    path = tmp_path / "stale.json"
    path.write_text(json.dumps(stale))
    result = await kubectl("replace", "-f", str(path), check=False)
    assert result.returncode != 0
    assert "Operation cannot be fulfilled on configmaps \"c\"" in result.stderr
    assert "the object has been modified" in result.stderr


async def test_delete_waits_for_finalizer(kubectl: Kubectl, envtest: EnvTestServer) -> None:
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n"
                "  finalizers: [example.com/keep]\n")
    await kubectl("apply", "-f", "-", input=manifest)
    await kubectl("delete", "configmap", "held", "--wait=false")
    got = json.loads((await kubectl("get", "cm", "held", "-o", "json")).stdout)
    assert got["metadata"]["deletionTimestamp"]
    await kubectl("patch", "configmap", "held", "--type", "json",
                  "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    result = await kubectl("get", "cm", "held", check=False)
    assert result.returncode != 0
    assert 'configmaps "held" not found' in result.stderr


async def test_typed_create_commands_send_protobuf(kubectl: Kubectl,
                                                   envtest: EnvTestServer) -> None:
    await kubectl("create", "namespace", "team")
    await kubectl("create", "configmap", "c", "-n", "team", "--from-literal=a=1")
    await kubectl("create", "secret", "generic", "s", "-n", "team", "--from-literal=pw=x")
    await kubectl("create", "serviceaccount", "robot", "-n", "team")
    await kubectl("create", "service", "loadbalancer", "lb", "-n", "team", "--tcp=443:https")
    cm = json.loads((await kubectl("get", "cm", "c", "-n", "team", "-o", "json")).stdout)
    assert cm["data"] == {"a": "1"}
    secret = json.loads((await kubectl("get", "secret", "s", "-n", "team", "-o",
                                       "json")).stdout)
    assert secret["data"] == {"pw": "eA=="}
    svc = json.loads((await kubectl("get", "svc", "lb", "-n", "team", "-o", "json")).stdout)
    port = svc["spec"]["ports"][0]
    assert (port["port"], port["targetPort"], port["protocol"]) == (443, "https", "TCP")
    assert port["nodePort"] >= 30000
    assert svc["spec"]["type"] == "LoadBalancer"
    assert "loadBalancerIP" not in svc["spec"]  # zero values are omitted, as Go's JSON does
    creates = [r for r in envtest.request_log if r.verb == "create"]
    assert [r.status for r in creates] == [201] * 5


async def test_get_prints_server_side_columns(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(MANIFEST)
    await kubectl("apply", "-f", str(manifest))
    lines = (await kubectl("get", "svc", "-o", "wide")).stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE",
                                "SELECTOR"]
    row = lines[1].split()
    assert (row[0], row[1], row[3], row[4], row[6]) == ("web", "ClusterIP", "<none>", "80/TCP",
                                                        "app=web")
    lines = (await kubectl("get", "ns")).stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "AGE"]
    assert lines[1].split()[:2] == ["default", "Active"]
