"""Upstream's container arguments against aiolbc's flag declarations."""

from __future__ import annotations

from typing import Any

from controller.preflight.upstream import config_of, container_args, read_flags


def deployment(*args: str, command: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": "lbc", "namespace": "kube-system"}, "spec": {"template": {
        "spec": {"containers": [
            {"name": "sidecar", "args": ["--nope"]},
            {"name": "aws-load-balancer-controller", "command": list(command),
             "args": [*args, 7]}]}}}}


def test_the_controller_container_is_read_in_gos_syntax() -> None:
    dep = deployment("-cluster-name", "prod", "--enable-leader-election",
                     "--ingress-class=alb", command=("/controller", "--aws-region=eu-west-1"))
    assert container_args(dep) == ["--aws-region=eu-west-1", "-cluster-name", "prod",
                                   "--enable-leader-election", "--ingress-class=alb"]
    found = read_flags(dep)
    assert dict(found.texts) == {"--aws-region": "eu-west-1", "--cluster-name": "prod",
                                 "--enable-leader-election": "true", "--ingress-class": "alb"}
    config, problem = config_of(found.texts)
    assert problem is None
    assert config.cluster.name == "prod"
    assert config.ingress.ingress_class == "alb"


def test_each_flag_aiolbc_would_not_take_is_one_line() -> None:
    found = read_flags(deployment(
        "--cluster-name=prod", "--made-up-flag", "x", "--sync-period=soon",
        "--feature-gates=GlobalAcceleratorController=true,NoSuchGate=true,"
        "EnableIPTargetType=false"))
    lines = {f.subject: f for f in found.findings if f.category == "not-honoured"}
    assert set(lines) == {"--made-up-flag", "--sync-period",
                          "--feature-gates GlobalAcceleratorController=true",
                          "--feature-gates NoSuchGate=true"}
    # What aiolbc accepts is kept for the scan's configuration.
    assert found.texts["--feature-gates"] == "EnableIPTargetType=false"
    config, _ = config_of(found.texts)
    assert config.gates.enabled("EnableIPTargetType") is False


def test_pinned_gates_upstream_runs_otherwise_are_findings_unless_given() -> None:
    default = {f.subject: f.category for f in read_flags(deployment("--cluster-name=p")).findings}
    # Acted on in both states: upstream's default is what aiolbc does too.
    assert "--feature-gates SubnetDiscoveryByReachability" not in default
    assert default["--feature-gates NLBGatewayAPI"] == "note"
    given = read_flags(deployment("--cluster-name=p", "--feature-gates=NLBGatewayAPI=false"))
    assert "--feature-gates NLBGatewayAPI" not in {f.subject for f in given.findings}


def test_a_rule_across_flags_falls_back_to_the_defaults() -> None:
    config, problem = config_of({"--cluster-name": "prod", "--backend-security-group": "sg-1",
                                 "--enable-backend-security-group": "false"})
    assert problem is not None
    assert config.cluster.name == "prod"
