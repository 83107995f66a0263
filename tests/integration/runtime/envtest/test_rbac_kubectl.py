"""The real kubectl against the server with RBAC on: applying in-cluster manifests (RBAC objects,
PodDisruptionBudgets, Deployments), `auth can-i`, `auth whoami` and Forbidden errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime.envtest import EnvTestServer
from tests.support.kubectl import Kubectl

MANIFEST = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: controller
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: controller-role
rules:
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [services/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: controller-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: controller-role
subjects:
- kind: ServiceAccount
  name: controller
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: leader-election-role
  namespace: kube-system
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [controller-leader]
  verbs: [get, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: leader-election-rolebinding
  namespace: kube-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: leader-election-role
subjects:
- kind: ServiceAccount
  name: controller
  namespace: kube-system
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: controller
  namespace: kube-system
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: controller}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
  namespace: kube-system
spec:
  replicas: 2
  selector:
    matchLabels: {app: controller}
  template:
    metadata:
      labels: {app: controller}
    spec:
      serviceAccountName: controller
      containers:
      - name: controller
        image: example.com/controller:v1
"""


@pytest.fixture
async def server() -> AsyncIterator[EnvTestServer]:
    # kubectl sends tokens only over TLS.
    async with EnvTestServer(rbac=True, tls=True) as srv:
        yield srv


def _kubectl(server: EnvTestServer, tmp_path: Path, name: str,
             token: str | None = None) -> Kubectl:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    return Kubectl(server.write_kubeconfig(tmp_path / f"{name}.kubeconfig", token=token), home)


@pytest.fixture
def admin(server: EnvTestServer, tmp_path: Path) -> Kubectl:
    return _kubectl(server, tmp_path, "admin")


@pytest.fixture
def controller(server: EnvTestServer, tmp_path: Path) -> Kubectl:
    token = server.add_service_account("kube-system", "controller")
    return _kubectl(server, tmp_path, "controller", token)


async def test_apply_in_cluster_manifest(server: EnvTestServer, admin: Kubectl,
                                         controller: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "controller.yaml"
    manifest.write_text(MANIFEST)
    out = (await admin("apply", "-f", str(manifest))).stdout
    for created in ("serviceaccount/controller", "clusterrole.rbac.authorization.k8s.io/"
                    "controller-role", "clusterrolebinding.rbac.authorization.k8s.io/"
                    "controller-rolebinding", "role.rbac.authorization.k8s.io/"
                    "leader-election-role", "rolebinding.rbac.authorization.k8s.io/"
                    "leader-election-rolebinding", "poddisruptionbudget.policy/controller",
                    "deployment.apps/controller"):
        assert f"{created} created" in out, out
    assert "unchanged" in (await admin("apply", "-f", str(manifest))).stdout
    pdb = json.loads((await admin("get", "pdb", "controller", "-n", "kube-system", "-o",
                                  "json")).stdout)
    assert pdb["spec"]["minAvailable"] == 1
    roles = (await admin("get", "clusterroles", "-o", "name")).stdout.split()
    assert "clusterrole.rbac.authorization.k8s.io/controller-role" in roles
    # The manifest's own rules now govern the controller's identity.
    assert (await controller("get", "services", "-A")).returncode == 0
    denied = await controller("get", "configmaps", "-n", "kube-system", check=False)
    assert denied.returncode != 0
    assert ('configmaps is forbidden: User "system:serviceaccount:kube-system:controller" '
            'cannot list resource "configmaps" in API group "" in the namespace '
            '"kube-system"') in denied.stderr
    assert [d.resource for d in server.denials] == ["configmaps"]


async def test_auth_can_i_and_whoami(admin: Kubectl, controller: Kubectl,
                                     tmp_path: Path) -> None:
    manifest = tmp_path / "controller.yaml"
    manifest.write_text(MANIFEST)
    await admin("apply", "-f", str(manifest))

    async def can_i(*args: str) -> str:
        result = await controller("auth", "can-i", *args, check=False)
        return result.stdout.strip()

    assert await can_i("list", "services", "--all-namespaces") == "yes"
    assert await can_i("delete", "services", "-n", "default") == "no"
    assert await can_i("patch", "services", "--subresource=status", "-n", "default") == "yes"
    assert await can_i("get", "leases/controller-leader", "-n", "kube-system") == "yes"
    assert await can_i("get", "leases/other", "-n", "kube-system") == "no"
    assert await can_i("create", "leases", "-n", "kube-system") == "yes"
    assert await can_i("create", "leases", "-n", "default") == "no"
    who = json.loads((await controller("auth", "whoami", "-o", "json")).stdout)
    assert who["status"]["userInfo"]["username"] == \
        "system:serviceaccount:kube-system:controller"
    assert await (_can_admin(admin)) == "yes"


async def _can_admin(admin: Kubectl) -> str:
    return (await admin("auth", "can-i", "*", "*", "--all-namespaces")).stdout.strip()


async def test_rbac_kinds_are_served_without_rbac(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "controller.yaml"
    manifest.write_text(MANIFEST)
    await kubectl("apply", "-f", str(manifest))
    rows = (await kubectl("api-resources", "--no-headers")).stdout.splitlines()
    names = {row.split()[0]: row.split() for row in rows}
    for resource in ("roles", "rolebindings", "clusterroles", "clusterrolebindings",
                     "poddisruptionbudgets", "deployments", "selfsubjectaccessreviews"):
        assert resource in names, resource
    assert "pdb" in names["poddisruptionbudgets"]
    index = json.loads((await kubectl("get", "--raw", "/openapi/v3")).stdout)["paths"]
    assert {"apis/rbac.authorization.k8s.io/v1", "apis/policy/v1", "apis/apps/v1",
            "apis/authorization.k8s.io/v1"} <= set(index)
    assert (await kubectl("auth", "can-i", "delete", "nodes")).stdout.strip() == "yes"
