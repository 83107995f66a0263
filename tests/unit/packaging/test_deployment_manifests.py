"""The installation manifests (`manifests/kustomization.yaml` and `manifests/deployment/`):
every document is valid Kubernetes (kubernetes-validate, strict), so is the kustomize build, the
build wires what the controller needs (flags that `aiolbc run` really accepts, the Lease and
Events permissions, probes on the pod IP's health port, secure metrics and the grants they
need, a metrics Service, a NetworkPolicy letting in only scrapers and the API server), and the
real kubectl applies it to the local API server. The metrics tables of docs/operations.md and
the Grafana dashboard name only metrics a running process registers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import CollectorRegistry

from controller.apis import (
    QUIC_SERVER_ID_INJECT_LABEL,
    READINESS_GATE_INJECT_LABEL,
    READINESS_GATE_INJECT_VALUE,
)
from controller.app import setup_controllers
from controller.aws import AWSClientPool, AWSSettings
from controller.config import ControllerConfig, parse_config
from controller.defaults import DEFAULT_HEALTH_PROBE_BIND_ADDR, DEFAULT_LEADER_ELECTION_ID
from controller.webhooks import handlers
from runtime.client import KubeClient
from runtime.httpserver import BindAddress, parse_bind_address
from runtime.manager import Manager, ManagerOptions
from tests.support.kubectl import Kubectl
from tests.support.paths import MANIFESTS, REPO

ROOT = MANIFESTS
KUBECTL = Path(sys.executable).parent / "kubectl"
K8S_VERSION = "1.33"
NAMESPACE = "aiolbc-system"
HEALTH_PORT = int(DEFAULT_HEALTH_PROBE_BIND_ADDR.rsplit(":", 1)[1])
METRICS_PORT = 8443
POD_IP = "10.0.1.17"  # what the kubelet would give status.podIP
WEBHOOK_PORT = 9443
APP_LABEL = {"app.kubernetes.io/name": "aiolbc"}

Doc = dict[str, Any]


def _load_all(text: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _source_documents() -> list[tuple[Path, Doc]]:
    return [(path, doc) for directory in ("deployment", "webhook", "namespace")
            for path in sorted((ROOT / directory).glob("*.yaml"))
            for doc in _load_all(path.read_text())]


def _build(root: Path = ROOT) -> list[Doc]:
    proc = subprocess.run([str(KUBECTL), "kustomize", str(root)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return _load_all(proc.stdout)


@pytest.fixture(scope="module")
def built() -> list[Doc]:
    return _build()


def _one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in docs if d["kind"] == kind
             and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def _container(docs: list[Doc]) -> Doc:
    containers = _one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: Doc = containers[0]
    return container


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# ---- validity ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "doc"), _source_documents(),
                         ids=lambda v: v.name if isinstance(v, Path) else "")
def test_source_manifest_is_valid(path: Path, doc: Doc) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_build_output_is_valid(built: list[Doc]) -> None:
    for doc in built:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    kinds = {d["kind"] for d in built}
    assert {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
            "ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy"} <= kinds
    # Installed and removed on their own: deleting the installation deletes neither the CRDs
    # (with every TargetGroupBinding) nor a namespace an overlay installed it into.
    assert not kinds & {"CustomResourceDefinition", "Namespace"}


def test_crds_and_namespace_are_kustomizations_of_their_own() -> None:
    crds = _build(ROOT / "crds")
    assert sorted(d["metadata"]["name"] for d in crds) == [
        "albtargetcontrolconfigs.elbv2.k8s.aws", "ingressclassparams.elbv2.k8s.aws",
        "targetgroupbindings.elbv2.k8s.aws"]
    listed = yaml.safe_load((ROOT / "crds" / "Kustomization").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in (ROOT / "crds").glob("*.yaml"))
    [namespace] = _build(ROOT / "namespace")
    assert namespace["kind"] == "Namespace"
    assert namespace["metadata"]["name"] == NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_an_overlay_into_kube_system_leaves_that_namespace_alone(tmp_path: Path) -> None:
    base = os.path.relpath(ROOT, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{base}/overlays/cert-manager]\n"
        "namespace: kube-system\n")
    docs = _build(tmp_path)
    # No Namespace object: kube-system is neither relabelled PSS-restricted nor deleted by
    # `kubectl delete -k`.
    assert not [d for d in docs if d["kind"] == "Namespace"]
    assert "aiolbc-system" not in json.dumps(docs)
    # The cert-manager component follows: the certificate names the Service where it is, and
    # the CA injector reads that certificate.
    certificate = _one(docs, "Certificate", "aiolbc-serving-cert")
    assert certificate["metadata"]["namespace"] == "kube-system"
    assert set(certificate["spec"]["dnsNames"]) == {
        "aws-load-balancer-webhook-service.kube-system.svc",
        "aws-load-balancer-webhook-service.kube-system.svc.cluster.local"}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert _one(docs, kind)["metadata"]["annotations"][
            "cert-manager.io/inject-ca-from"] == "kube-system/aiolbc-serving-cert"


def test_validation_catches_a_broken_deployment(built: list[Doc]) -> None:
    broken = json.loads(json.dumps(_one(built, "Deployment")))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8080"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_kustomization_references_every_shipped_manifest() -> None:
    kustomization = yaml.safe_load((ROOT / "kustomization.yaml").read_text())
    listed = {str(p) for p in kustomization["resources"]}
    for directory in ("rbac", "deployment", "webhook"):
        for path in sorted((ROOT / directory).glob("*.yaml")):
            assert str(path.relative_to(ROOT)) in listed, f"{path.name} missing from resources"
    for entry in listed:
        assert (ROOT / entry).is_file(), f"{entry} is listed but does not exist"


# ---- what the controller needs ----------------------------------------------------------------

def test_namespaced_objects_live_in_the_controller_namespace(built: list[Doc]) -> None:
    for doc in built:
        if doc["kind"] in ("Namespace", "CustomResourceDefinition", "ClusterRole",
                           "ClusterRoleBinding", "MutatingWebhookConfiguration",
                           "ValidatingWebhookConfiguration"):
            continue
        assert doc["metadata"].get("namespace") == NAMESPACE, doc["metadata"]["name"]


def _expand(arg: str, env: dict[str, str]) -> str:
    """The kubelet's $(VAR) expansion of container args."""
    def value(match: re.Match[str]) -> str:
        assert match.group(1) in env, f"{arg}: $({match.group(1)}) is not defined in env"
        return env[match.group(1)]
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value, arg)


def _container_env(built: list[Doc]) -> dict[str, str]:
    """The container's environment as the kubelet would build it from the built ConfigMaps;
    the pod IP is POD_IP, other downward-API values stand for themselves."""
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in built
                  if d["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for var in _container(built)["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        source = var["valueFrom"]
        if "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            assert ref["name"] in configmaps, f"{var['name']}: no ConfigMap {ref['name']}"
            env[var["name"]] = configmaps[ref["name"]][ref["key"]]
        elif source["fieldRef"]["fieldPath"] == "status.podIP":
            env[var["name"]] = POD_IP
        else:
            env[var["name"]] = f"<{source['fieldRef']['fieldPath']}>"
    return env


def test_args_are_flags_aiolbc_run_accepts(built: list[Doc]) -> None:
    container = _container(built)
    env = _container_env(built)
    args = [_expand(a, env) for a in container["args"]]
    assert args[0] == "run"
    config = parse_config(args[1:])
    data = _one(built, "ConfigMap")["data"]
    assert config.cluster.name == data["CLUSTER_NAME"]
    assert config.aws.region == data["AWS_REGION"]
    assert config.aws.vpc_id == data["AWS_VPC_ID"]
    assert config.runtime.leader_election
    assert env["POD_NAMESPACE"] == "<metadata.namespace>"


def test_metrics_are_secure_and_probes_listen_on_the_pod_ip(built: list[Doc]) -> None:
    env = _container_env(built)
    config = parse_config([_expand(a, env) for a in _container(built)["args"][1:]])
    # Metrics on every interface, but HTTPS and only for authorized callers.
    assert config.metrics.secure
    assert parse_bind_address(config.metrics.bind_addr) == BindAddress(None, METRICS_PORT)
    # The kubelet probes the pod IP; loopback and other interfaces get nothing.
    assert parse_bind_address(config.metrics.health_probe_bind_addr) == BindAddress(
        POD_IP, HEALTH_PORT)


def test_config_values_come_from_a_generated_configmap(built: list[Doc]) -> None:
    # The hash suffix makes a changed value roll the Deployment.
    name = _one(built, "ConfigMap")["metadata"]["name"]
    assert re.fullmatch(r"aiolbc-config-[a-z0-9]{10}", name)
    refs = {v["valueFrom"]["configMapKeyRef"]["name"] for v in _container(built)["env"]
            if "configMapKeyRef" in v.get("valueFrom", {})}
    assert refs == {name}


def test_deployment_runs_two_spread_replicas_with_probes(built: list[Doc]) -> None:
    deployment = _one(built, "Deployment")
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 2
    assert _matches(deployment["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"])
    assert _matches(APP_LABEL, pod["metadata"]["labels"])
    terms = pod["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert any(t["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
               and _matches(t["podAffinityTerm"]["labelSelector"]["matchLabels"],
                            pod["metadata"]["labels"]) for t in terms)
    container = _container(built)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": METRICS_PORT, "health": HEALTH_PORT,
                     "webhook-server": WEBHOOK_PORT}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == HEALTH_PORT
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind])
    assert container["image"] == "aiolbc:0.1.0"


def test_pod_is_locked_down(built: list[Doc]) -> None:
    pod = _one(built, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == _one(built, "ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    security = _container(built)["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    assert "add" not in security["capabilities"]


def test_disruption_budget_and_metrics_service_select_the_pods(built: list[Doc]) -> None:
    labels = _one(built, "Deployment")["spec"]["template"]["metadata"]["labels"]
    pdb = _one(built, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert _matches(pdb["spec"]["selector"]["matchLabels"], labels)
    service = _one(built, "Service", "aiolbc-metrics")
    assert _matches(service["spec"]["selector"], labels)
    assert _matches(APP_LABEL, service["metadata"]["labels"])
    [port] = service["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", METRICS_PORT,
                                                                "metrics")


def _allows(rules: list[Doc], group: str, resource: str, verb: str, name: str) -> bool:
    return any(group in r.get("apiGroups", []) and resource in r.get("resources", [])
               and verb in r.get("verbs", [])
               and (not r.get("resourceNames") or name in r["resourceNames"])
               for r in rules)


def _bound_to_service_account(binding: Doc, built: list[Doc]) -> bool:
    account = _one(built, "ServiceAccount")["metadata"]
    return any(s["kind"] == "ServiceAccount" and s["name"] == account["name"]
               and s["namespace"] == account["namespace"] for s in binding["subjects"])


def test_role_grants_the_lease(built: list[Doc]) -> None:
    binding = _one(built, "RoleBinding", "aiolbc-leader-election")
    assert _bound_to_service_account(binding, built)
    role = _one(built, "Role", binding["roleRef"]["name"])
    # The lease name the controller uses unless --leader-election-id says otherwise.
    lease = DEFAULT_LEADER_ELECTION_ID
    for verb in ("get", "create", "update"):
        assert _allows(role["rules"], "coordination.k8s.io", "leases", verb, lease), verb
    assert not _allows(role["rules"], "coordination.k8s.io", "leases", "update", "other")
    # Events, in every namespace, come from the ClusterRole
    # (tests/integration/packaging/test_rbac.py shows a grant here would be needed by no request).
    for verb in ("create", "patch"):
        assert not _allows(role["rules"], "", "events", verb, "any"), verb


def test_cluster_role_bindings_name_shipped_cluster_roles(built: list[Doc]) -> None:
    bindings = [d for d in built if d["kind"] == "ClusterRoleBinding"]
    roles = {d["metadata"]["name"]: d for d in built if d["kind"] == "ClusterRole"}
    assert {b["roleRef"]["name"] for b in bindings} == {"aiolbc", "aiolbc-metrics-auth",
                                                        "aiolbc-webhook-configurations"}
    for binding in bindings:
        assert binding["roleRef"]["kind"] == "ClusterRole"
        assert binding["roleRef"]["name"] in roles
        assert _bound_to_service_account(binding, built)
    # The scrapers' role ships unbound: which account scrapes is the cluster's choice.
    assert roles["aiolbc-metrics-reader"]["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def _policy(built: list[Doc]) -> Doc:
    policy = _one(built, "NetworkPolicy")
    pod = _one(built, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert _matches(policy["spec"]["podSelector"]["matchLabels"], pod)
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    return policy


def test_network_policy_lets_in_scrapers_and_the_api_server_only(built: list[Doc]) -> None:
    ingress = _policy(built)["spec"]["ingress"]
    by_port = {str(p["port"]): rule for rule in ingress for p in rule["ports"]}
    assert set(by_port) == {"metrics", "9443"}  # not the probes: the node is always allowed
    assert all(p["protocol"] == "TCP" for rule in ingress for p in rule["ports"])
    # Metrics only from namespaces labelled for monitoring.
    assert by_port["metrics"]["from"] == [{"namespaceSelector": {"matchLabels": {
        "metrics": "enabled"}}}]
    # The webhook port from anywhere: the API server's addresses cannot be selected.
    assert "from" not in by_port["9443"]


def test_network_policy_lets_out_dns_the_api_server_and_aws(built: list[Doc]) -> None:
    egress = _policy(built)["spec"]["egress"]
    ports = {(p["protocol"], p["port"]) for rule in egress for p in rule["ports"]}
    assert ports == {("UDP", 53), ("TCP", 53), ("TCP", 443), ("TCP", 6443), ("TCP", 80)}
    for rule in egress:
        numbers = {p["port"] for p in rule["ports"]}
        if 53 in numbers:  # DNS to the cluster's resolver only
            assert rule["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
        if 80 in numbers:  # plain HTTP only to the link-local credentials agent
            assert {t["ipBlock"]["cidr"] for t in rule["to"]} == {
                "169.254.170.23/32", "fd00:ec2::23/128"}


# ---- webhooks -----------------------------------------------------------------------------------

def _config(built: list[Doc]) -> ControllerConfig:
    env = _container_env(built)
    return parse_config([_expand(a, env) for a in _container(built)["args"][1:]])


def _hooks(built: list[Doc]) -> list[tuple[str, Doc]]:
    return [(d["kind"], hook) for d in built
            if d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for hook in d["webhooks"]]


def test_webhooks_reach_the_server_every_replica_runs(built: list[Doc]) -> None:
    config = _config(built)
    assert (config.webhooks.bind_host, config.webhooks.bind_port) == (POD_IP, WEBHOOK_PORT)
    assert config.webhooks.tls_mode == "self-managed"
    service = _one(built, "Service", config.webhooks.service_name)
    assert service["metadata"]["namespace"] == NAMESPACE
    labels = _one(built, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert _matches(service["spec"]["selector"], labels)
    [port] = service["spec"]["ports"]
    named = {p["name"]: p["containerPort"] for p in _container(built)["ports"]}
    assert named[port["targetPort"]] == WEBHOOK_PORT
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert _one(built, kind)["metadata"]["name"] == config.webhooks.configuration_name
    served = {handlers.MUTATE_POD, handlers.MUTATE_POD_SERVER_ID,
              handlers.MUTATE_TARGETGROUPBINDING,
              handlers.VALIDATE_TARGETGROUPBINDING, handlers.VALIDATE_INGRESS,
              handlers.VALIDATE_INGRESSCLASSPARAMS, handlers.MUTATE_SERVICE,
              handlers.MUTATE_TARGET_CONTROL_NAMESPACE, handlers.MUTATE_TARGET_CONTROL_OBJECT}
    for _, hook in _hooks(built):
        target = hook["clientConfig"]["service"]
        assert (target["name"], target["namespace"]) == (config.webhooks.service_name, NAMESPACE)
        assert target.get("port", 443) == port["port"]
        assert target["path"] in served, target["path"]
        assert "caBundle" not in hook["clientConfig"]  # injected at run time
        assert "v1" in hook["admissionReviewVersions"]


def test_every_webhook_fails_open_and_the_pod_webhook_is_scoped(built: list[Doc]) -> None:
    hooks = {hook["name"]: hook for _, hook in _hooks(built)}
    assert set(hooks) == {"mpod.elbv2.k8s.aws", "quicid.elbv2.k8s.aws",
                          "mtargetgroupbinding.elbv2.k8s.aws",
                          "vtargetgroupbinding.elbv2.k8s.aws", "vingress.elbv2.k8s.aws",
                          "vingressclassparams.elbv2.k8s.aws", "mservice.elbv2.k8s.aws",
                          "alb-target-control.namespace.elbv2.k8s.aws",
                          "alb-target-control.object.elbv2.k8s.aws"}
    # The QUIC server IDs' webhook fails closed, as upstream's (a pod admitted without its ID
    # could never be registered), and so do the ALB target control agent's (upstream's); every
    # other one fails open.
    assert {n: h["failurePolicy"] for n, h in hooks.items() if h["failurePolicy"] != "Ignore"
            } == {"quicid.elbv2.k8s.aws": "Fail",
                  "alb-target-control.namespace.elbv2.k8s.aws": "Fail",
                  "alb-target-control.object.elbv2.k8s.aws": "Fail"}
    assert all(h["timeoutSeconds"] <= 10 for h in hooks.values())
    labels = _one(built, "Deployment")["spec"]["template"]["metadata"]["labels"]
    for name, label, value in (
            ("mpod.elbv2.k8s.aws", READINESS_GATE_INJECT_LABEL, READINESS_GATE_INJECT_VALUE),
            ("quicid.elbv2.k8s.aws", QUIC_SERVER_ID_INJECT_LABEL, "enabled")):
        pod = hooks[name]
        assert pod["namespaceSelector"]["matchExpressions"] == [{
            "key": label, "operator": "In", "values": [value]}]
        # Never the controller's own pods.
        [excluded] = pod["objectSelector"]["matchExpressions"]
        assert excluded["operator"] == "NotIn"
        assert labels[excluded["key"]] in excluded["values"]
        assert [r["operations"] for r in pod["rules"]] == [["CREATE"]]
    # The agent's: a labelled namespace unless the pod opts out; a labelled pod elsewhere
    # (upstream's chart's selectors); never the controller's own pods.
    agent_ns = "elbv2.k8s.aws/alb-target-control-agent-injection"
    agent_pod = "elbv2.k8s.aws/alb-target-control-agent-inject"
    for name, namespaces, pods in (
            ("alb-target-control.namespace.elbv2.k8s.aws",
             {"key": agent_ns, "operator": "In", "values": ["enabled"]},
             {"key": agent_pod, "operator": "NotIn", "values": ["false"]}),
            ("alb-target-control.object.elbv2.k8s.aws",
             {"key": agent_ns, "operator": "DoesNotExist"},
             {"key": agent_pod, "operator": "In", "values": ["true"]})):
        hook = hooks[name]
        assert hook["namespaceSelector"]["matchExpressions"] == [namespaces]
        assert hook["objectSelector"]["matchExpressions"] == [excluded, pods]
        assert [r["operations"] for r in hook["rules"]] == [["CREATE"]]
    # The Service mutator ships on as upstream's (the controller is told so), never for the
    # controller's own Services.
    service = hooks["mservice.elbv2.k8s.aws"]
    assert service["objectSelector"]["matchExpressions"] == [excluded]
    assert [r["resources"] for r in service["rules"]] == [["services"]]
    assert _config(built).webhooks.service_mutator is True


def test_self_managed_tls_has_exactly_the_grants_it_needs(built: list[Doc]) -> None:
    config = _config(built)
    binding = _one(built, "RoleBinding", "aiolbc-webhook-tls")
    assert _bound_to_service_account(binding, built)
    rules = _one(built, "Role", binding["roleRef"]["name"])["rules"]
    secret = config.webhooks.secret_name
    for verb in ("get", "create", "update"):
        assert _allows(rules, "", "secrets", verb, secret), verb
    assert not _allows(rules, "", "secrets", "get", "another-secret")
    assert not _allows(rules, "", "secrets", "list", secret)
    cluster = _one(built, "ClusterRole", "aiolbc-webhook-configurations")["rules"]
    for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for verb in ("get", "patch"):
            assert _allows(cluster, "admissionregistration.k8s.io", resource, verb,
                           config.webhooks.configuration_name)
        assert not _allows(cluster, "admissionregistration.k8s.io", resource, "patch", "other")


def test_the_certificate_directory_is_writable(built: list[Doc]) -> None:
    config = _config(built)
    pod = _one(built, "Deployment")["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m for m in _container(built)["volumeMounts"]}
    mount = mounts[config.webhooks.cert_dir]
    assert not mount.get("readOnly")
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert "emptyDir" in volume


def test_namespaced_component_binds_nothing_namespaced_cluster_wide(tmp_path: Path) -> None:
    base = os.path.relpath(ROOT, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{base}/overlays/namespaced]\n")
    proc = subprocess.run([str(KUBECTL), "kustomize", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    docs = _load_all(proc.stdout)
    bound = {d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"}
    assert "aiolbc" not in bound
    assert "aiolbc-cluster-scoped" in bound
    cluster_scoped = _one(docs, "ClusterRole", "aiolbc-cluster-scoped")
    assert {r for rule in cluster_scoped["rules"] for r in rule["resources"]} == {
        "nodes", "namespaces", "ingressclasses", "ingressclassparams",
        "customresourcedefinitions"}
    # The ClusterRole itself stays, for the RoleBindings in the served namespaces.
    assert _one(docs, "ClusterRole", "aiolbc")


def test_cert_manager_component_mounts_its_secret_and_serves_files(tmp_path: Path) -> None:
    # As a user's kustomization uses it (kustomize takes relative paths only).
    base = os.path.relpath(ROOT, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{base}/overlays/cert-manager]\n")
    proc = subprocess.run([str(KUBECTL), "kustomize", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    docs = _load_all(proc.stdout)
    config = _config(docs)
    assert config.webhooks.tls_mode == "files"
    certificate = _one(docs, "Certificate", "aiolbc-serving-cert")
    root = _one(docs, "Certificate", "aiolbc-root-cert")
    assert root["spec"]["isCA"] is True
    assert _one(docs, "Issuer", certificate["spec"]["issuerRef"]["name"])["spec"]["ca"][
        "secretName"] == root["spec"]["secretName"]
    assert set(certificate["spec"]["dnsNames"]) == {
        f"{config.webhooks.service_name}.{NAMESPACE}.svc",
        f"{config.webhooks.service_name}.{NAMESPACE}.svc.cluster.local"}
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    mount = {m["mountPath"]: m for m in _container(docs)["volumeMounts"]}[config.webhooks.cert_dir]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume == {"name": mount["name"], "secret": {
        "secretName": certificate["spec"]["secretName"]}}
    injected = f"{NAMESPACE}/{certificate['metadata']['name']}"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert _one(docs, kind)["metadata"]["annotations"][
            "cert-manager.io/inject-ca-from"] == injected
    # The controller neither writes a Secret nor patches configurations: no grants for it.
    assert not [d for d in docs if d["metadata"]["name"] in (
        "aiolbc-webhook-tls", "aiolbc-webhook-configurations")]


# ---- the real kubectl -------------------------------------------------------------------------

async def test_kubectl_applies_the_kustomization(kubectl: Kubectl) -> None:
    # As manifests/README.md says: the CRDs and the namespace first, each on its own.
    await kubectl("apply", "-k", str(ROOT / "crds"))
    await kubectl("apply", "-k", str(ROOT / "namespace"))
    result = await kubectl("apply", "-k", str(ROOT))
    assert "deployment.apps/aiolbc created" in result.stdout
    assert "poddisruptionbudget.policy/aiolbc created" in result.stdout
    shown = json.loads((await kubectl("get", "deployment", "aiolbc", "-n", NAMESPACE,
                                      "-o", "json")).stdout)
    assert shown["spec"]["replicas"] == 2
    crds = (await kubectl("get", "crd", "-o", "name")).stdout
    assert "targetgroupbindings.elbv2.k8s.aws" in crds
    kinds = "namespace,serviceaccount,role,rolebinding,clusterrolebinding,configmap,service," \
        "deployment,poddisruptionbudget,networkpolicy,mutatingwebhookconfiguration," \
        "validatingwebhookconfiguration"
    before = await _versions(kubectl, kinds)
    assert len(before) >= 16
    # A second apply stores nothing new.
    again = await kubectl("apply", "-k", str(ROOT))
    assert "created" not in again.stdout
    assert await _versions(kubectl, kinds) == before


async def _versions(kubectl: Kubectl, kinds: str) -> dict[str, str]:
    listed = json.loads((await kubectl("get", kinds, "-A", "-l",
                                       "app.kubernetes.io/managed-by=kustomize", "-o",
                                       "json")).stdout)
    return {f"{i['kind']}/{i['metadata'].get('namespace', '')}/{i['metadata']['name']}":
            i["metadata"]["resourceVersion"] for i in listed["items"]}


# ---- metrics documentation ----------------------------------------------------------------------

_DOCUMENTED_PREFIXES = ("controller_runtime_", "workqueue_", "rest_client_", "leader_election_",
                        "aws_api_", "aws_target_", "awslbc_", "aiolbc_", "event_recorder_",
                        "certwatcher_")


@pytest.fixture
async def registered_metrics(envtest_kubeconfig: Path) -> dict[str, str]:
    """Family name -> type, of what `aiolbc run` registers (Manager, leader election, every
    controller, the webhook server, Kubernetes client, AWS pool), collected without starting
    anything."""
    registry = CollectorRegistry()
    settings = AWSSettings(region="us-west-2", endpoint_url="http://127.0.0.1:9",
                           access_key="unused", secret_key="unused")
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, registry=registry) as client, \
            AWSClientPool(settings, registry=registry) as pool:
        manager = Manager(client, options=ManagerOptions(leader_election=True),
                          registry=registry)
        # As `aiolbc run` sets it up, the webhook server included (on any free port).
        setup_controllers(manager, pool, parse_config([
            "--cluster-name", "unused", "--aws-region", "us-west-2",
            "--aws-vpc-id", "vpc-0123456789abcdef0", "--webhook-tls-mode", "files",
            "--webhook-bind-host", "127.0.0.1"]))
        return {family.name: family.type for family in registry.collect()}


def _sample_names(families: dict[str, str]) -> set[str]:
    names = set()
    for name, kind in families.items():
        if kind == "counter":
            names.add(f"{name}_total")
        elif kind == "histogram":
            names |= {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        else:
            names.add(name)
    return names


def test_metrics_table_matches_the_registered_metrics(registered_metrics: dict[str, str]
                                                      ) -> None:
    operations = (REPO / "docs" / "operations.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", operations, re.MULTILINE))
    registered = {n for n in _sample_names(registered_metrics)
                  if n.startswith(_DOCUMENTED_PREFIXES)
                  and not n.endswith(("_bucket", "_sum", "_count"))}
    assert len(registered) > 20
    assert sorted(documented - registered) == [], "documented but not registered"
    assert sorted(registered - documented) == [], "registered but not documented"


def test_dashboard_queries_registered_metrics(registered_metrics: dict[str, str]) -> None:
    dashboard = json.loads((ROOT / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    used = {m for e in exprs for m in re.findall(
        r"\b(?:" + "|".join(_DOCUMENTED_PREFIXES) + r")[a-z_]*", e)}
    assert used
    assert sorted(used - _sample_names(registered_metrics)) == []
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
