"""`target-control-port.<service>.<port>` in the Ingress model (upstream's
buildTargetGroupTargetControlPort), and the ALBTargetControlAgent gate in both states: the
port is the target group's whatever the gate says (upstream reads it ungated); the gate, which
upstream's agent injection waits on, is off by default and refused on (not built)."""

from __future__ import annotations

import pytest

from controller.config import parse_config
from controller.ingress.merge import BuildError
from controller.model import TargetGroup
from tests.unit.controller.annotation_objects import build, ingress_world

KEY = "target-control-port.web.80"


def _group(ingress: dict[str, str], service: dict[str, str] | None = None) -> tuple[int | None,
                                                                                      list[int]]:
    c, _ = ingress_world({"target-type": "ip", **ingress}, service)
    built = build(c)
    assert built.stack is not None
    [tg] = built.stack.target_groups.values()
    [binding] = built.stack.target_group_bindings.values()
    ports = sorted(p.port for r in (binding.networking.ingress if binding.networking else ())
                   for p in r.ports if isinstance(p.port, int))
    return tg.target_control_port, ports


def test_the_port_on_the_target_group_and_its_rules() -> None:
    assert _group({}) == (None, [8080])
    assert _group({KEY: "9000"}) == (9000, [8080, 9000])
    # The Service's key wins over the Ingress's.
    assert _group({KEY: "9000"}, {KEY: "9001"})[0] == 9001
    # Another backend's key is not this one's.
    assert _group({"target-control-port.api.80": "9000"})[0] is None


def test_bad_values_and_instance_targets_are_one_message() -> None:
    for value in ("0", "x", "65536"):
        with pytest.raises(BuildError, match=f"annotation alb.ingress.kubernetes.io/{KEY}"):
            _group({KEY: value})
    c, _ = ingress_world({"target-type": "instance", KEY: "9000"})
    with pytest.raises(BuildError, match="target control port is not supported for instance "
                                         "target target group"):
        build(c)


def test_the_agent_gate_is_off_by_default_and_can_be_turned_on() -> None:
    # Acted on (the agent's pod webhooks, tests/integration/controller/webhooks/
    # test_target_control_agent.py), off by default as upstream.
    assert not parse_config(["--cluster-name", "c"]).gates.enabled("ALBTargetControlAgent")
    assert not parse_config(["--cluster-name", "c", "--feature-gates",
                             "ALBTargetControlAgent=false"]).gates.enabled(
        "ALBTargetControlAgent")
    assert parse_config(["--cluster-name", "c", "--feature-gates",
                         "ALBTargetControlAgent=true"]).gates.enabled("ALBTargetControlAgent")


def test_a_target_group_without_the_port_keeps_its_canonical_json() -> None:
    # Every stored checkpoint of a stack without the key stays valid after an upgrade.
    plain = TargetGroup(name="a", protocol="HTTP", port=80, target_type="ip")
    assert "target_control_port" not in plain.model_dump(mode="json")
    with_port = plain.model_copy(update={"target_control_port": 9000})
    assert with_port.model_dump(mode="json")["target_control_port"] == 9000
