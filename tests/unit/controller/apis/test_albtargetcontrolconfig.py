"""The ALBTargetControlConfig spec model against upstream's CRD schema and Go type."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controller.apis.albtargetcontrolconfig import (
    ALBTargetControlConfigSpec,
    InvalidConfig,
    parse_spec,
)
from tests.support.paths import CRDS

CRD = CRDS / "elbv2.k8s.aws_albtargetcontrolconfigs.yaml"


def _config(**spec: Any) -> dict[str, Any]:
    base = {"image": "agent:1", "dataAddress": "0.0.0.0:80", "controlAddress": "0.0.0.0:3000",
            "destinationAddress": "127.0.0.1:8080"}
    return {"metadata": {"namespace": "ns", "name": "c"}, "spec": {**base, **spec}}


def test_the_crd_is_upstreams_namespaced_v1beta1() -> None:
    crd = yaml.safe_load(CRD.read_text())
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["kind"] == "ALBTargetControlConfig"
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(spec["required"]) == {"image", "dataAddress", "controlAddress",
                                     "destinationAddress"}
    # the model reads every field the schema has
    aliases = {f.alias or name for name, f in ALBTargetControlConfigSpec.model_fields.items()}
    assert aliases == set(spec["properties"])


def test_a_full_spec_reads_as_written() -> None:
    spec = parse_spec(_config(maxConcurrency=7, protocolVersion="GRPC", rustLog="debug",
                              tlsCertPath="/c", resources={"limits": {"cpu": "100m",
                                                                      "memory": 64}}))
    assert spec.data_address == "0.0.0.0:80"
    assert spec.max_concurrency == 7
    assert spec.protocol_version == "GRPC"
    assert spec.rust_log == "debug"
    assert spec.resources is not None
    assert spec.resources.limits == {"cpu": "100m", "memory": 64}
    assert spec.tls_key_path is None


@pytest.mark.parametrize(("spec", "field"), [
    ({"dataAddress": "nowhere"}, "spec.dataAddress"),
    ({"maxConcurrency": 1001}, "spec.maxConcurrency"),
    ({"protocolVersion": "HTTP3"}, "spec.protocolVersion"),
    ({"rustLog": "trace"}, "spec.rustLog"),
    ({"image": None}, "spec.image"),
])
def test_a_spec_outside_the_schema_is_one_message(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        parse_spec(_config(**spec))
    assert str(caught.value).startswith(f"ALBTargetControlConfig ns/c: {field}: ")
