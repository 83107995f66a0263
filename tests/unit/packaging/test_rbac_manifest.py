"""manifests/rbac/: valid against Kubernetes' own schemas, and exactly the controllers'
permissions, those secure metrics need to review a scraper, and the scraper's own; each rule
with a comment naming the code path that needs it."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import yaml

from controller.apis.albtargetcontrolconfig import CONFIG_NAME
from tests.support.paths import MANIFESTS

RBAC = MANIFESTS / "rbac"
K8S_VERSION = "1.33"


def _documents() -> list[dict[str, Any]]:
    return [doc for path in sorted(RBAC.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


def _grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in role["rules"]
            for group in rule.get("apiGroups", [])
            for resource in rule.get("resources", []) for verb in rule["verbs"]}


def _role(name: str) -> dict[str, Any]:
    (role,) = [d for d in _documents()
               if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return role


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
    # readiness gates: the slim pod cache, and the target-health condition of a gated pod
    ("", "pods", LIST_WATCH), ("", "pods/status", ("patch",)),
    # the TargetGroupBinding CRD, by name: its deletion never deregisters (crdguard.py)
    ("apiextensions.k8s.io", "customresourcedefinitions", ("get", *LIST_WATCH)),
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
# the ALB target control agent's pod webhooks (ALBTargetControlAgent gate): its one config
TARGET_CONTROL_AGENT = _rules(("elbv2.k8s.aws", "albtargetcontrolconfigs", ("get",)))


def test_the_shipped_cluster_roles() -> None:
    assert sorted(d["metadata"]["name"] for d in _documents()) == [
        "aiolbc", "aiolbc-metrics-auth", "aiolbc-metrics-reader"]


def test_cluster_role_grants_what_the_controllers_use_and_no_more() -> None:
    role = _role("aiolbc")  # deployment/clusterrolebinding.yaml binds it
    assert _grants(role) == TARGETGROUPBINDING_CONTROLLER | SERVICE_CONTROLLER | \
        INGRESS_CONTROLLER | TARGET_CONTROL_AGENT
    assert all("*" not in rule["verbs"] and "*" not in rule["resources"]
               for rule in role["rules"])
    # Names narrow two rules: the CRD the controller reads is its own (crdguard.py); the agent
    # config read is upstream's one name.
    named = [rule for rule in role["rules"] if "resourceNames" in rule]
    assert named == [{"apiGroups": ["apiextensions.k8s.io"],
                      "resources": ["customresourcedefinitions"],
                      "resourceNames": ["targetgroupbindings.elbv2.k8s.aws"],
                      "verbs": ["get", "list", "watch"]},
                     {"apiGroups": ["elbv2.k8s.aws"], "resources": ["albtargetcontrolconfigs"],
                      "resourceNames": [CONFIG_NAME], "verbs": ["get"]}]


def test_every_rule_says_why() -> None:
    for path in sorted(RBAC.glob("*.yaml")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                assert lines[number - 1].strip().startswith("#"), \
                    f"{path.name}:{number + 1}: rule without a comment"


def test_secure_metrics_may_review_tokens_and_access_and_nothing_else() -> None:
    # runtime/delegatedauth.py: one TokenReview and one SubjectAccessReview per uncached scrape.
    role = _role("aiolbc-metrics-auth")
    assert _grants(role) == {("authentication.k8s.io", "tokenreviews", "create"),
                             ("authorization.k8s.io", "subjectaccessreviews", "create")}


def test_the_scrapers_role_reads_metrics_only() -> None:
    role = _role("aiolbc-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
