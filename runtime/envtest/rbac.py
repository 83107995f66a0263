"""Authorization as kube-apiserver's RBAC authorizer decides it.

A request becomes attributes the way the real server's RequestInfo resolver derives them from
the URL alone (so an unknown resource is refused before it is found missing), then is allowed
iff some ClusterRoleBinding, or some RoleBinding in the request's namespace, binds the user to a
Role/ClusterRole with a matching rule. Bindings and roles are read from the store on every
request, so a change takes effect on the next one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runtime.envtest.auth import SA_PREFIX, User
from runtime.envtest.registry import RBAC_GROUP
from runtime.envtest.status import StatusError
from runtime.envtest.store import Store

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                 "PATCH": "patch", "DELETE": "delete"}
# Path segments after `namespaces/<name>/` that are subresources of the namespace itself.
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_TRUE = ("true", "1")


@dataclass(frozen=True, slots=True)
class Attributes:
    """What the authorizer sees of one request."""

    user: User
    verb: str
    path: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Denial:
    """One request refused with 403."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    path: str
    message: str


def request_attributes(user: User, method: str, path: str,
                       query: dict[str, str]) -> Attributes:
    """The real server's RequestInfo: resource requests are `/api/<v>/…` and
    `/apis/<g>/<v>/…`; everything else is a non-resource path with the lowercased method."""
    segs = [s for s in path.split("/") if s]
    method_verb = method.lower()
    # `/api/v1` and `/apis/<g>/<v>` themselves are discovery: non-resource paths.
    if len(segs) < 3 or segs[0] not in ("api", "apis") or (segs[0] == "apis" and len(segs) < 4):
        return Attributes(user, method_verb, path, resource_request=False)
    if segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    else:
        group, version, rest = segs[1], segs[2], segs[3:]
    verb = _METHOD_VERBS.get(method.upper(), "")
    if rest and rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    # `namespaces/<ns>` itself is authorized in namespace <ns>, as on the real server.
    if len(rest) > 1 and rest[0] == "namespaces":
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() in _TRUE else "list"
        # A list or watch narrowed to one name is authorized as that name.
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(user, verb, path, resource_request=True, api_group=group,
                      api_version=version, resource=resource, subresource=subresource,
                      namespace=namespace, name=name)


def _exact_name(selector: str) -> str:
    for term in selector.split(","):
        key, sep, value = term.partition("==")
        if not sep:
            key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name":
            return value.strip()
    return ""


# -- rules ------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def rule_allows(attrs: Attributes, rule: Any) -> bool:
    if not isinstance(rule, dict):
        return False
    verbs = _strings(rule.get("verbs"))
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(url == "*" or url == attrs.path
                   or (url.endswith("*") and attrs.path.startswith(url.rstrip("*")))
                   for url in _strings(rule.get("nonResourceURLs")))
    groups = _strings(rule.get("apiGroups"))
    if "*" not in groups and attrs.api_group not in groups:
        return False
    if not _resource_matches(_strings(rule.get("resources")), attrs):
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or (bool(attrs.name) and attrs.name in names)


def _resource_matches(resources: list[str], attrs: Attributes) -> bool:
    combined = attrs.combined_resource
    for resource in resources:
        if resource in ("*", combined):
            return True
        # `*/status` names one subresource of every resource; `services` covers no subresource.
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _applies(user: User, subject: Any, binding_namespace: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"{SA_PREFIX}{namespace}:{name}"
    return False


def _describe_subject(subject: dict[str, Any], binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{subject.get("name")}/{namespace}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


class RBACAuthorizer:
    """Reads RBAC objects from the store on every decision."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def _objects(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        return [e.obj for e in self._store.entries(f"{RBAC_GROUP}/{plural}", namespace)]

    def _role_rules(self, role_ref: Any, binding_namespace: str) -> list[Any]:
        """The referenced role's rules; raises LookupError with the real server's words."""
        ref = role_ref if isinstance(role_ref, dict) else {}
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "ClusterRole":
            entry = self._store.get(f"{RBAC_GROUP}/clusterroles", "", name)
            singular = "clusterrole"
        elif kind == "Role":
            entry = self._store.get(f"{RBAC_GROUP}/roles", binding_namespace, name)
            singular = "role"
        else:
            raise LookupError(f'unsupported role reference kind: "{kind}"')
        if entry is None:
            raise LookupError(f'{singular}.{RBAC_GROUP} "{name}" not found')
        rules = entry.obj.get("rules")
        return rules if isinstance(rules, list) else []

    def _bindings(self, user: User, namespace: str
                  ) -> Iterator[tuple[str, dict[str, Any], dict[str, Any], str]]:
        """(kind, binding, applicable subject, binding namespace) in the real order:
        ClusterRoleBindings, then RoleBindings of the request's namespace."""
        sources = [("ClusterRoleBinding", self._objects("clusterrolebindings", None), "")]
        if namespace:
            sources.append(("RoleBinding", self._objects("rolebindings", namespace), namespace))
        for kind, bindings, binding_ns in sources:
            for binding in bindings:
                subjects = binding.get("subjects")
                for subject in subjects if isinstance(subjects, list) else []:
                    if _applies(user, subject, binding_ns):
                        yield kind, binding, subject, binding_ns
                        break

    def authorize(self, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for kind, binding, subject, binding_ns in self._bindings(attrs.user, attrs.namespace):
            try:
                rules = self._role_rules(binding.get("roleRef"), binding_ns)
            except LookupError as exc:
                errors.append(str(exc))
                continue
            if any(rule_allows(attrs, rule) for rule in rules):
                name = binding["metadata"]["name"]
                shown = f"{name}/{binding_ns}" if kind == "RoleBinding" else name
                ref = binding.get("roleRef") or {}
                return Decision(True, f'RBAC: allowed by {kind} "{shown}" of '
                                      f'{ref.get("kind")} "{ref.get("name")}" to '
                                      f"{_describe_subject(subject, binding_ns)}")
        if not errors:
            return Decision(False)
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Decision(False, f"RBAC: {joined}")


# -- answers ----------------------------------------------------------------------------------


def forbidden_message(attrs: Attributes) -> str:
    who = f'User "{attrs.user.name}"'
    if not attrs.resource_request:
        return f'{who} cannot {attrs.verb} path "{attrs.path}"'
    where = (f'in the namespace "{attrs.namespace}"' if attrs.namespace
             else "at the cluster scope")
    return (f'{who} cannot {attrs.verb} resource "{attrs.combined_resource}" in API group '
            f'"{attrs.api_group}" {where}')


def forbidden(attrs: Attributes, reason: str) -> StatusError:
    """The 403 answer: `NewForbidden(group-resource, name, message[: reason])`."""
    text = forbidden_message(attrs)
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        message = f"forbidden: {text}"
        details: dict[str, Any] = {}
    else:
        qualified = (f"{attrs.resource}.{attrs.api_group}" if attrs.api_group
                     else attrs.resource)
        message = (f'{qualified} "{attrs.name}" is forbidden: {text}' if attrs.name
                   else f"{qualified} is forbidden: {text}")
        details = {"name": attrs.name} if attrs.name else {}
        if attrs.api_group:
            details["group"] = attrs.api_group
        details["kind"] = attrs.resource
    err = StatusError(403, message)
    # Always a `details` object, `{}` for paths, as the real server sends.
    err.body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": "Forbidden", "details": details, "code": 403}
    return err


def denial(attrs: Attributes, message: str) -> Denial:
    return Denial(user=attrs.user.name, verb=attrs.verb, group=attrs.api_group,
                  resource=attrs.resource, subresource=attrs.subresource,
                  namespace=attrs.namespace, name=attrs.name, path=attrs.path, message=message)


# -- bootstrap policy -------------------------------------------------------------------------

_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": dict(_BOOTSTRAP_LABELS),
                         "annotations": dict(_AUTOUPDATE)},
            "rules": rules}


def _cluster_binding(name: str, groups: list[str]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(_BOOTSTRAP_LABELS),
                         "annotations": dict(_AUTOUPDATE)},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups]}


def bootstrap_policy() -> list[tuple[str, dict[str, Any]]]:
    """(plural, object) for the default roles that let any authenticated user discover the API
    and review its own access, `cluster-admin` for `system:masters`, and the unbound
    `system:auth-delegator`."""
    discovery_urls = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                      "/openapi/*", "/readyz", "/version", "/version/"]
    public_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    roles = [
        _cluster_role("cluster-admin", [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _cluster_role("system:discovery", [{"nonResourceURLs": discovery_urls,
                                            "verbs": ["get"]}]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": public_urls,
                                                     "verbs": ["get"]}]),
        _cluster_role("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
             "verbs": ["create"]}]),
        # For servers that delegate authentication and authorization (secure metrics); bound
        # by whoever runs one, never by default.
        _cluster_role("system:auth-delegator", [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
             "verbs": ["create"]}]),
    ]
    bindings = [
        _cluster_binding("cluster-admin", ["system:masters"]),
        _cluster_binding("system:discovery", ["system:authenticated"]),
        _cluster_binding("system:public-info-viewer", ["system:authenticated",
                                                       "system:unauthenticated"]),
        _cluster_binding("system:basic-user", ["system:authenticated"]),
    ]
    return [("clusterroles", r) for r in roles] + [("clusterrolebindings", b) for b in bindings]
