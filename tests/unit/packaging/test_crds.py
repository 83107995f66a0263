"""The shipped CRDs over what a cluster already has, with the real kubectl against the local API
server (which keeps the real server's rule that a version objects were stored at must stay in
spec.versions): a cluster whose TargetGroupBinding CRD once stored v1alpha1 accepts ours, which
serves v1alpha1 as upstream does, and would refuse one without it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from tests.support.kubectl import Kubectl
from tests.support.paths import CRDS

TGB_CRD = "targetgroupbindings.elbv2.k8s.aws"
TGB_FILE = CRDS / "elbv2.k8s.aws_targetgroupbindings.yaml"


def _ours() -> dict[str, object]:
    crd: dict[str, object] = yaml.safe_load(TGB_FILE.read_text())
    return crd


def _versions(crd: dict[str, object]) -> list[dict[str, object]]:
    spec = crd["spec"]
    assert isinstance(spec, dict)
    versions: list[dict[str, object]] = spec["versions"]
    return versions


def test_v1alpha1_is_served_never_stored_with_upstreams_fields() -> None:
    by_name = {v["name"]: v for v in _versions(_ours())}
    assert set(by_name) == {"v1alpha1", "v1beta1"}
    assert (by_name["v1alpha1"]["served"], by_name["v1alpha1"]["storage"]) == (True, False)
    assert (by_name["v1beta1"]["served"], by_name["v1beta1"]["storage"]) == (True, True)
    # upstream's v1alpha1 fields (apis/elbv2/v1alpha1/targetgroupbinding_types.go)
    schema = by_name["v1alpha1"]["schema"]
    assert isinstance(schema, dict)
    assert set(schema["openAPIV3Schema"]["properties"]["spec"]["properties"]) == {
        "assumeRoleExternalId", "iamRoleArnToAssume", "multiClusterTargetGroup", "networking",
        "serviceRef", "targetGroupARN", "targetGroupName", "targetType"}
    # and its status: the observed generation only (conditions came with v1beta1)
    assert set(schema["openAPIV3Schema"]["properties"]["status"]["properties"]) == {
        "observedGeneration"}


async def _cluster_that_stored_v1alpha1(kubectl: Kubectl, tmp_path: Path) -> None:
    """The CRD as an older installation left it: both versions, v1alpha1 once stored."""
    older = tmp_path / "older.yaml"
    older.write_text(yaml.safe_dump(_ours()))
    await kubectl("create", "-f", str(older))
    await kubectl("patch", "crd", TGB_CRD, "--subresource=status", "--type=merge", "-p",
                  json.dumps({"status": {"storedVersions": ["v1alpha1", "v1beta1"]}}))


async def test_ours_applies_over_a_crd_that_stored_v1alpha1(kubectl: Kubectl,
                                                            tmp_path: Path) -> None:
    await _cluster_that_stored_v1alpha1(kubectl, tmp_path)
    await kubectl("apply", "-k", str(CRDS))
    shown = json.loads((await kubectl("get", "crd", TGB_CRD, "-o", "json")).stdout)
    assert shown["status"]["storedVersions"] == ["v1alpha1", "v1beta1"]
    assert [v["name"] for v in shown["spec"]["versions"]] == ["v1alpha1", "v1beta1"]


async def test_a_crd_without_v1alpha1_is_refused_there(kubectl: Kubectl,
                                                       tmp_path: Path) -> None:
    await _cluster_that_stored_v1alpha1(kubectl, tmp_path)
    without = copy.deepcopy(_ours())
    spec = without["spec"]
    assert isinstance(spec, dict)
    spec["versions"] = [v for v in _versions(without) if v["name"] != "v1alpha1"]
    path = tmp_path / "without.yaml"
    path.write_text(yaml.safe_dump(without))
    result = await kubectl("apply", "-f", str(path), check=False)
    assert result.returncode != 0
    assert ('status.storedVersions[0]: Invalid value: "v1alpha1": must appear in '
            "spec.versions") in result.stderr


# Upstream's IngressClassParams examples (docs/guide/ingress/ingress_class.md), one per field,
# and the fields they leave out (inboundCIDRs, sslPolicy, wafv2AclArn).
UPSTREAM_PARAMS_SPECS: list[dict[str, object]] = [
    {"scheme": "internal", "ipAddressType": "dualstack",
     "tags": [{"key": "org", "value": "my-org"}]},
    {"loadBalancerName": "name-1"},
    {"namespaceSelector": {"matchLabels": {"team": "team-a"}}},
    {"group": {"name": "my-group"}},
    {"loadBalancerAttributes": [{"key": "deletion_protection.enabled", "value": "true"},
                                {"key": "idle_timeout.timeout_seconds", "value": "120"}]},
    {"subnets": {"ids": ["subnet-xxx", "subnet-123"]}},
    {"subnets": {"tags": {"kubernetes.io/role/internal-elb": ["1"],
                          "myKey": ["myVal0", "myVal1"]}}},
    {"certificateArn": ["arn:aws:acm:us-east-1:123456789:certificate/test-arn-1",
                        "arn:aws:acm:us-east-1:123456789:certificate/test-arn-2"]},
    {"minimumLoadBalancerCapacity": {"capacityUnits": 1000}},
    {"targetType": "ip"},
    {"sslRedirectPort": "443"},
    {"ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-000000000"}},
    {"PrefixListsIDs": ["pl-00000000", "pl-11111111"]},
    {"prefixListsIDs": ["pl-00000000", "pl-11111111"]},
    {"listeners": [{"protocol": "HTTPS", "port": 443, "listenerAttributes": [
        {"key": "routing.http.response.server.enabled", "value": "false"}]}]},
    {"wafv2AclName": "web-acl-name-1"},
    {"wafv2AclArn": "arn:aws:wafv2:us-west-2:111122223333:regional/webacl/web/0123"},
    {"inboundCIDRs": ["10.0.0.0/8"], "sslPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06"},
]


async def test_upstreams_ingress_class_params_are_kept_as_written(kubectl: Kubectl,
                                                                 tmp_path: Path) -> None:
    # The local API server prunes what a CRD does not specify, as the real one does.
    await kubectl("apply", "-k", str(CRDS))
    for number, spec in enumerate(UPSTREAM_PARAMS_SPECS):
        name = f"params-{number}"
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "elbv2.k8s.aws/v1beta1",
                                        "kind": "IngressClassParams",
                                        "metadata": {"name": name}, "spec": spec}))
        await kubectl("apply", "-f", str(path))
        shown = json.loads((await kubectl("get", "ingressclassparams", name, "-o",
                                          "json")).stdout)
        assert shown["spec"] == spec, name


async def test_a_field_the_crd_does_not_specify_is_pruned(kubectl: Kubectl,
                                                         tmp_path: Path) -> None:
    # What the test above would see for a field the CRD forgot.
    await kubectl("apply", "-k", str(CRDS))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "IngressClassParams",
        "metadata": {"name": "p"}, "spec": {"scheme": "internal", "notAField": "x"}}))
    await kubectl("apply", "-f", str(path))
    shown = json.loads((await kubectl("get", "ingressclassparams", "p", "-o", "json")).stdout)
    assert shown["spec"] == {"scheme": "internal"}


UPSTREAM_AGENT_CONFIG = {  # every field of upstream's ALBTargetControlConfigSpec
    "image": "public.ecr.aws/aws-elb/target-optimizer/target-control-agent:latest",
    "dataAddress": "0.0.0.0:80", "controlAddress": "0.0.0.0:3000",
    "destinationAddress": "127.0.0.1:8080", "maxConcurrency": 5,
    "tlsCertPath": "/certs/tls.crt", "tlsKeyPath": "/certs/tls.key",
    "tlsSecurityPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06", "protocolVersion": "HTTP2",
    "rustLog": "info",
    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "100m"}},
}


def _agent_config(tmp_path: Path, spec: dict[str, object]) -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "ALBTargetControlConfig",
        "metadata": {"name": "agent", "namespace": "default"}, "spec": spec}))
    return str(path)


async def test_upstreams_agent_config_is_kept_as_written(kubectl: Kubectl,
                                                         tmp_path: Path) -> None:
    await kubectl("apply", "-k", str(CRDS))
    await kubectl("apply", "-f", _agent_config(tmp_path, UPSTREAM_AGENT_CONFIG))
    shown = json.loads((await kubectl("get", "albtargetcontrolconfigs", "agent", "-n",
                                      "default", "-o", "json")).stdout)
    assert shown["spec"] == UPSTREAM_AGENT_CONFIG

