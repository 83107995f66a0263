"""The shipped manifests are valid: built-in kinds against Kubernetes' own schemas
(kubernetes-validate, strict), custom objects against the CRDs we ship, and the CRDs' schemas are
structural (every node typed), as the API server requires for apiextensions.k8s.io/v1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.paths import MANIFESTS

ROOT = MANIFESTS
K8S_VERSION = "1.33"


def _documents(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in sorted(directory.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path, doc))
    return docs


def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    schemas = {}
    for _, crd in _documents(ROOT / "crds"):
        group = crd["spec"]["group"]
        for version in crd["spec"]["versions"]:
            key = (f"{group}/{version['name']}", crd["spec"]["names"]["kind"])
            schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


CRD_SCHEMAS = _crd_schemas()


def _validate(doc: dict[str, Any]) -> None:
    key = (doc["apiVersion"], doc["kind"])
    if key in CRD_SCHEMAS:
        jsonschema.validate(doc, CRD_SCHEMAS[key])
    else:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize(
    ("path", "doc"),
    _documents(ROOT / "crds") + _documents(ROOT / "examples"),
    ids=lambda v: v.name if isinstance(v, Path) else "",
)
def test_manifest_is_valid(path: Path, doc: dict[str, Any]) -> None:
    _validate(doc)


def _structural_problems(node: dict[str, Any], where: str) -> list[str]:
    problems = []
    if "type" not in node and not node.get("x-kubernetes-int-or-string") \
            and not node.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{where}: no type")
    for name, child in node.get("properties", {}).items():
        problems += _structural_problems(child, f"{where}.{name}")
    if isinstance(node.get("items"), dict):
        problems += _structural_problems(node["items"], f"{where}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += _structural_problems(node["additionalProperties"], f"{where}{{}}")
    return problems


def test_crd_schemas_are_structural() -> None:
    assert CRD_SCHEMAS, "no CRDs found"
    for key, schema in CRD_SCHEMAS.items():
        assert _structural_problems(schema, str(key)) == []


def test_examples_cover_every_kind_the_controller_serves() -> None:
    kinds = {doc["kind"] for _, doc in _documents(ROOT / "examples")}
    assert {"IngressClass", "Ingress", "Service", "Deployment", "TargetGroupBinding"} <= kinds
    services = [d for _, d in _documents(ROOT / "examples") if d["kind"] == "Service"]
    assert any(s["spec"].get("loadBalancerClass") == "service.k8s.aws/nlb" for s in services)


def test_bad_custom_object_is_rejected_by_its_crd() -> None:
    tgb = {
        "apiVersion": "elbv2.k8s.aws/v1beta1",
        "kind": "TargetGroupBinding",
        "metadata": {"name": "x"},
        "spec": {"targetType": "pod", "serviceRef": {"name": "web", "port": 80}},
    }
    with pytest.raises(jsonschema.ValidationError, match="pod"):
        _validate(tgb)


def test_bad_builtin_object_is_rejected() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"ports": [{"port": "eighty"}]},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(svc)
