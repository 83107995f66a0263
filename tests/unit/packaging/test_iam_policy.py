"""`manifests/iam-policy.json` grants exactly the AWS actions aiolbc calls.

The set is re-derived from the source on every run, so the policy cannot drift: every
`<x>.call(...)` / `<x>.paginate(...)` under `controller/` (except the local stand-ins in
`controller/standins/`) is read with `ast`. Two call shapes exist:
- the client pool: `pool.call("elbv2", "DescribeTargetGroups", ...)` (service, operation);
- the `Caller`: `calls.call("CreateRule", ..., service="ec2")` (operation first, the service a
  keyword defaulting to `Caller`'s own default).
An operation passed through a variable is followed to the literal arguments of the function
that received it (same module). Every (service, operation) must exist in botocore's model, so a
typo or an unrelated `.call()` fails here with its file and line instead of being skipped."""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from controller.aws.caller import Caller
from controller.aws.loader import TRIMMED_OPERATIONS
from controller.deploy import CLUSTER_TAG
from tests.support.paths import REPO

SOURCE = REPO / "controller"
EXCLUDED = (SOURCE / "standins",)
POLICY = REPO / "manifests" / "iam-policy.json"

# botocore client name → IAM action prefix (they differ for ELBv2 and the tagging API).
IAM_PREFIX = {
    "elbv2": "elasticloadbalancing",
    "ec2": "ec2",
    "acm": "acm",
    "wafv2": "wafv2",
    "waf-regional": "waf-regional",
    "shield": "shield",
    "resourcegroupstaggingapi": "tag",
    "iam": "iam",
    "cognito-idp": "cognito-idp",
    "route53": "route53",
    "acm-pca": "acm-pca",
    "sts": "sts",
}

# Actions the code calls that the shipped policy leaves out on purpose, as upstream's does:
# sts:AssumeRole serves only TargetGroupBindings with `iamRoleArnToAssume`, and is granted by
# whoever sets those up, scoped to their roles (docs/targetgroupbindings.md says how).
OPT_IN = {"sts:AssumeRole"}

# Actions AWS authorizes on the caller's behalf without a call of that name:
# the first CreateLoadBalancer in an account creates the ELB service-linked role; an
# authenticate-cognito action is checked with the caller's DescribeUserPoolClient (upstream's
# policy grants it); associating a web ACL with (or removing it from) an ALB needs
# elasticloadbalancing:SetWebAcl on it.
_COGNITO = {"cognito-idp:DescribeUserPoolClient"}
_SET_WEB_ACL = {"elasticloadbalancing:SetWebAcl"}
# A load balancer given an IPAM pool or a customer-owned IPv4 pool (CreateLoadBalancer,
# ModifyIpPools) has the pool looked up with the caller's EC2 permissions (upstream's policy
# grants these three).
_POOLS = {"ec2:DescribeIpamPools", "ec2:DescribeCoipPools", "ec2:GetCoipPoolUsage"}
IMPLIED_BY = {
    "elasticloadbalancing:CreateLoadBalancer": {"iam:CreateServiceLinkedRole", *_POOLS},
    "elasticloadbalancing:ModifyIpPools": {"ec2:DescribeIpamPools"},
    "elasticloadbalancing:CreateListener": _COGNITO,
    "elasticloadbalancing:ModifyListener": _COGNITO,
    "elasticloadbalancing:CreateRule": _COGNITO,
    "elasticloadbalancing:ModifyRule": _COGNITO,
    "wafv2:AssociateWebACL": _SET_WEB_ACL,
    "wafv2:DisassociateWebACL": _SET_WEB_ACL,
    "waf-regional:AssociateWebACL": _SET_WEB_ACL,
    "waf-regional:DisassociateWebACL": _SET_WEB_ACL,
    # A certificate requested from an ACM Private CA is issued with the caller's permission on
    # the CA (upstream's iam_policy_acm_certs.json grants these three).
    "acm:RequestCertificate": {"acm-pca:IssueCertificate", "acm-pca:GetCertificate",
                               "acm-pca:ListPermissions"},
}

_OPERATION = re.compile(r"[A-Z][A-Za-z0-9]+")
_CALLS_DEFAULT_SERVICE = str(inspect.signature(Caller.call).parameters["service"].default)


@dataclass(frozen=True)
class Site:
    path: Path
    line: int

    def __str__(self) -> str:
        shown = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{shown}:{self.line}"


class UnresolvedCall(Exception):
    pass


def _const(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(), filename=str(path))
        self.functions = {f.name: f for f in ast.walk(self.tree)
                          if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.parents = {child: parent for parent in ast.walk(self.tree)
                        for child in ast.iter_child_nodes(parent)}

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return None

    def literal_arguments(self, call: ast.Call, name: str) -> set[str]:
        """The literal values that calls of the function enclosing `call` pass as `name`."""
        function = self.enclosing_function(call)
        site = Site(self.path, call.lineno)
        if function is None:
            raise UnresolvedCall(f"{site}: operation {name!r} is not a literal")
        params = [a.arg for a in function.args.posonlyargs + function.args.args]
        if name not in params:
            raise UnresolvedCall(f"{site}: operation {name!r} is not a literal or a parameter")
        index = params.index(name)
        values: set[str] = set()
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == function.name):
                continue
            arg = node.args[index] if index < len(node.args) else _keyword(node, name)
            if isinstance(arg, ast.Name) and self.enclosing_function(node) is function:
                continue  # the function's own recursion passes the parameter on
            value = _const(arg)
            if value is None:
                raise UnresolvedCall(f"{Site(self.path, node.lineno)}: {function.name}() gets "
                                     f"a non-literal {name!r}")
            values.add(value)
        if not values:
            raise UnresolvedCall(f"{site}: no literal {name!r} reaches {function.name}()")
        return values


def _forwards(module: _Module, call: ast.Call) -> bool:
    """A wrapper's `call`/`paginate` handing its own parameters on (`Caller.call` to the pool):
    its callers are where the operations are named."""
    function = module.enclosing_function(call)
    if function is None or function.name not in ("call", "paginate"):
        return False
    args = function.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    return all(isinstance(a, ast.Name) and a.id in params for a in call.args)


def _aws_calls(module: _Module) -> Iterator[tuple[str, str, Site]]:
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("call", "paginate") and node.args):
            continue
        site = Site(module.path, node.lineno)
        if _forwards(module, node):
            continue
        first = node.args[0]
        second = node.args[1] if len(node.args) > 1 else None
        if _const(first) is not None and _const(second) is not None:
            # pool.call(service, operation, ...)
            yield str(_const(first)), str(_const(second)), site
            continue
        service = _const(_keyword(node, "service"))
        if _keyword(node, "service") is not None and service is None:
            raise UnresolvedCall(f"{site}: service is not a literal")
        service = service or _CALLS_DEFAULT_SERVICE
        if _const(first) is not None:
            yield service, str(_const(first)), site
        elif isinstance(first, ast.Name):
            for operation in module.literal_arguments(node, first.id):
                yield service, operation, site
        else:
            raise UnresolvedCall(f"{site}: cannot tell which AWS operation this calls")


def called_operations() -> dict[tuple[str, str], list[Site]]:
    found: dict[tuple[str, str], list[Site]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if any(path.is_relative_to(excluded) for excluded in EXCLUDED):
            continue
        for service, operation, site in _aws_calls(_Module(path)):
            found.setdefault((service, operation), []).append(site)
    return found


def derived_actions() -> set[str]:
    session = botocore.session.get_session()
    actions: set[str] = set()
    for (service, operation), sites in called_operations().items():
        where = ", ".join(map(str, sites))
        assert service in IAM_PREFIX, f"{where}: no IAM prefix known for service {service!r}"
        model = session.get_service_model(service)
        assert operation in model.operation_names, \
            f"{where}: {service} has no operation {operation!r}"
        action = f"{IAM_PREFIX[service]}:{operation}"
        actions.add(action)
        actions |= IMPLIED_BY.get(action, set())
    return actions


def policy_actions(policy: dict[str, Any]) -> set[str]:
    actions: set[str] = set()
    for statement in policy["Statement"]:
        listed = statement["Action"]
        actions.update([listed] if isinstance(listed, str) else listed)
    return actions


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(POLICY.read_text())
    return loaded


# ---- the policy matches the code --------------------------------------------------------------

def test_policy_grants_exactly_the_actions_the_code_calls(policy: dict[str, Any]) -> None:
    derived = derived_actions()
    granted = policy_actions(policy)
    assert derived >= OPT_IN, "opt-in actions the code no longer calls"
    assert not OPT_IN & granted, "opt-in actions are granted by whoever opts in"
    derived -= OPT_IN
    assert sorted(derived - granted) == [], "called but not granted"
    assert sorted(granted - derived) == [], "granted but never called"


def test_trimmed_service_models_describe_exactly_the_operations_the_code_calls() -> None:
    """The client pool's models of trimmed services (controller/aws/loader.py) hold only the
    operations listed there: a call of another one would find no such method."""
    called: dict[str, set[str]] = {}
    for service, operation in called_operations():
        called.setdefault(service, set()).add(operation)
    for service, operations in TRIMMED_OPERATIONS.items():
        assert sorted(called.get(service, set()) - operations) == [], \
            f"{service}: called but trimmed away"
        assert sorted(operations - called.get(service, set())) == [], \
            f"{service}: kept but never called"


def test_the_derivation_sees_both_call_shapes() -> None:
    found = called_operations()
    # pool.call("elbv2", ...) in the demo's workload
    assert any(site.path.name == "workload.py" for site in found[("elbv2",
                                                                  "DescribeTargetHealth")])
    # calls.call("RegisterTargets", ...), the service by default, in the TargetGroupBinding
    # controller
    assert ("elbv2", "RegisterTargets") in found
    # calls.paginate("DescribeSubnets", service="ec2") in the deployer
    assert ("ec2", "DescribeSubnets") in found
    # calls.call("DescribeLoadBalancers", ...) where every lookup by key is sent
    assert any(site.path.name == "reader.py" for site in found[("elbv2",
                                                                "DescribeLoadBalancers")])


def test_derivation_rejects_what_it_cannot_resolve(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text("async def f(calls, op_name):\n    await calls.call(op_name())\n")
    with pytest.raises(UnresolvedCall, match=r"bad\.py:2"):
        list(_aws_calls(_Module(source)))
    source.write_text("async def g(calls, name):\n    await calls.call(name)\n\n"
                      "async def h(calls, x):\n    await g(calls, x)\n")
    with pytest.raises(UnresolvedCall, match="non-literal"):
        list(_aws_calls(_Module(source)))


def test_derivation_follows_literals_into_the_called_function(tmp_path: Path) -> None:
    source = tmp_path / "ok.py"
    source.write_text(
        "async def g(calls, name):\n    await calls.call(name, service='ec2')\n\n"
        "async def h(calls):\n    await g(calls, 'DescribeVpcs')\n"
        "    await calls.paginate('DescribeRules')\n"
        "    await pool.call('acm', 'ListCertificates')\n")
    found = {(s, o) for s, o, _ in _aws_calls(_Module(source))}
    assert found == {("ec2", "DescribeVpcs"), (_CALLS_DEFAULT_SERVICE, "DescribeRules"),
                     ("acm", "ListCertificates")}


# ---- the policy document itself ---------------------------------------------------------------

def test_policy_is_a_well_formed_identity_policy(policy: dict[str, Any]) -> None:
    assert policy["Version"] == "2012-10-17"
    sids = [s["Sid"] for s in policy["Statement"]]
    assert len(sids) == len(set(sids)), "duplicate Sid"
    seen: set[tuple[str, str, str]] = set()
    for statement in policy["Statement"]:
        assert re.fullmatch(r"[A-Za-z0-9]+", statement["Sid"])
        assert statement["Effect"] == "Allow"
        assert set(statement) <= {"Sid", "Effect", "Action", "Resource", "Condition"}
        actions = statement["Action"]
        assert isinstance(actions, list)
        assert actions
        assert actions == sorted(actions), statement["Sid"]
        for action in actions:
            prefix, _, name = action.partition(":")
            assert prefix in IAM_PREFIX.values(), action
            assert _OPERATION.fullmatch(name), f"{action}: no wildcards"
        resources = statement["Resource"]
        assert resources == "*" or all(r.startswith("arn:aws:") for r in resources)
        # An action may appear in several statements, for other resources or conditions
        # (AddTags at creation and on owned resources), never twice for the same grant.
        condition = json.dumps(statement.get("Condition"), sort_keys=True)
        for action in actions:
            for resource in [resources] if isinstance(resources, str) else resources:
                grant = (action, resource, condition)
                assert grant not in seen, f"{action} on {resource} granted twice"
                seen.add(grant)


def _statement(policy: dict[str, Any], action: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in policy["Statement"] if action in s["Action"])
    return found


def test_security_group_writes_are_limited_to_groups_the_controller_tags(
        policy: dict[str, Any]) -> None:
    """Upstream's scoping (docs/install/iam_policy.json): groups are created with the cluster
    tag and tagged only while being created or when they already carry it, never setting or
    removing it; only such groups are deleted; rules may be changed on any group (the targets'
    groups are the user's, the controller touches only the rules it labels)."""
    tag = f"aws:RequestTag/{CLUSTER_TAG}"
    owned = f"aws:ResourceTag/{CLUSTER_TAG}"
    groups = ["arn:aws:ec2:*:*:security-group/*"]
    create = _statement(policy, "ec2:CreateSecurityGroup")
    assert create["Condition"] == {"Null": {tag: "false"}}
    [delete] = _grants(policy, "ec2:DeleteSecurityGroup")
    assert delete["Condition"] == {"Null": {owned: "false"}}
    assert delete["Resource"] == groups
    [untag] = _grants(policy, "ec2:DeleteTags")
    tagging = _grants(policy, "ec2:CreateTags")
    assert len(tagging) == 2
    assert untag in tagging
    for statement in tagging:
        assert statement["Resource"] == groups
        condition = statement["Condition"]
        if statement is untag:
            assert condition == {"Null": {tag: "true", owned: "false"},
                                 "ForAllValues:StringNotEquals": {"aws:TagKeys": [CLUSTER_TAG]}}
        else:
            assert condition == {"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                                 "Null": {tag: "false"}}
    rules = _statement(policy, "ec2:AuthorizeSecurityGroupIngress")
    assert rules is _statement(policy, "ec2:RevokeSecurityGroupIngress")
    assert rules["Resource"] == groups


def _grants(policy: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in policy["Statement"] if action in s["Action"]]


_TG_AND_LB = ("targetgroup/", "loadbalancer/")
# Writes whose own scoping is checked elsewhere: creation (the request carries the cluster
# tag), tags (their own test), targets (any target group a binding may use, checked by the
# controller), listeners and rules (unscoped, as upstream).
_OTHER_WRITES = re.compile(r"Create(LoadBalancer|TargetGroup)|AddTags|RemoveTags|"
                           r"(Register|Deregister)Targets|.*(Listener|Rule).*")


def _changes_owned_resource(action: str) -> bool:
    """An ELB action that changes or deletes an existing load balancer or target group."""
    prefix, _, name = action.partition(":")
    return (prefix == "elasticloadbalancing"
            and not name.startswith(("Describe", "List", "Get"))
            and not _OTHER_WRITES.fullmatch(name))


def test_tags_of_load_balancers_and_target_groups_need_upstreams_conditions(
        policy: dict[str, Any]) -> None:
    """Upstream's scoping of AddTags/RemoveTags (docs/install/iam_policy.json): on load
    balancers and target groups only at their creation (the create call carries the cluster
    tag) or on resources that already carry it, never setting or removing it. Without it the
    controller's role could re-tag any load balancer or target group of the account, another
    cluster's included, and so make it its own."""
    tag = f"aws:RequestTag/{CLUSTER_TAG}"
    owned = f"aws:ResourceTag/{CLUSTER_TAG}"
    for action in ("elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"):
        on_tg_or_lb = [s for s in _grants(policy, action)
                       if s["Resource"] == "*" or any(
                           kind in r for r in s["Resource"] for kind in _TG_AND_LB)]
        assert on_tg_or_lb, action
        for statement in on_tg_or_lb:
            assert statement["Resource"] != "*", statement["Sid"]
            condition = statement["Condition"]
            at_creation = condition.get("StringEquals", {}).get(
                "elasticloadbalancing:CreateAction")
            if at_creation is not None:
                assert action == "elasticloadbalancing:AddTags"
                assert sorted(at_creation) == ["CreateLoadBalancer", "CreateTargetGroup"]
                assert condition["Null"] == {tag: "false"}
            else:
                assert condition["Null"] == {tag: "true", owned: "false"}, statement["Sid"]
                assert condition["ForAllValues:StringNotEquals"] == {
                    "aws:TagKeys": [CLUSTER_TAG]}
    # Listeners and rules keep upstream's unconditioned tagging (their creation tags them).
    listeners = [s for s in _grants(policy, "elasticloadbalancing:AddTags")
                 if all(r.split(":")[-1].startswith(("listener/", "listener-rule/"))
                        for r in s["Resource"])]
    assert len(listeners) == 1
    assert "Condition" not in listeners[0]


def test_writes_to_load_balancers_are_limited_to_owned_resources(policy: dict[str, Any]) -> None:
    """What aiolbc created carries the `elbv2.k8s.aws/cluster` tag; creates must set it and
    changes or deletes of load balancers and target groups need it (upstream's scoping)."""
    tag = CLUSTER_TAG
    for action in ("elasticloadbalancing:CreateLoadBalancer",
                   "elasticloadbalancing:CreateTargetGroup"):
        condition = _statement(policy, action)["Condition"]
        assert condition["Null"][f"aws:RequestTag/{tag}"] == "false", action
    # Every other write to a load balancer or target group (modify, set, delete), whatever
    # the code calls today: only on resources that carry the cluster tag, in every statement
    # that grants it.
    owned = [a for a in policy_actions(policy) if _changes_owned_resource(a)]
    assert {"elasticloadbalancing:DeleteLoadBalancer", "elasticloadbalancing:DeleteTargetGroup",
            "elasticloadbalancing:ModifyLoadBalancerAttributes",
            "elasticloadbalancing:ModifyTargetGroup"} <= set(owned)
    for action in owned:
        for statement in _grants(policy, action):
            condition = statement.get("Condition") or {}
            assert condition.get("Null") == {f"aws:ResourceTag/{tag}": "false"}, \
                (action, statement["Sid"])
    # TargetGroupBindings register into target groups created outside aiolbc too.
    register = _statement(policy, "elasticloadbalancing:RegisterTargets")
    assert "Condition" not in register
    assert register["Resource"] == ["arn:aws:elasticloadbalancing:*:*:targetgroup/*/*"]
    linked = _statement(policy, "iam:CreateServiceLinkedRole")
    assert linked["Condition"] == {
        "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}
    for statement in policy["Statement"]:
        reads = all(a.split(":")[1].startswith(("Describe", "List", "Get"))
                    for a in statement["Action"])
        if not reads:
            assert statement["Resource"] != "*" or "Condition" in statement \
                or statement["Sid"] == "ManageListenersAndRules", statement["Sid"]
