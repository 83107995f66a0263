"""The Helm chart (charts/aiolbc), through the real Helm engine (helm-python-sdk): it lints
clean, its schema refuses a missing or placeholder cluster name, a placeholder VPC and values
aiolbc does not act on, it renders valid Kubernetes with the default and with rich values, every
value becomes a flag `aiolbc run` accepts, and it is one source of truth with the kustomize tree:
the same CRDs byte for byte, and with equivalent settings the same objects (RBAC rules,
container args, webhooks, policies) as `kubectl kustomize manifests/`."""

from __future__ import annotations

import copy
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
from helm_python.chart import Chart, lint
from helm_python.errors import HelmValuesError

from controller import flagrules
from controller.app import leader_election_id
from controller.config import ConfigError, parse_config
from tests.support import chart
from tests.support.chart import CHART, RELEASE
from tests.support.paths import CRDS, MANIFESTS
from tests.unit.packaging.test_docs import run_flags

KUBECTL = Path(sys.executable).parent / "kubectl"
K8S_VERSION = "1.33"
NAMESPACE = "aiolbc-system"
POD_IP = "10.0.1.17"
# What a cluster administrator sets, in the chart's values and the kustomize tree's env.
CLUSTER = {"clusterName": "prod-eu", "region": "eu-west-1", "vpcId": "vpc-0abc1234def567890"}
# Upstream's chart's top-level values (aws-load-balancer-controller v3.5.0, values.yaml), in its
# order: the chart README's table says what became of each.
UPSTREAM_VALUES = (
    "replicaCount", "revisionHistoryLimit", "image", "runtimeClassName", "imagePullSecrets",
    "nameOverride", "fullnameOverride", "autoscaling", "serviceAccount", "rbac",
    "podSecurityContext", "securityContext", "terminationGracePeriodSeconds", "resources",
    "priorityClassName", "nodeSelector", "tolerations", "affinity",
    "configureDefaultAffinity", "topologySpreadConstraints", "updateStrategy",
    "serviceAnnotations", "deploymentAnnotations", "podAnnotations", "podLabels",
    "additionalLabels", "enableCertManager", "certManager", "clusterName", "cluster",
    "ingressClass", "ingressClassParams", "createIngressClassResource", "region", "vpcId",
    "vpcTags", "awsApiEndpoints", "awsApiThrottle", "awsMaxRetries", "defaultTargetType",
    "defaultLoadBalancerScheme", "enablePodReadinessGateInject", "enableShield", "enableWaf",
    "enableWafv2", "ingressMaxConcurrentReconciles", "logLevel", "metricsBindAddr",
    "webhookConfig", "webhookBindPort", "webhookTLS", "keepTLSSecret",
    "webhookNamespaceSelectors", "serviceMaxConcurrentReconciles",
    "targetgroupbindingMaxConcurrentReconciles",
    "targetgroupbindingMaxExponentialBackoffDelay", "targetgroupbindingRequeueDuration",
    "albGatewayMaxConcurrentReconciles", "nlbGatewayMaxConcurrentReconciles",
    "globalAcceleratorMaxConcurrentReconciles", "globalAcceleratorMaxExponentialBackoffDelay",
    "lbStabilizationMonitorInterval", "syncPeriod", "watchNamespace",
    "disableIngressClassAnnotation", "disableIngressGroupNameAnnotation",
    "tolerateNonExistentBackendService", "tolerateNonExistentBackendAction",
    "defaultSSLPolicy", "livenessProbe", "readinessProbe", "env", "hostNetwork", "dnsPolicy",
    "extraVolumeMounts", "extraVolumes", "defaultTags", "podDisruptionBudget",
    "externalManagedTags", "enableEndpointSlices", "enableBackendSecurityGroup",
    "enableManageBackendSecurityGroupRules", "backendSecurityGroup",
    "disableRestrictedSecurityGroupRules", "maxTargetsPerTargetGroup", "controllerConfig",
    "certManagement", "certDiscovery", "objectSelector", "serviceMonitor",
    "clusterSecretsPermissions", "ingressClassConfig", "enableServiceMutatorWebhook",
    "serviceMutatorWebhookConfig", "podMutatorWebhookConfig", "serviceTargetENISGTags",
    "loadBalancerClass",
)
# Upstream's defaults where they differ from this chart's (upstream's values.yaml, v3.5.0): an
# upstream values file that spells them out still installs.
UPSTREAM_DEFAULTS: dict[str, Any] = {'revisionHistoryLimit': 10,
     'image': {'repository': 'public.ecr.aws/eks/aws-load-balancer-controller',
               'tag': 'v3.5.0',
               'pullPolicy': 'IfNotPresent'},
     'serviceAccount': {'create': True,
                        'annotations': {},
                        'name': None,
                        'automountServiceAccountToken': True,
                        'imagePullSecrets': None},
     'podSecurityContext': {'fsGroup': 65534},
     'securityContext': {'readOnlyRootFilesystem': True,
                         'runAsNonRoot': True,
                         'allowPrivilegeEscalation': False},
     'terminationGracePeriodSeconds': 10,
     'resources': {},
     'updateStrategy': {},
     'certManager': {'duration': '8760h0m0s',
                     'renewBefore': '720h0m0s',
                     'revisionHistoryLimit': None,
                     'rootCert': {'duration': '43800h0m0s'}},
     'ingressClassParams': {'create': True, 'name': None, 'spec': {}},
     'region': None,
     'vpcId': None,
     'awsApiEndpoints': None,
     'awsApiThrottle': None,
     'defaultLoadBalancerScheme': None,
     'logLevel': None,
     'webhookConfig': {'disableIngressValidation': None,
                       'ingressValdationFailurePolicy': 'Fail',
                       'ingressValidationObjectSelector': {'matchExpressions': None,
                                                           'matchLabels': None},
                       'ingressValidationNamespaceSelector': {'matchExpressions': None,
                                                              'matchLabels': None}},
     'webhookTLS': {'caCert': None, 'cert': None, 'key': None},
     'targetgroupbindingMaxExponentialBackoffDelay': None,
     'targetgroupbindingRequeueDuration': None,
     'globalAcceleratorMaxExponentialBackoffDelay': None,
     'lbStabilizationMonitorInterval': None,
     'syncPeriod': None,
     'watchNamespace': None,
     'defaultSSLPolicy': None,
     'livenessProbe': {'failureThreshold': 2,
                       'httpGet': {'path': '/healthz', 'port': 61779, 'scheme': 'HTTP'},
                       'initialDelaySeconds': 30,
                       'timeoutSeconds': 10},
     'readinessProbe': {'failureThreshold': 2,
                        'httpGet': {'path': '/readyz', 'port': 61779, 'scheme': 'HTTP'},
                        'successThreshold': 1,
                        'initialDelaySeconds': 10,
                        'timeoutSeconds': 10},
     'env': None,
     'dnsPolicy': None,
     'extraVolumeMounts': None,
     'extraVolumes': None,
     'podDisruptionBudget': {},
     'backendSecurityGroup': None,
     'certManagement': {},
     'serviceMonitor': {'enabled': False,
                        'namespace': None,
                        'additionalLabels': {},
                        'interval': '1m',
                        'scrapeTimeout': None,
                        'relabelings': None,
                        'metricRelabelings': None},
     'clusterSecretsPermissions': {'allowAllSecrets': False},
     'serviceMutatorWebhookConfig': {'failurePolicy': 'Fail',
                                     'objectSelector': {'matchExpressions': [],
                                                        'matchLabels': {}},
                                     'namespaceSelectors': None,
                                     'operations': ['CREATE']},
     'serviceTargetENISGTags': None,
     'loadBalancerClass': None}
# Kinds the Kubernetes schemas do not know (cert-manager, Prometheus Operator).
NOT_CORE = {"Certificate", "Issuer", "ServiceMonitor", "PrometheusRule", "IngressClassParams"}

Doc = dict[str, Any]


def _load_all(text: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render(values: dict[str, Any] | None = None, *, namespace: str = NAMESPACE) -> list[Doc]:
    return chart.render({**CLUSTER, **(values or {})}, namespace=namespace)


def _kustomize(tmp_path: Path, extra: str = "") -> list[Doc]:
    """`kubectl kustomize` of an overlay setting the same cluster values as CLUSTER."""
    base = os.path.relpath(MANIFESTS, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(f"""\
resources: [{base}]
configMapGenerator:
  - name: aiolbc-config
    namespace: {NAMESPACE}
    behavior: merge
    literals:
      - CLUSTER_NAME={CLUSTER["clusterName"]}
      - AWS_REGION={CLUSTER["region"]}
      - AWS_VPC_ID={CLUSTER["vpcId"]}
{extra}""")
    proc = subprocess.run([str(KUBECTL), "kustomize", str(tmp_path)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return _load_all(proc.stdout)


def _one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in docs if d["kind"] == kind
             and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def _container(docs: list[Doc]) -> Doc:
    [container] = _one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    result: Doc = container
    return result


def _expand(arg: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], arg)


def _env(docs: list[Doc]) -> dict[str, str]:
    """The container's environment as the kubelet builds it (ConfigMaps of `docs`)."""
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in docs
                  if d["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for var in _container(docs).get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif "configMapKeyRef" in var["valueFrom"]:
            ref = var["valueFrom"]["configMapKeyRef"]
            env[var["name"]] = configmaps[ref["name"]][ref["key"]]
        elif var["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP":
            env[var["name"]] = POD_IP
        else:
            env[var["name"]] = f"<{var['valueFrom']['fieldRef']['fieldPath']}>"
    return env


def args_of(docs: list[Doc]) -> list[str]:
    """The container's args as the kubelet hands them to `aiolbc` ($(VAR) expanded)."""
    env = _env(docs)
    return [_expand(a, env) for a in _container(docs)["args"]]


# ---- lint and schema ----------------------------------------------------------------------------

def test_the_chart_lints_clean() -> None:
    report = lint(CHART, CLUSTER, strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_lint_fails_without_a_cluster_name() -> None:
    report = lint(CHART, namespace=NAMESPACE)
    assert any("clusterName" in e for e in report["errors"])


@pytest.mark.parametrize(("values", "key"), [
    ({"clusterName": ""}, "/clusterName"),
    ({"clusterName": "my-cluster"}, "/clusterName"),
    ({"clusterName": "bad name"}, "/clusterName"),
    ({"vpcId": "vpc-00000000000000000"}, "/vpcId"),
    ({"vpcId": "vpc-xyz"}, "/vpcId"),
    # A value the chart does not know: refused, never silently ignored.
    ({"webhookConfig": {"disableIngressValidations": True}}, "webhookConfig"),
    ({"autoscale": {"enabled": True}}, "autoscale"),
    # Upstream's webhook values: refused where the API server would refuse the configuration.
    ({"webhookConfig": {"ingressValdationFailurePolicy": "Never"}},
     "/webhookConfig/ingressValdationFailurePolicy"),
    ({"serviceMutatorWebhookConfig": {"operations": ["DELETE"]}},
     "/serviceMutatorWebhookConfig/operations"),
    ({"webhookNamespaceSelectors": [{"key": "team", "operator": "Equals"}]},
     "/webhookNamespaceSelectors"),
    ({"autoscaling": {"enabled": True, "minReplicas": 0}}, "/autoscaling/minReplicas"),
    ({"certManagement": {"defaultPCAARN": "arn:aws:acm-pca:x"}},
     "/certManagement/defaultPCAARN"),
    # Values of the flags added since: refused when the controller would refuse the flag.
    ({"enableWaf": "yes"}, "/enableWaf"),
    ({"enableEndpointSlices": False}, "/enableEndpointSlices"),
    ({"maxTargetsPerTargetGroup": -1}, "/maxTargetsPerTargetGroup"),
    ({"clusterSecretsPermissions": {"requiredSecretsLabel": "no-value"}},
     "/clusterSecretsPermissions/requiredSecretsLabel"),
    ({"clusterSecretsPermissions": {"requiredSecretsLabel": "key="}},
     "/clusterSecretsPermissions/requiredSecretsLabel"),
    ({"certDiscovery": {"allowedCertificateAuthorityARNs": "not-an-arn"}},
     "/certDiscovery/allowedCertificateAuthorityARNs"),
    ({"lbStabilizationMonitorInterval": "soon"}, "/lbStabilizationMonitorInterval"),
    ({"replicaCount": "2"}, "/replicaCount"),
    ({"extraArgs": ["run"]}, "/extraArgs"),
])
def test_schema_refuses(values: dict[str, Any], key: str) -> None:
    with pytest.raises(HelmValuesError) as raised:
        render(values)
    assert key in str(raised.value)


def test_schema_refuses_a_missing_cluster_name() -> None:
    with Chart.load(CHART) as loaded, pytest.raises(HelmValuesError, match="clusterName"):
        loaded.render({"vpcId": CLUSTER["vpcId"]}, name=RELEASE, namespace=NAMESPACE)


# ---- rendering ----------------------------------------------------------------------------------

RICH: dict[str, Any] = {
    "replicaCount": 3,
    "image": {"repository": "111122223333.dkr.ecr.eu-west-1.amazonaws.com/aiolbc",
              "tag": "0.1.0", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "registry"}],
    "serviceAccount": {"annotations": {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/aiolbc"},
        "name": "lbc"},
    "resources": {"requests": {"cpu": "200m", "memory": "512Mi"},
                  "limits": {"cpu": "1", "memory": "1Gi"}},
    "priorityClassName": "system-node-critical",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    "topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "aiolbc"}}}],
    "podDisruptionBudget": {"maxUnavailable": 1},
    "podAnnotations": {"example.com/team": "platform"},
    "env": {"AWS_STS_REGIONAL_ENDPOINTS": "regional"},
    "ingressClass": "alb-internal",
    "loadBalancerClass": "service.k8s.aws/nlb",
    "awsApiThrottle": ["elasticloadbalancing:.*=10:20", "ec2:Describe.*=20:40"],
    "awsMaxRetries": 5,
    "awsApiEndpoints": "ec2=https://ec2.eu-west-1.amazonaws.com",
    "defaultTargetType": "ip",
    "defaultLoadBalancerScheme": "internal",
    "defaultSSLPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "defaultTags": {"team": "platform", "env": "prod"},
    "externalManagedTags": ["cost-center", "owner"],
    "enablePodReadinessGateInject": False,
    "enableBackendSecurityGroup": True,
    "enableManageBackendSecurityGroupRules": True,
    "backendSecurityGroup": "sg-0123456789abcdef0",
    "disableRestrictedSecurityGroupRules": False,
    "serviceTargetENISGTags": "team=platform",
    "logLevel": "debug",
    "syncPeriod": "5h",
    "watchNamespace": ["shop", "blog"],
    "namespaceSelector": "team=web",
    "controllerId": "internal",
    "ingressMaxConcurrentReconciles": 4,
    "serviceMaxConcurrentReconciles": 4,
    "targetgroupbindingMaxConcurrentReconciles": 6,
    "targetgroupbindingMaxExponentialBackoffDelay": "900s",
    "targetgroupbindingRequeueDuration": "300s",
    "controllerConfig": {"featureGates": {"SubnetsClusterTagCheck": True,
                                         "EnableRGTAPI": False}},
    "webhookBindPort": 9444,
    "checkpoints": {"enabled": True, "verifyQPS": 2.5, "verifyBurst": 5, "maxWait": "30m",
                    "verifyAwsQPS": 4, "verifyAwsBurst": 8},
    "namespacePolicy": {"ingressGroupNamespaces": "params",
                        "targetgroupbindingNetworkingUnrestrictedNamespaces": ["infra"]},
    "metricsSecure": False,
    "clusterSecretsPermissions": {"allowAllSecrets": False},
    "networkPolicy": {"dns": {"anyResolver": True}},
    "enableCertManager": True,
    "enableServiceMutatorWebhook": True,
    "ingressClassParams": {"spec": {"scheme": "internal", "group": {"name": "shared"}}},
    "ingressClassConfig": {"default": True},
    "serviceMonitor": {"enabled": True, "additionalLabels": {"release": "prometheus"},
                       "interval": "30s"},
    "prometheusRule": {"enabled": True, "additionalLabels": {"release": "prometheus"}},
    "extraArgs": ["--leader-election-lease-duration=30s"],
    # Upstream's webhook values.
    "serviceAnnotations": {"example.com/owner": "platform"},
    "webhookNamespaceSelectors": [{"key": "team", "operator": "Exists"}],
    "objectSelector": {"matchLabels": {"lb": "aws"}},
    "podMutatorWebhookConfig": {"failurePolicy": "Fail"},
    "serviceMutatorWebhookConfig": {
        "failurePolicy": "Fail", "operations": ["CREATE", "UPDATE"],
        "objectSelector": {"matchExpressions": [
            {"key": "lb", "operator": "NotIn", "values": ["legacy"]}]},
        "namespaceSelectors": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                "values": ["kube-system"]}]},
    "webhookConfig": {"ingressValdationFailurePolicy": "Fail",
                      "ingressValidationNamespaceSelector": {"matchLabels": {"team": "web"}}},
    "keepTLSSecret": True,
}


@pytest.mark.parametrize("values", [{}, RICH], ids=["default", "rich"])
def test_renders_valid_kubernetes(values: dict[str, Any]) -> None:
    docs = render(values)
    for doc in docs:
        if doc["kind"] not in NOT_CORE:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    assert {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
            "RoleBinding", "Service", "PodDisruptionBudget", "NetworkPolicy",
            "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
            "IngressClass"} <= {d["kind"] for d in docs}
    # Namespaced objects go to the release's namespace; the chart creates no Namespace.
    assert "Namespace" not in {d["kind"] for d in docs}


def test_rich_values_become_the_flags_aiolbc_run_accepts() -> None:
    docs = render(RICH)
    args = args_of(docs)
    assert args[0] == "run"
    config = parse_config(args[1:])
    assert config.cluster.name == "prod-eu"
    assert (config.aws.region, config.aws.vpc_id) == ("eu-west-1", "vpc-0abc1234def567890")
    assert not config.metrics.secure
    assert config.webhooks.tls_mode == "files"
    assert config.webhooks.bind_port == 9444
    assert set(args) >= {
        "--ingress-class=alb-internal", "--load-balancer-class=service.k8s.aws/nlb",
        "--aws-api-throttle=elasticloadbalancing:.*=10:20,ec2:Describe.*=20:40",
        "--aws-max-retries=5", "--default-target-type=ip",
        "--default-tags=env=prod,team=platform", "--external-managed-tags=cost-center,owner",
        "--enable-pod-readiness-gate-inject=false", "--backend-security-group=sg-0123456789abcdef0",
        "--log-level=debug", "--sync-period=5h", "--watch-namespace=shop,blog",
        "--namespace-selector=team=web", "--controller-id=internal",
        "--targetgroupbinding-max-concurrent-reconciles=6",
        "--feature-gates=EnableRGTAPI=false,SubnetsClusterTagCheck=true",
        "--enable-checkpoints=true",
        "--checkpoint-verify-qps=2.5", "--checkpoint-max-wait=30m",
        "--ingress-group-namespaces=params",
        "--targetgroupbinding-networking-unrestricted-namespaces=infra",
        "--enable-service-mutator-webhook=true", "--metrics-bind-addr=:8080",
        "--leader-election-lease-duration=30s"}
    container = _container(docs)
    assert container["image"] == "111122223333.dkr.ecr.eu-west-1.amazonaws.com/aiolbc:0.1.0"
    assert {"name": "AWS_STS_REGIONAL_ENDPOINTS", "value": "regional"} in container["env"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 61779, "webhook-server": 9444}
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "lbc" == _one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["topologySpreadConstraints"] == RICH["topologySpreadConstraints"]
    assert _one(docs, "ServiceAccount")["metadata"]["annotations"] == RICH[
        "serviceAccount"]["annotations"]


def test_every_controller_flag_value_reaches_the_args() -> None:
    # Each value the chart maps to a flag, set alone, adds exactly that flag.
    base = args_of(render())
    for key in ("awsMaxRetries", "logLevel", "syncPeriod", "watchNamespace", "namespaceSelector",
                "controllerId",
                "ingressMaxConcurrentReconciles", "serviceMaxConcurrentReconciles",
                "targetgroupbindingMaxExponentialBackoffDelay",
                "targetgroupbindingRequeueDuration", "defaultSSLPolicy",
                "enableManageBackendSecurityGroupRules", "disableRestrictedSecurityGroupRules",
                "serviceTargetENISGTags", "defaultLoadBalancerScheme", "awsApiEndpoints"):
        args = args_of(render({key: RICH[key]}))
        added = [a for a in args if a not in base]
        assert len(added) == 1, (key, added)
        parse_config(args[1:])


@pytest.mark.parametrize("value", ["shop", "shop,blog", ["shop"], ["shop", "blog"]])
def test_watch_namespace_is_upstreams_string_or_a_list(value: str | list[str]) -> None:
    args = args_of(render({"watchNamespace": value}))
    joined = value if isinstance(value, str) else ",".join(value)
    assert f"--watch-namespace={joined}" in args
    assert parse_config(args[1:]).runtime.watch_namespace == frozenset(joined.split(","))


# Upstream's chart values of the flags added after the chart, and aiolbc's Secret settings.
ADDED: dict[str, Any] = {
    "vpcTags": {"Name": "prod-eu", "env": "prod"},
    "enableWafv2": False,
    "enableWaf": False,
    "enableShield": False,
    "tolerateNonExistentBackendService": False,
    "tolerateNonExistentBackendAction": False,
    "disableIngressClassAnnotation": True,
    "disableIngressGroupNameAnnotation": True,
    "enableEndpointSlices": True,
    "maxTargetsPerTargetGroup": 500,
    "certDiscovery": {"allowedCertificateAuthorityARNs":
                      "arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/a1,"
                      "arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/b2"},
    "albGatewayMaxConcurrentReconciles": 2,
    "nlbGatewayMaxConcurrentReconciles": 2,
    "globalAcceleratorMaxConcurrentReconciles": 2,
    "globalAcceleratorMaxExponentialBackoffDelay": "10m",
    "lbStabilizationMonitorInterval": "2m",
    "clusterSecretsPermissions": {"allowAllSecrets": True,
                                  "requiredSecretsLabel": "aiolbc.example.com/readable=true"},
    "enableSecretCertificates": True,
}
ADDED_ARGS = {
    "--aws-vpc-tags=Name=prod-eu,env=prod", "--enable-wafv2=false", "--enable-waf=false",
    "--enable-shield=false", "--tolerate-non-existent-backend-service=false",
    "--tolerate-non-existent-backend-action=false", "--disable-ingress-class-annotation=true",
    "--disable-ingress-group-name-annotation=true", "--enable-endpoint-slices=true",
    "--max-targets-per-target-group=500",
    "--allowed-certificate-authority-arns="
    "arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/a1,"
    "arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/b2",
    "--alb-gateway-max-concurrent-reconciles=2", "--nlb-gateway-max-concurrent-reconciles=2",
    "--globalaccelerator-max-concurrent-reconciles=2",
    "--globalaccelerator-max-exponential-backoff-delay=10m",
    "--lb-stabilization-monitor-interval=2m",
    "--required-secrets-label=aiolbc.example.com/readable=true",
    "--enable-secret-certificates=true"}


def test_added_flag_values_become_the_flags_aiolbc_run_accepts() -> None:
    docs = render(ADDED)
    args = args_of(docs)
    assert set(args) >= ADDED_ARGS
    config = parse_config(args[1:])
    assert dict(config.aws.vpc_tags) == {"Name": "prod-eu", "env": "prod"}
    assert not config.ingress.enable_waf
    assert not config.ingress.enable_wafv2
    assert not config.ingress.enable_shield
    assert config.ingress.required_secrets_label == "aiolbc.example.com/readable=true"
    assert config.ingress.enable_secret_certificates
    for doc in docs:
        if doc["kind"] not in NOT_CORE:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_each_added_value_alone_adds_its_flag_and_unset_adds_none() -> None:
    base = args_of(render())
    assert not [a for a in base if a.split("=", 1)[0] in
                {a.split("=", 1)[0] for a in ADDED_ARGS}]
    for key, value in ADDED.items():
        args = args_of(render({key: value}))
        added = [a for a in args if a not in base]
        assert len(added) == 1, (key, added)
        assert added[0] in ADDED_ARGS, (key, added)
        parse_config(args[1:])
    # The upstream default of each switch (true) is passed through when set, as upstream does.
    assert "--enable-shield=true" in args_of(render({"enableShield": True}))


@pytest.mark.parametrize("label", [
    "aiolbc.example.com/readable=true", "team=a", "key=", "=value", "no-value", "a=b,c=d",
    "a=-bad", "a=b c"])
def test_the_schema_takes_the_labels_the_controller_takes(label: str) -> None:
    values = {"clusterSecretsPermissions": {"requiredSecretsLabel": label}}
    accepted = flagrules.label_problem(label) is None
    if accepted:
        parse_config(args_of(render(values))[1:])
    else:
        with pytest.raises(HelmValuesError):
            render(values)


@pytest.mark.parametrize("arns", [
    "arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/a1",
    "arn:aws:acm-pca:eu-west-1:1:certificate-authority/a1, arn:aws:acm-pca:eu-west-1:1:c/b2",
    "not-an-arn", "arn:a,not-an-arn"])
def test_the_schema_takes_the_authority_arns_the_controller_takes(arns: str) -> None:
    values = {"certDiscovery": {"allowedCertificateAuthorityARNs": arns}}
    try:
        parse_config(["--cluster-name=c", f"--allowed-certificate-authority-arns={arns}"])
    except ConfigError:
        with pytest.raises(HelmValuesError):
            render(values)
    else:
        parse_config(args_of(render(values))[1:])


def test_secret_certificates_need_the_secret_grant() -> None:
    with pytest.raises(HelmValuesError, match="allowAllSecrets"):
        render({"enableSecretCertificates": True,
                "clusterSecretsPermissions": {"allowAllSecrets": False}})


def test_the_readme_names_every_value_that_becomes_a_flag() -> None:
    template = (CHART / "templates" / "deployment.yaml").read_text()
    passed = set(re.findall(
        r"\.Values\.([A-Za-z0-9_.]+)[^\n]*\}\}\n\s*- (--[a-z0-9-]+)=", template))
    assert ("vpcTags", "--aws-vpc-tags") in passed  # the extraction finds what it must
    assert len(passed) > 40
    table = set(re.findall(r"^\| `([A-Za-z0-9_.]+)` \| `(--[a-z0-9-]+)` \|",
                           (CHART / "README.md").read_text(), re.MULTILINE))
    missing = sorted(passed - table)
    assert not missing, f"charts/aiolbc/README.md's values table does not name {missing}"
    unknown = sorted(f for _, f in table if f not in run_flags())
    assert not unknown, f"the values table names flags aiolbc run does not have: {unknown}"


def test_cert_manager_and_secure_metrics_choices() -> None:
    docs = render({"enableCertManager": True})
    certificate = _one(docs, "Certificate", "aiolbc-serving-cert")
    # Issued by the chart's CA (as upstream's chart), so that a renewal keeps the CA.
    root = _one(docs, "Certificate", "aiolbc-root-cert")
    assert root["spec"]["isCA"] is True
    assert root["spec"]["duration"] == "43800h0m0s"
    ca_issuer = _one(docs, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert ca_issuer["spec"]["ca"]["secretName"] == root["spec"]["secretName"]
    # An issuer of the cluster's instead: the chart's CA is not made.
    own = render({"enableCertManager": True, "certManager": {
        "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}, "revisionHistoryLimit": 3}})
    served = _one(own, "Certificate")
    assert served["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}
    assert served["spec"]["revisionHistoryLimit"] == 3
    assert not [d for d in own if d["kind"] == "Issuer"]
    assert set(certificate["spec"]["dnsNames"]) == {
        f"aws-load-balancer-webhook-service.{NAMESPACE}.svc",
        f"aws-load-balancer-webhook-service.{NAMESPACE}.svc.cluster.local"}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert _one(docs, kind)["metadata"]["annotations"][
            "cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/{certificate['metadata']['name']}"
    assert not [d for d in docs if d["metadata"]["name"].endswith(
        ("-webhook-tls", "-webhook-configurations"))]
    # Plain metrics: no review grants, and the scrape is plain HTTP on 8080.
    plain = render({"metricsSecure": False, "serviceMonitor": {"enabled": True}})
    assert not [d for d in plain if "metrics-auth" in d["metadata"]["name"]]
    [endpoint] = _one(plain, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "http"
    assert _one(plain, "Service", "aiolbc-metrics")["spec"]["ports"][0]["port"] == 8080
    secure = render({"serviceMonitor": {"enabled": True}})
    [endpoint] = _one(secure, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert "bearerTokenFile" in endpoint


def test_given_webhook_certificate_is_served_from_files() -> None:
    docs = render({"webhookTLS": {"caCert": "CA", "cert": "CERT", "key": "KEY"}})
    secret = _one(docs, "Secret", "aws-load-balancer-tls")
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert "--webhook-tls-mode=files" in args_of(docs)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert {h["clientConfig"]["caBundle"] for h in _one(docs, kind)["webhooks"]} == {
            secret["data"]["ca.crt"]}


def test_secret_access_and_dns_choices() -> None:
    def secret_rules(docs: list[Doc]) -> list[Doc]:
        return [r for r in _one(docs, "ClusterRole", "aiolbc")["rules"]
                if "secrets" in r["resources"]]
    assert secret_rules(render()) == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]}]
    assert secret_rules(render({"clusterSecretsPermissions": {"allowAllSecrets": False}})) == []
    egress = _one(render({"networkPolicy": {"dns": {"anyResolver": True}}}),
                  "NetworkPolicy")["spec"]["egress"]
    dns = [r for r in egress if any(p["port"] == 53 for p in r["ports"])]
    assert dns
    assert all("to" not in r for r in dns)
    assert not [d for d in render({"networkPolicy": {"enabled": False}})
                if d["kind"] == "NetworkPolicy"]


def _hook(docs: list[Doc], kind: str, name: str) -> Doc:
    found = [h for h in _one(docs, kind)["webhooks"] if h["name"] == name]
    assert len(found) == 1, f"{kind} has {len(found)} webhooks {name}"
    hook: Doc = found[0]
    return hook


def test_upstream_webhook_values_shape_the_webhooks() -> None:
    mutating, validating = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
    # Defaults: every webhook fails open but the QUIC server IDs' (as upstream's: a pod admitted
    # without its ID could never be registered) and the ALB target control agent's (upstream's);
    # the Service mutator ships on, as upstream's.
    docs = render()
    assert {h["name"]: h["failurePolicy"] for kind in (mutating, validating)
            for h in _one(docs, kind)["webhooks"] if h["failurePolicy"] != "Ignore"} == {
        "quicid.elbv2.k8s.aws": "Fail", "alb-target-control.namespace.elbv2.k8s.aws": "Fail",
        "alb-target-control.object.elbv2.k8s.aws": "Fail"}
    assert _hook(docs, mutating, "mservice.elbv2.k8s.aws")["rules"][0]["operations"] == [
        "CREATE"]
    assert "--enable-service-mutator-webhook=true" in args_of(docs)
    rich = render(RICH)
    pod = _hook(rich, mutating, "mpod.elbv2.k8s.aws")
    assert pod["failurePolicy"] == "Fail"
    assert pod["namespaceSelector"] == {"matchExpressions": RICH["webhookNamespaceSelectors"]}
    assert pod["objectSelector"] == {
        "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "NotIn",
                              "values": ["aiolbc"]}],
        "matchLabels": {"lb": "aws"}}
    svc = _hook(rich, mutating, "mservice.elbv2.k8s.aws")
    config = RICH["serviceMutatorWebhookConfig"]
    assert svc["failurePolicy"] == "Fail"
    assert svc["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert svc["namespaceSelector"] == {"matchExpressions": config["namespaceSelectors"]}
    assert svc["objectSelector"]["matchExpressions"][1:] == config["objectSelector"][
        "matchExpressions"]
    ingress = _hook(rich, validating, "vingress.elbv2.k8s.aws")
    assert ingress["failurePolicy"] == "Fail"
    assert ingress["namespaceSelector"] == {"matchLabels": {"team": "web"}}
    assert "objectSelector" not in ingress
    assert _one(rich, "Service", "aws-load-balancer-webhook-service")["metadata"][
        "annotations"] == {"example.com/owner": "platform"}
    # Turned off: no Ingress validation, no Service mutator (and no flag for it).
    off = render({"webhookConfig": {"disableIngressValidation": True},
                  "enableServiceMutatorWebhook": False})
    assert "vingress.elbv2.k8s.aws" not in {h["name"] for h in _one(off, validating)["webhooks"]}
    assert "mservice.elbv2.k8s.aws" not in {h["name"] for h in _one(off, mutating)["webhooks"]}
    assert not [a for a in args_of(off) if a.startswith("--enable-service-mutator-webhook")]


def test_the_readme_says_what_became_of_every_upstream_value() -> None:
    assert len(UPSTREAM_VALUES) == len(set(UPSTREAM_VALUES)) == 97
    section = (CHART / "README.md").read_text().split("## Upstream's values", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z0-9]+)` \| (kept|renamed|ours|absent) \|", section,
                      re.MULTILINE)
    status = dict(rows)
    assert len(status) == len(rows), "a value is listed twice"
    ours = yaml.safe_load((CHART / "values.yaml").read_text())
    # Every upstream value is in the table, every value of ours is too, and a kept one is a value
    # of this chart under the same name.
    assert sorted(n for n, s in status.items() if s != "ours") == sorted(UPSTREAM_VALUES)
    assert sorted(status) == sorted(set(UPSTREAM_VALUES) | set(ours))
    assert [n for n, s in status.items() if s == "kept" and n not in ours] == []
    assert [n for n, s in status.items() if s == "ours" and n in UPSTREAM_VALUES] == []
    # An upstream values file spelling out upstream's defaults installs, and still gives the
    # webhooks upstream's failure policies and the pods a restricted security context.
    docs = render(copy.deepcopy(UPSTREAM_DEFAULTS))
    hooks = {h["name"]: h for kind in ("MutatingWebhookConfiguration",
                                       "ValidatingWebhookConfiguration")
             for h in _one(docs, kind)["webhooks"]}
    assert hooks["vingress.elbv2.k8s.aws"]["failurePolicy"] == "Fail"
    assert hooks["mservice.elbv2.k8s.aws"]["failurePolicy"] == "Fail"
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert _container(docs)["image"] == "public.ecr.aws/eks/aws-load-balancer-controller:v3.5.0"


def test_the_operations_guide_lists_every_shipped_alert() -> None:
    [rule] = [d for d in render({"prometheusRule": {"enabled": True}})
              if d["kind"] == "PrometheusRule"]
    shipped = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    guide = (CHART.parent.parent / "docs" / "operations.md").read_text()
    section = guide.split("### Alerts", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(Aiolbc[A-Za-z]+)` \|", section, re.MULTILINE))
    assert "AiolbcWebhookCertificateExpiresSoon" in shipped
    assert sorted(documented) == sorted(shipped)


def test_autoscaling_replaces_the_replica_count() -> None:
    docs = render({"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6,
                                   "targetCPUUtilizationPercentage": 70}})
    assert "replicas" not in _one(docs, "Deployment")["spec"]
    hpa = _one(docs, "HorizontalPodAutoscaler")
    kubernetes_validate.validate(hpa, K8S_VERSION, strict=True)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    assert hpa["spec"]["scaleTargetRef"]["name"] == _one(docs, "Deployment")["metadata"]["name"]
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    assert not [d for d in render() if d["kind"] == "HorizontalPodAutoscaler"]
    assert _one(render(), "Deployment")["spec"]["replicas"] == 2


def test_ingress_class_resources() -> None:
    docs = render({"ingressClassParams": {"spec": {"scheme": "internal"}}})
    ingress_class = _one(docs, "IngressClass", "alb")
    assert ingress_class["spec"]["controller"] == "ingress.k8s.aws/alb"
    assert ingress_class["spec"]["parameters"]["name"] == "alb"
    assert _one(docs, "IngressClassParams", "alb")["spec"] == {"scheme": "internal"}
    assert not [d for d in render({"createIngressClassResource": False})
                if d["kind"] in ("IngressClass", "IngressClassParams")]
    # A second controller of the cluster serves its own class, and holds its own Lease.
    docs = render({"controllerId": "internal", "ingressClass": "internal"})
    other = _one(docs, "IngressClass", "internal")
    assert other["spec"]["controller"] == "ingress.k8s.aws/alb-internal"
    role = next(d for d in docs if d["kind"] == "Role"
                and d["metadata"]["name"].endswith("-leader-election"))
    named = {n for rule in role["rules"] for n in rule.get("resourceNames", [])}
    assert named == {leader_election_id(parse_config(args_of(docs)[1:]))}
    assert named == {"aws-load-balancer-controller-leader-internal"}


def test_another_release_namespace_moves_every_reference() -> None:
    docs = render(namespace="kube-system")
    for doc in docs:
        for subject in doc.get("subjects", []):
            assert subject["namespace"] == "kube-system"
        for hook in doc.get("webhooks", []):
            assert hook["clientConfig"]["service"]["namespace"] == "kube-system"
        if doc["kind"] in ("Deployment", "Service", "Role", "RoleBinding", "ServiceAccount"):
            assert doc["metadata"]["namespace"] == "kube-system"


# ---- one source of truth with manifests/ -----------------------------------------------------

def test_crds_are_the_kustomize_trees_byte_for_byte() -> None:
    ours = {p.name: p.read_bytes() for p in sorted((CHART / "crds").glob("*.yaml"))}
    theirs = {p.name: p.read_bytes() for p in sorted(CRDS.glob("*.yaml"))}
    assert ours == theirs
    with Chart.load(CHART) as loaded:
        assert {c["filename"].rsplit("/", 1)[-1] for c in loaded.crds} == set(theirs)


_SKIP_KINDS = {"Namespace", "ConfigMap", "CustomResourceDefinition"}
_HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
                "app.kubernetes.io/instance"}


def _normal(doc: Doc, configmaps: list[Doc]) -> Doc:
    """A document without what only tells how it was installed (labels), and a Deployment's
    container with its env and args as the process sees them."""
    doc = copy.deepcopy(doc)
    meta = doc["metadata"]
    labels = {k: v for k, v in meta.pop("labels", {}).items() if k not in _HELM_LABELS}
    meta["labels"] = labels
    if doc["kind"] == "Deployment":
        template = doc["spec"]["template"]
        template["metadata"]["labels"] = {
            k: v for k, v in template["metadata"]["labels"].items() if k not in _HELM_LABELS}
        template["metadata"]["labels"]["app.kubernetes.io/instance"] = RELEASE
        [container] = template["spec"]["containers"]
        container["args"] = args_of([doc, *configmaps])
        container["env"] = sorted((e for e in container["env"]
                                   if "configMapKeyRef" not in e.get("valueFrom", {})),
                                  key=lambda e: e["name"])
    return doc


def test_defaults_install_what_the_kustomize_tree_installs(tmp_path: Path) -> None:
    built = _kustomize(tmp_path)
    configmaps = [d for d in built if d["kind"] == "ConfigMap"]
    # The kustomize tree has no IngressClass (manifests/examples/ has one) and leaves the
    # priority class to the cluster.
    docs = render({"createIngressClassResource": False, "priorityClassName": ""})

    def key(doc: Doc) -> tuple[str, str, str]:
        return (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])

    ours = {key(d): _normal(d, configmaps) for d in docs}
    theirs = {key(d): _normal(d, configmaps) for d in built if d["kind"] not in _SKIP_KINDS}
    assert sorted(ours) == sorted(theirs)
    for name, doc in theirs.items():
        assert json.dumps(ours[name], sort_keys=True, indent=1) == json.dumps(
            doc, sort_keys=True, indent=1), name
