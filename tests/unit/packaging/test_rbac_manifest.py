"""manifests/rbac/: valid against Kubernetes' own schemas, and exactly the TargetGroupBinding
controller's permissions, each rule with a comment naming the code path that needs it."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import yaml

from tests.support.paths import MANIFESTS

RBAC = MANIFESTS / "rbac"
K8S_VERSION = "1.33"


def _documents() -> list[dict[str, Any]]:
    return [doc for path in sorted(RBAC.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def _grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_rbac_manifests_are_valid() -> None:
    docs = _documents()
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _rules(*triples: tuple[str, str, tuple[str, ...]]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for group, resource, verbs in triples for verb in verbs}


LIST_WATCH = ("list", "watch")
TARGETGROUPBINDING_CONTROLLER = _rules(
    ("elbv2.k8s.aws", "targetgroupbindings", (*LIST_WATCH, "patch")),
    ("elbv2.k8s.aws", "targetgroupbindings/status", ("patch",)),
    ("discovery.k8s.io", "endpointslices", LIST_WATCH),
    ("", "services", LIST_WATCH), ("", "nodes", LIST_WATCH),
    ("", "configmaps", ("get", "create", "update", "delete")),
    ("", "events", ("create", "patch")),
)
SERVICE_CONTROLLER = _rules(
    ("", "services", (*LIST_WATCH, "patch")), ("", "services/status", ("patch",)),
    ("elbv2.k8s.aws", "targetgroupbindings", (*LIST_WATCH, "get", "create", "update", "delete")),
    ("", "events", ("create", "patch")),
)
INGRESS_CONTROLLER = _rules(
    ("networking.k8s.io", "ingresses", (*LIST_WATCH, "patch")),
    ("networking.k8s.io", "ingresses/status", ("patch",)),
    ("networking.k8s.io", "ingressclasses", LIST_WATCH),
    ("elbv2.k8s.aws", "ingressclassparams", LIST_WATCH),
    ("", "namespaces", LIST_WATCH), ("", "secrets", LIST_WATCH), ("", "services", LIST_WATCH),
    ("elbv2.k8s.aws", "targetgroupbindings", (*LIST_WATCH, "get", "create", "update", "delete")),
    ("", "events", ("create", "patch")),
)


def test_cluster_role_grants_what_the_controllers_use_and_no_more() -> None:
    (role,) = [d for d in _documents() if d["kind"] == "ClusterRole"]
    assert role["metadata"]["name"] == "aiolbc"  # deployment/clusterrolebinding.yaml binds it
    assert _grants(role) == TARGETGROUPBINDING_CONTROLLER | SERVICE_CONTROLLER | \
        INGRESS_CONTROLLER
    assert all("*" not in rule["verbs"] and "*" not in rule["resources"]
               and "resourceNames" not in rule for rule in role["rules"])


def test_every_rule_says_why() -> None:
    for path in sorted(RBAC.glob("*.yaml")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                assert lines[number - 1].strip().startswith("#"), \
                    f"{path.name}:{number + 1}: rule without a comment"
