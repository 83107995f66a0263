"""The shipped RBAC as tests use it: the installation's RBAC documents (optionally altered)
loaded into a local API server with authorization on, and an account of which granted rule
triples a run's requests actually needed.

A *grant* is one (apiGroup, resource, verb) of a rule, with one resourceName when the rule
names some; a Role's grants apply only in the Role's namespace. A grant is *needed* when some
logged request is allowed with every grant and refused once that grant alone is taken away, so
an unneeded grant is one the run proves could be dropped.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer, RequestRecord, User
from runtime.envtest.rbac import Attributes, bootstrap_policy, request_attributes, rule_allows
from runtime.objects import Obj
from runtime.resources import NAMESPACES, SERVICEACCOUNTS, Resource
from tests.support.paths import CRDS, MANIFESTS

NAMESPACE = "aiolbc-system"
SERVICE_ACCOUNT = "aiolbc"
# Everything RBAC in the installation: what the controller may do, and who it is.
FILES = ("rbac/clusterrole.yaml", "rbac/metrics-auth-role.yaml",
         "deployment/serviceaccount.yaml", "deployment/clusterrolebinding.yaml",
         "deployment/metrics-auth-rolebinding.yaml", "deployment/leader-election-role.yaml",
         "webhook/role.yaml")
# The scrapers' role: shipped, bound by the cluster's administrator to whoever scrapes.
METRICS_READER = "rbac/metrics-reader-role.yaml"
_RBAC = "rbac.authorization.k8s.io"
KINDS = {
    "ClusterRole": Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
    "ClusterRoleBinding": Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding",
                                   namespaced=False),
    "Role": Resource(_RBAC, "v1", "roles", "Role"),
    "RoleBinding": Resource(_RBAC, "v1", "rolebindings", "RoleBinding"),
    "ServiceAccount": SERVICEACCOUNTS,
}
# How the API server's own verbs travel over HTTP (the request log keeps the verb).
_VERB_METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT",
                 "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}


def rbac_documents() -> list[Obj]:
    """The installation's RBAC documents, in the order they are applied."""
    return [doc for name in FILES for doc in yaml.safe_load_all((MANIFESTS / name).read_text())
            if doc]


def metrics_reader_role() -> Obj:
    doc: Obj = yaml.safe_load((MANIFESTS / METRICS_READER).read_text())
    return doc


def without_resource(docs: Sequence[Obj], *, kind: str, group: str, resource: str) -> list[Obj]:
    """`docs` with `resource` of `group` taken out of every rule of every `kind` role (a rule
    left with no resource goes too)."""
    altered = copy.deepcopy(list(docs))
    for doc in altered:
        if doc["kind"] != kind:
            continue
        rules = []
        for rule in doc["rules"]:
            if group in rule.get("apiGroups", []):
                rule["resources"] = [r for r in rule["resources"] if r != resource]
                if not rule["resources"]:
                    continue
            rules.append(rule)
        doc["rules"] = rules
    return altered


async def install(admin: KubeClient, docs: Iterable[Obj]) -> None:
    """The controller's namespace and the RBAC documents, created by an administrator."""
    await admin.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    for doc in docs:
        namespace: Any = doc["metadata"].get("namespace")
        await admin.create(KINDS[doc["kind"]], copy.deepcopy(doc), namespace)


# -- which grants a run needed ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    role: str  # "ClusterRole aiolbc", "Role aiolbc-system/aiolbc-leader-election"
    rule: int  # index in the role's rules
    namespace: str | None  # None: every namespace and the cluster scope
    api_group: str
    resource: str
    verb: str
    resource_name: str | None = None

    def as_rule(self) -> Obj:
        rule: Obj = {"apiGroups": [self.api_group], "resources": [self.resource],
                     "verbs": [self.verb]}
        if self.resource_name is not None:
            rule["resourceNames"] = [self.resource_name]
        return rule

    def allows(self, attrs: Attributes) -> bool:
        if self.namespace is not None and attrs.namespace != self.namespace:
            return False
        return rule_allows(attrs, self.as_rule())

    def __str__(self) -> str:
        named = f" {self.resource_name!r}" if self.resource_name is not None else ""
        group = self.api_group or "core"
        return f"{self.role} rule {self.rule}: {self.verb} {group}/{self.resource}{named}"


def grants(docs: Iterable[Obj]) -> list[Grant]:
    """Every grant of the ClusterRoles and Roles among `docs`."""
    found: list[Grant] = []
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        meta = doc["metadata"]
        namespace = meta.get("namespace") if doc["kind"] == "Role" else None
        role = f"{doc['kind']} {namespace + '/' if namespace else ''}{meta['name']}"
        for index, rule in enumerate(doc.get("rules") or []):
            names: list[str | None] = list(rule.get("resourceNames") or []) or [None]
            found.extend(Grant(role, index, namespace, group, resource, verb, name)
                         for group in rule.get("apiGroups") or []
                         for resource in rule.get("resources") or []
                         for verb in rule["verbs"] for name in names)
    return found


def baseline_rules(user: User) -> list[Obj]:
    """Rules every such user has from the bootstrap policy (discovery, self reviews)."""
    bound = {binding["roleRef"]["name"] for plural, binding in bootstrap_policy()
             if plural == "clusterrolebindings"
             and any(s.get("kind") == "Group" and s.get("name") in user.groups
                     for s in binding["subjects"])}
    return [rule for plural, role in bootstrap_policy()
            if plural == "clusterroles" and role["metadata"]["name"] in bound
            for rule in role["rules"]]


def requests_of(log: Iterable[RequestRecord], user: User) -> list[Attributes]:
    """What the authorizer saw of each request `user` made."""
    return [request_attributes(user, _VERB_METHODS.get(r.verb, r.verb.upper()), r.path,
                               r.query) for r in log if r.user == user.name]


@dataclass(frozen=True, slots=True)
class Account:
    """Which grants the requests needed."""

    needed: dict[Grant, list[Attributes]]  # grant -> requests only it allows
    unused: list[Grant]
    refused: list[Attributes]  # allowed by no grant and no baseline rule

    def describe(self) -> str:
        lines = []
        for grant, attrs in self.needed.items():
            seen = sorted({_describe(a) for a in attrs})
            lines.append(f"{grant}: {len(attrs)} requests, e.g. {'; '.join(seen[:3])}")
        lines.extend(f"{grant}: NOT NEEDED" for grant in self.unused)
        return "\n".join(lines)


def account(granted: Sequence[Grant], requests: Sequence[Attributes],
            baseline: Sequence[Obj] = ()) -> Account:
    """Re-run the authorizer's rule matching on every request: with every grant, then with each
    grant taken away in turn."""

    def allowed(attrs: Attributes, skip: Grant | None) -> bool:
        return (any(rule_allows(attrs, rule) for rule in baseline)
                or any(g.allows(attrs) for g in granted if g != skip))

    permitted = [a for a in requests if allowed(a, None)]
    refused = [a for a in requests if not allowed(a, None)]
    needed: dict[Grant, list[Attributes]] = {}
    unused: list[Grant] = []
    for grant in dict.fromkeys(granted):
        only = [a for a in permitted if grant.allows(a) and not allowed(a, grant)]
        if only:
            needed[grant] = only
        else:
            unused.append(grant)
    return Account(needed=needed, unused=unused, refused=refused)


def _describe(attrs: Attributes) -> str:
    where = f" in {attrs.namespace}" if attrs.namespace else ""
    sub = f"/{attrs.subresource}" if attrs.subresource else ""
    name = f" {attrs.name}" if attrs.name else ""
    return f"{attrs.verb} {attrs.resource}{sub}{name}{where}"


@contextlib.asynccontextmanager
async def authorized_server(docs: Iterable[Obj], tmp_path: Path
                            ) -> AsyncIterator[tuple[EnvTestServer, KubeClient, KubeClient]]:
    """The local API server with authorization on and only `docs` granting anything to the
    controller's ServiceAccount: (server, admin client, client as the ServiceAccount)."""
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5, rbac=True) as server:
        admin_kc = server.write_kubeconfig(tmp_path / "admin")
        token = server.add_service_account(NAMESPACE, SERVICE_ACCOUNT)
        sa_kc = server.write_kubeconfig(tmp_path / "controller", token=token)
        async with await KubeClient.from_kubeconfig(admin_kc) as admin, \
                await KubeClient.from_kubeconfig(sa_kc) as controller:
            await install(admin, docs)
            yield server, admin, controller
