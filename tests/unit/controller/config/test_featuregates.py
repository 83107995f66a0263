"""`--feature-gates`: upstream v3.5.0's gates and defaults, each either acted on or pinned to
what aiolbc does today, refused otherwise, and read by the controllers through their settings."""

from __future__ import annotations

import contextlib
import io

import pytest

from controller import app, main
from controller.config import ConfigError, parse_config
from controller.config.featuregates import GATES

# pkg/config/feature_gates.go at v3.5.0: name -> default.
UPSTREAM = {
    "ListenerRulesTagging": True, "WeightedTargetGroups": True,
    "ServiceTypeLoadBalancerOnly": False, "EndpointsFailOpen": True,
    "EnableServiceController": True, "EnableIPTargetType": True, "EnableRGTAPI": False,
    "SubnetsClusterTagCheck": True, "NLBHealthCheckAdvancedConfig": True,
    "NLBSecurityGroup": True, "ALBSingleSubnet": False, "SubnetDiscoveryByReachability": True,
    "LBCapacityReservation": True, "NLBGatewayAPI": True, "ALBGatewayAPI": True,
    "GlobalAcceleratorController": False, "EnableTCPUDPListener": False,
    "EnhancedDefaultBehavior": False, "EnableDefaultTagsLowPriority": False,
    "ALBTargetControlAgent": False, "GatewayListenerSet": True,
    "EnableCertificateManagement": False, "IngressPlanAnnotation": False,
}
# What aiolbc does today where that is not upstream's default (the parity reference, e2).
DIFFERENT = {"NLBGatewayAPI": False,
             "ALBGatewayAPI": False, "GatewayListenerSet": False}


def test_upstreams_names_and_defaults() -> None:
    assert {gate.name: gate.default for gate in GATES.declared} == UPSTREAM


def test_each_gate_is_acted_on_or_pinned_to_what_aiolbc_does() -> None:
    states = parse_config(["--cluster-name", "c"]).gates.states
    assert dict(states) == {**UPSTREAM, **DIFFERENT}
    assert all(gate.acted_on or gate.pinned == states[gate.name] for gate in GATES.declared)


@pytest.mark.parametrize("state", [True, False])
def test_the_capacity_reservation_gate_is_acted_on_in_both_states(state: bool) -> None:
    cfg = parse_config(["--cluster-name", "c", "--feature-gates",
                        f"LBCapacityReservation={str(state).lower()}"])
    assert cfg.gates.enabled("LBCapacityReservation") is state


def test_asking_for_what_aiolbc_does_is_accepted() -> None:
    cfg = parse_config(["--cluster-name", "c", "--feature-gates",
                        "ListenerRulesTagging=true,EndpointsFailOpen=false,"
                        "ServiceTypeLoadBalancerOnly=TRUE,EnableRGTAPI=0"])
    assert cfg.gates.enabled("ServiceTypeLoadBalancerOnly")
    assert not cfg.gates.enabled("EndpointsFailOpen")


@pytest.mark.parametrize(("value", "message"), [
    ("Nope=true", "--feature-gates: unknown feature gate 'Nope'"),
    ("EnableRGTAPI=maybe", "--feature-gates: feature gate EnableRGTAPI: expected true or false, "
                           "got 'maybe'"),
    ("EnableRGTAPI", "--feature-gates: expected Name=true|false, got 'EnableRGTAPI'"),
    ("NLBGatewayAPI=true", "--feature-gates: feature gate NLBGatewayAPI: not supported yet; "
                           "aiolbc behaves as NLBGatewayAPI=false"),
])
def test_a_bad_gate_is_a_cli_error_naming_it(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["--cluster-name", "c", "--feature-gates", value])
    assert str(info.value) == message
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main.main(["run", "--cluster-name", "c", f"--feature-gates={value}"]) == 2
    assert err.getvalue() == f"aiolbc run: {message}\n"


def test_the_gates_reach_the_controllers_through_their_settings() -> None:
    cfg = parse_config(["--cluster-name", "c", "--aws-vpc-id", "vpc-1"])
    service = app.service_settings(cfg, region="us-west-2")
    ingress = app.ingress_settings(cfg, region="us-west-2")
    bindings = app.targetgroupbinding_settings(cfg, region="us-west-2")
    hooks = app.webhook_settings(cfg, region="us-west-2")
    assert hooks is not None
    for gates in (service.gates, service.model.gates, ingress.gates, ingress.builder().gates,
                  bindings.gates, hooks.gates):
        assert gates is cfg.gates
        assert gates.enabled("EnableServiceController")


def test_the_help_lists_every_gate_with_its_default() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main.main(["run", "--help"])
    table = out.getvalue().split("\nfeature gates (--feature-gates=", 1)[1]
    listed = {line.split()[0] for line in table.splitlines() if line.startswith("  ")}
    assert listed == {f"{name}={str(default).lower()}" for name, default in UPSTREAM.items()}
