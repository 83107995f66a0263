"""`aiolbc run` flags: upstream names and defaults, and one clear message per bad value."""

from __future__ import annotations

import argparse
import ast
import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import app, main
from controller.apis import TARGETGROUPBINDINGS
from controller.app import aws_settings, ingress_settings, manager_options
from controller.aws import DEFAULT_THROTTLE
from controller.config import ConfigError, ControllerConfig, parse_config
from controller.ingress import IngressConfig
from runtime import flags
from runtime.flagvalues import MAX_DURATION, parse_duration


def test_defaults_match_upstream() -> None:
    cfg = parse_config(["--cluster-name", "prod"])
    assert cfg.cluster.name == "prod"
    assert cfg.ingress.ingress_class == "alb"
    assert cfg.service.load_balancer_class == "service.k8s.aws/nlb"
    assert cfg.runtime.leader_election_id == "aws-load-balancer-controller-leader"
    assert cfg.runtime.leader_election is True
    assert cfg.metrics.bind_addr == ":8080"
    assert cfg.metrics.health_probe_bind_addr == ":61779"
    assert cfg.aws.api_throttle == DEFAULT_THROTTLE
    assert cfg.runtime.sync_period == 36000.0
    assert cfg.targetgroupbinding.max_exponential_backoff_delay == 1000.0
    assert cfg.ingress.max_concurrent_reconciles == 3
    assert cfg.aws.max_retries == 10
    assert cfg.defaults.ssl_policy == "ELBSecurityPolicy-2016-08"
    assert (cfg.runtime.lease_duration, cfg.runtime.renew_deadline,
            cfg.runtime.retry_period) == (15.0, 10.0, 2.0)
    # pkg/config/controller_config.go: the backend group on, its rules for user groups off.
    assert (cfg.networking.enabled, cfg.networking.group_id,
            cfg.networking.manage_rules_default,
            cfg.networking.disable_restricted_rules, cfg.networking.eni_security_group_tags) == (
        True, "", False, False, {})


def test_security_group_flags_reach_the_controllers() -> None:
    cfg = parse_config([
        "--cluster-name", "c", "--aws-vpc-id", "vpc-1", "--backend-security-group", "sg-0b",
        "--enable-manage-backend-security-group-rules", "--disable-restricted-sg-rules=true",
        "--service-target-eni-security-group-tags", "team=web,aws:eks:cluster-name=c"])
    backend = cfg.networking
    assert (backend.enabled, backend.group_id, backend.manage_rules_default,
            backend.restricted_rules) == (True, "sg-0b", True, False)
    assert app.service_settings(cfg, region="us-west-2").backend_sg == backend
    assert app.ingress_settings(cfg, region="us-west-2").backend_sg == backend
    networking = app.targetgroupbinding_settings(cfg).networking
    assert networking is not None
    assert (networking.cluster.name, networking.cluster.vpc_id,
            networking.backend.restricted_rules) == ("c", "vpc-1", False)
    assert dict(networking.backend.eni_security_group_tags) == {"team": "web",
                                                                "aws:eks:cluster-name": "c"}


def test_values_are_parsed() -> None:
    cfg = parse_config([
        "--cluster-name", "c", "--sync-period", "1h30m", "--metrics-bind-addr", "0",
        "--health-probe-bind-addr", "127.0.0.1:9000", "--default-tags", "team=a, env=prod",
        "--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*=5:10",
        "--enable-leader-election", "false", "--service-max-concurrent-reconciles", "7",
        "--aws-api-endpoints", "elbv2=http://127.0.0.1:5000",
    ])
    assert cfg.runtime.sync_period == 5400.0
    assert cfg.metrics.bind_addr == "0"
    assert cfg.metrics.health_probe_bind_addr == "127.0.0.1:9000"
    assert cfg.defaults.tags == {"team": "a", "env": "prod"}
    assert cfg.runtime.leader_election is False
    assert cfg.service.max_concurrent_reconciles == 7
    assert cfg.aws.api_endpoints == {"elbv2": "http://127.0.0.1:5000"}
    assert cfg.aws.api_throttle != DEFAULT_THROTTLE


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sync-period", "ten hours"], "--sync-period: invalid duration"),
        (["--enable-leader-election", "maybe"], "--enable-leader-election: expected true or false"),
        (["--metrics-bind-addr", "localhost"], "--metrics-bind-addr: invalid bind address"),
        (["--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*=ten:40"],
         "invalid --aws-api-throttle entry"),
        (["--aws-api-endpoints", "elbv2"], "invalid --aws-api-endpoints entry 'elbv2'"),
        (["--default-tags", "novalue"], "--default-tags: expected key=value"),
        (["--ingress-max-concurrent-reconciles", "0"], "--ingress-max-concurrent-reconciles"),
        (["--default-target-type", "pod"], "--default-target-type"),
        (["--ingress-group-namespaces", "all"], "--ingress-group-namespaces: Input should be"),
        (["--checkpoint-verify-qps", "-1"], "--checkpoint-verify-qps"),
        (["--checkpoint-verify-aws-qps", "-1"], "--checkpoint-verify-aws-qps"),
        (["--checkpoint-verify-aws-qps", "nan"], "--checkpoint-verify-aws-qps"),
        (["--checkpoint-verify-aws-burst", "0"], "--checkpoint-verify-aws-burst"),
        (["--checkpoint-verify-qps", "inf"], "--checkpoint-verify-qps: Input should be a finite"),
        (["--checkpoint-verify-qps", "nan"], "--checkpoint-verify-qps: Input should be a finite"),
        (["--checkpoint-verify-aws-qps", "inf"], "--checkpoint-verify-aws-qps: Input should be"),
        (["--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*=1e999:1"],
         "--aws-api-throttle: throttle rule"),
        (["--sync-period", "99999999999999999999h"],
         "--sync-period: duration '99999999999999999999h' is longer than the maximum, "
         "2562047h47m16.854775807s"),
        (["--sync-period", "2562048h"], "--sync-period: duration '2562048h' is longer"),
        (["--checkpoint-max-wait=-1m"], "--checkpoint-max-wait: negative duration '-1m'"),
        (["--sync-period", "0"], "--sync-period: Input should be greater than 0"),
        (["--sync-period", "-"], "--sync-period: invalid duration"),
        (["--api-server-startup-timeout=-1s"], "--api-server-startup-timeout: negative"),
        (["--leader-election-renew-deadline", "15s"],
         "--leader-election-lease-duration: 15s must be greater than "
         "--leader-election-renew-deadline (15s)"),
        (["--leader-election-retry-period", "8.5s"],
         "--leader-election-renew-deadline: 10s must be greater than "
         "--leader-election-retry-period x 1.2 (10.2s)"),
        (["--default-tags", "aws:x=1"], "--default-tags: tag key 'aws:x' starts with 'aws:'"),
        (["--default-tags", "Aws:x=1"], "--default-tags: tag key 'Aws:x' starts with 'aws:'"),
        (["--default-tags", "elbv2.k8s.aws/resource=x"],
         "--default-tags: tag key 'elbv2.k8s.aws/resource' is a tracking tag"),
        (["--default-tags", "service.k8s.aws/stack=x"], "--default-tags: tag key 'service.k8s"),
        (["--default-tags", "k" * 129 + "=v"], "--default-tags: tag key 'kkk"),
        (["--default-tags", "k=" + "v" * 257], "--default-tags: the value of tag 'k' is 257"),
        (["--default-tags", "team=a&b"], "--default-tags: the value of tag 'team' has characters"),
        (["--default-tags", "te!am=a"], "--default-tags: tag key 'te!am' has characters"),
        (["--default-tags", ",".join(f"k{i}=v" for i in range(48))],
         "--default-tags: 48 tags given; at most 47 fit beside the 3 tracking tags"),
        (["--external-managed-tags", "ingress.k8s.aws/resource"],
         "--external-managed-tags: tag key 'ingress.k8s.aws/resource' is a tracking tag"),
        (["--external-managed-tags", "aws:cloudformation:stack-name"],
         "--external-managed-tags: tag key 'aws:cloudformation:stack-name' starts with"),
        (["--external-managed-tags", "team", "--default-tags", "team=a"],
         "--external-managed-tags: tag key 'team' is also in --default-tags"),
        (["--cluster-name", "c" * 101], "--cluster-name: 'ccc"),
        (["--cluster-name", "_prod"], "--cluster-name: '_prod' may contain only"),
        (["--cluster-name", "prod eu"], "--cluster-name: 'prod eu' may contain only"),
        (["--watch-namespace", "Team"], "--watch-namespace: 'Team' is not a lowercase RFC 1123"),
        (["--watch-namespace", "a" * 64], "--watch-namespace: 'aaa"),
        (["--watch-namespace", "shop,Team"], "--watch-namespace: 'Team' is not a lowercase"),
        (["--namespace-selector", "team=a b"], "--namespace-selector: 'team=a b' is not a "
         "label selector"),
        (["--namespace-selector", "team in (a"], "--namespace-selector: 'team in (a' is not"),
        (["--namespace-selector", "Team/x=y"], "--namespace-selector: 'Team/x=y' is not"),
        (["--leader-election-namespace", "kube_system"], "--leader-election-namespace: "),
        (["--leader-election-id", "Leader"], "--leader-election-id: 'Leader' is not"),
        (["--ingress-class", "alb_"], "--ingress-class: 'alb_' is not a lowercase RFC 1123"),
        (["--load-balancer-class", "service.k8s.aws/"], "--load-balancer-class: "),
        (["--load-balancer-class", "Example.com/nlb"], "--load-balancer-class: the prefix"),
        (["--load-balancer-class", "example.com/n" + "l" * 63], "--load-balancer-class: the"),
        (["--aws-region", "us-west"], "--aws-region: 'us-west' is not an AWS region name"),
        (["--aws-region", "US-WEST-2"], "--aws-region: 'US-WEST-2' is not"),
        (["--metrics-bind-addr", ":9000", "--health-probe-bind-addr", "127.0.0.1:9000"],
         "--health-probe-bind-addr: '127.0.0.1:9000' uses the same port as --metrics-bind-addr"),
        (["--metrics-bind-addr", "0.0.0.0:9000", "--health-probe-bind-addr", ":9000"],
         "--health-probe-bind-addr: ':9000' uses the same port"),
        (["--metrics-bind-addr", "[::1]:9000", "--health-probe-bind-addr", "[::1]:9000"],
         "--health-probe-bind-addr"),
        (["--ingress-max-concurrent-reconciles", "100000000000000000000"],
         "--ingress-max-concurrent-reconciles: Input should be less than or equal to 1000"),
        (["--aws-max-retries", "1000"], "--aws-max-retries"),
        (["--metrics-secure", "sometimes"], "--metrics-secure: expected true or false"),
        (["--metrics-cert-dir", "/nonexistent/certs"],
         "--metrics-cert-dir: /nonexistent/certs does not exist"),
        (["--backend-security-group", "my-group"],
         "--backend-security-group: 'my-group' is not a security group ID"),
        (["--backend-security-group", "sg-0123", "--enable-backend-security-group", "false"],
         "--backend-security-group: set, but --enable-backend-security-group is false"),
        (["--disable-restricted-sg-rules", "maybe"],
         "--disable-restricted-sg-rules: expected true or false"),
        (["--service-target-eni-security-group-tags", "team"],
         "--service-target-eni-security-group-tags: expected key=value"),
    ],
)
def test_bad_values_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["--cluster-name", "c", *argv])
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_cluster_name_is_mandatory() -> None:
    with pytest.raises(SystemExit):
        parse_config([])


@pytest.mark.parametrize(("text", "seconds"), [
    ("15s", 15.0), ("16m40s", 1000.0), ("10h", 36000.0), ("300ms", 0.3), ("1.5s", 1.5),
    ("2", 2.0), ("1h0m0s", 3600.0),
])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@given(st.text(max_size=12))
def test_duration_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_duration(text) >= 0


def test_the_verification_budget_reaches_the_aws_pool_settings() -> None:
    base = ["--cluster-name", "c", "--aws-region", "us-west-2"]
    settings = aws_settings(parse_config(base))
    assert (settings.verify_calls_qps, settings.verify_calls_burst) == (5.0, 10)
    settings = aws_settings(parse_config([*base, "--checkpoint-verify-aws-qps", "2.5",
                                          "--checkpoint-verify-aws-burst", "3"]))
    assert (settings.verify_calls_qps, settings.verify_calls_burst) == (2.5, 3)
    # 0 turns the budget off; so do checkpoints off (no lane to pace).
    assert aws_settings(parse_config([*base, "--checkpoint-verify-aws-qps", "0"])
                        ).verify_calls_qps is None
    assert aws_settings(parse_config([*base, "--enable-checkpoints=false"])
                        ).verify_calls_qps is None


@pytest.mark.parametrize("argv", [
    # AWS allows letters of any script, spaces and its punctuation in tags.
    ["--default-tags", "Équipe=données,cost center=42,a.b:c/d=e+f-g@h"],
    ["--default-tags", ",".join(f"k{i}=v" for i in range(47))],  # 47 + 3 tracking = 50
    ["--default-tags", "k" * 128 + "=" + "v" * 256, "--external-managed-tags", "owner"],
    ["--default-tags", "empty="],  # values may be empty
    # Self-managed clusters are named by DNS names; EKS names allow '_'.
    ["--cluster-name", "k8s.example.com"], ["--cluster-name", "prod_eu-1"],
    ["--cluster-name", "c" * 100],
    ["--aws-region", "us-gov-west-1"], ["--aws-region", "cn-north-1"],
    ["--aws-region", "us-isob-east-1"], ["--aws-region", "eusc-de-east-1"],
    ["--ingress-class", ""], ["--ingress-class", "internal.alb"],
    ["--load-balancer-class", "nlb"], ["--load-balancer-class", "example.com/internal-vip"],
    ["--watch-namespace", ""], ["--watch-namespace", "team-a"],
    ["--watch-namespace", "team-a,team-b"], ["--namespace-selector", ""],
    ["--namespace-selector", "team=shop,env!=test,tier in (a, b),!legacy,stage"],
    # Timings that only matter with leader election may be anything without it.
    ["--enable-leader-election=false", "--leader-election-renew-deadline", "1h"],
    ["--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s",
     "--leader-election-retry-period", "2s"],
    ["--sync-period", "2562047h47m16s"],  # within Go's maximum
    ["--api-server-startup-timeout", "0s"],
    # Different hosts may share a port; port 0 is always a fresh one.
    ["--metrics-bind-addr", "127.0.0.1:9000", "--health-probe-bind-addr", "127.0.0.2:9000"],
    ["--metrics-bind-addr", ":0", "--health-probe-bind-addr", ":0"],
    ["--metrics-bind-addr", "0", "--health-probe-bind-addr", ":8080"],
])
def test_values_aws_and_kubernetes_accept_are_accepted(argv: list[str]) -> None:
    parse_config(["--cluster-name", "c", *argv])


def test_secure_metrics_flags() -> None:
    assert parse_config(["--cluster-name", "c"]).metrics.secure is False
    assert parse_config(["--cluster-name", "c", "--metrics-secure"]).metrics.secure is True
    assert parse_config(["--cluster-name", "c", "--metrics-secure=false"]).metrics.secure is False
    cfg = parse_config(["--cluster-name", "c"])
    assert (cfg.metrics.cert_dir, cfg.runtime.api_server_startup_timeout) == (None, 30.0)


def test_a_certificate_directory_needs_both_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--metrics-cert-dir: .* has no tls\.crt$"):
        parse_config(["--cluster-name", "c", "--metrics-cert-dir", str(tmp_path)])
    (tmp_path / "tls.crt").write_text("x")
    with pytest.raises(ConfigError, match=r"^--metrics-cert-dir: .* has no tls\.key$"):
        parse_config(["--cluster-name", "c", "--metrics-cert-dir", str(tmp_path)])
    (tmp_path / "tls.key").write_text("x")
    # Whether they hold a usable certificate is found when the server is built.
    assert parse_config(["--cluster-name", "c", "--metrics-cert-dir", str(tmp_path)]
                        ).metrics.cert_dir == str(tmp_path)
    file = tmp_path / "tls.crt"
    with pytest.raises(ConfigError, match="is not a directory"):
        parse_config(["--cluster-name", "c", "--metrics-cert-dir", str(file)])


def test_the_new_flags_reach_the_manager_options() -> None:
    options = manager_options(parse_config([
        "--cluster-name", "c", "--metrics-secure", "--metrics-bind-addr", ":8443"]))
    assert (options.metrics_secure, options.metrics_bind_address) == (True, ":8443")
    assert options.metrics_cert_dir is None


def test_namespaces_and_the_controller_id_reach_the_manager_options() -> None:
    options = manager_options(parse_config([
        "--cluster-name", "c", "--watch-namespace", "shop,blog",
        "--namespace-selector", "team=web", "--controller-id", "internal"]))
    assert options.watch_namespaces == frozenset({"shop", "blog"})
    assert options.namespace_selector is not None
    assert options.namespace_selector.matches({"metadata": {"labels": {"team": "web"}}})
    # A second controller's Lease is its own unless named.
    assert options.leader_election_id == "aws-load-balancer-controller-leader-internal"
    assert options.informer_selectors == {
        TARGETGROUPBINDINGS: "elbv2.k8s.aws/controller=internal"}
    named = manager_options(parse_config([
        "--cluster-name", "c", "--controller-id", "internal", "--leader-election-id", "x"]))
    assert named.leader_election_id == "x"
    default = manager_options(parse_config(["--cluster-name", "c"]))
    assert default.leader_election_id == "aws-load-balancer-controller-leader"
    assert (default.watch_namespaces, default.namespace_selector) == (frozenset(), None)
    assert default.informer_selectors == {TARGETGROUPBINDINGS: "!elbv2.k8s.aws/controller"}


def test_the_ingress_group_namespace_policy_reaches_the_ingress_controller() -> None:
    """By default a group named in annotations stays within one namespace (`params`)."""
    default = parse_config(["--cluster-name", "c"])
    assert ingress_settings(default, region="us-west-2").config.group_namespaces == "params"
    upstream = parse_config(["--cluster-name", "c", "--ingress-group-namespaces", "any"])
    assert ingress_settings(upstream, region="us-west-2").config.group_namespaces == "any"


@pytest.mark.parametrize(("text", "seconds"), [
    ("-0s", 0.0), ("+15s", 15.0), ("2562047h47m16.854775807s", MAX_DURATION),
])
def test_go_duration_signs_and_limit(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_every_message_is_one_line_even_for_values_with_newlines() -> None:
    for argv in (["--watch-namespace", "a\nb"], ["--default-tags", "a=b\nc"],
                 ["--cluster-name", "x\ny"], ["--ingress-class", "a\n"]):
        with pytest.raises(ConfigError) as info:
            parse_config(["--cluster-name", "c", *argv])
        assert "\n" not in str(info.value), argv


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in main.build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices["run"]
    return parser


def test_each_declared_flag_is_in_the_parser_its_help_shows_the_default_and_it_loads() -> None:
    """A flag is one declaration on a section's field: `aiolbc run` parses it, `--help` shows
    its default as the user would type it, and that text loads as the default."""
    helps = {a.option_strings[0]: a.help or "" for a in _run_parser()._actions}
    defaults = flags.defaults_of(ControllerConfig)
    baseline = parse_config(["--cluster-name", "c"])
    declared = flags.flags_of(ControllerConfig)
    assert len({f.name for f in declared}) == len(declared)
    for flag in declared:
        assert flag.name in helps, flag.name
        default = defaults[flag.name]
        shown = None if default is None or default is flags.REQUIRED else flag.show(default)
        if not shown:
            continue
        assert helps[flag.name].endswith(f"(default: {shown})"), flag.name
        assert parse_config(["--cluster-name", "c", f"{flag.name}={shown}"]) == baseline


def test_an_ingress_flag_is_one_field_of_the_ingress_section() -> None:
    cfg = parse_config(["--cluster-name", "c", "--ingress-max-concurrent-reconciles", "5"])
    assert cfg.ingress == IngressConfig(max_concurrent_reconciles=5)
    settings = ingress_settings(cfg, region="us-west-2")
    assert settings.config is cfg.ingress
    assert settings.config.workers.max_concurrent_reconciles == 5
    assert "how many Ingress groups are reconciled at once (default: 3)" in " ".join(
        _run_parser().format_help().split())


def test_only_the_process_imports_the_configuration() -> None:
    """Controllers get their sections through their settings: only the processes — app.py and
    main.py for `aiolbc run`, the pre-flight scan for `aiolbc check` (it builds the configuration
    `aiolbc run` would have) — and the configuration's own modules import `controller.config`."""
    root = Path(__file__).resolve().parents[3]
    importers = set()
    for path in (root / "controller").rglob("*.py"):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        if module.startswith("controller.config"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])
            if any(n == "controller.config" or n.startswith("controller.config.")
                   for n in names):
                importers.add(module)
    assert importers == {"controller.app", "controller.main", "controller.preflight.scan",
                         "controller.preflight.upstream"}


def test_upstreams_other_flags_have_upstreams_defaults() -> None:
    """pkg/config/*.go and pkg/inject/quic at v3.5.0."""
    cfg = parse_config(["--cluster-name", "c"])
    assert cfg.ingress.disable_class_annotation is False
    assert cfg.ingress.disable_group_name_annotation is False
    assert cfg.ingress.required_secrets_label == ""
    assert cfg.runtime.kube_ca_pem_filepath is None
    assert cfg.targetgroupbinding.max_targets_per_target_group == 0
    assert cfg.targetgroupbinding.enable_endpoint_slices is True
    unbuilt = cfg.unbuilt
    assert (unbuilt.gateway_class_max_concurrent_reconciles,
            unbuilt.alb_gateway_max_concurrent_reconciles,
            unbuilt.nlb_gateway_max_concurrent_reconciles,
            unbuilt.globalaccelerator_max_concurrent_reconciles) == (3, 3, 3, 1)
    assert unbuilt.globalaccelerator_max_exponential_backoff_delay == 1000.0
    assert cfg.stabilization.interval == 120.0
    assert cfg.targetgroupbinding.quic_environment_variable_name == "AWS_LBC_QUIC_SERVER_ID"
    given = parse_config([
        "--cluster-name", "c", "--disable-ingress-class-annotation",
        "--disable-ingress-group-name-annotation=true", "--required-secrets-label", "a.io/b=c",
        "--max-targets-per-target-group", "500", "--enable-endpoint-slices",
        "--globalaccelerator-max-concurrent-reconciles", "2",
        "--lb-stabilization-monitor-interval", "1m", "--quic-environment-variable-name", "SID"])
    assert given.ingress.disable_class_annotation
    assert given.ingress.disable_group_name_annotation
    assert given.ingress.required_secrets_label == "a.io/b=c"
    assert given.targetgroupbinding.max_targets_per_target_group == 500
    assert given.unbuilt.globalaccelerator_max_concurrent_reconciles == 2
    assert given.stabilization.interval == 60.0
    assert given.targetgroupbinding.quic_environment_variable_name == "SID"


@pytest.mark.parametrize(("argv", "message"), [
    (["--required-secrets-label", "novalue"],
     "--required-secrets-label: 'novalue' must be in key=value format"),
    (["--required-secrets-label", "k="], "--required-secrets-label: 'k=' must be in key=value"),
    (["--required-secrets-label", "k=a b"], "--required-secrets-label: 'a b' is not a label"),
    (["--enable-endpoint-slices=false"],
     "--enable-endpoint-slices: false is not supported: aiolbc reads ip targets from "
     "EndpointSlices only"),
    (["--max-targets-per-target-group=-1"], "--max-targets-per-target-group: Input should be"),
    (["--kube-ca-pem-filepath", "/nonexistent/ca.pem"],
     "--kube-ca-pem-filepath: /nonexistent/ca.pem is not a file"),
    (["--quic-environment-variable-name", "1X"],
     "--quic-environment-variable-name: '1X' is not an environment variable name"),
    (["--globalaccelerator-max-concurrent-reconciles", "0"],
     "--globalaccelerator-max-concurrent-reconciles: Input should be greater"),
    (["--aws-api-endpoints", "elbv3=http://h"], "'elbv3' is not a service name the controller"),
])
def test_upstreams_other_flags_refuse_what_cannot_work(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["--cluster-name", "c", *argv])
    assert message in str(info.value)
    assert "\n" not in str(info.value)
