"""The resource table: which kinds the server serves, and how each behaves.

Built-in kinds are listed here with the facts discovery and the verbs need (short names, scope,
status subresource, delete answer). A CustomResourceDefinition becomes one `ResourceType` per
served version; all versions of one CRD share one storage, at its storage version (conversion.py
converts as the `None` strategy does).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
RBAC_GROUP = "rbac.authorization.k8s.io"
ADMISSION_GROUP = "admissionregistration.k8s.io"


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource at one group-version."""

    group: str
    version: str
    plural: str
    kind: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    # Whether a PUT without metadata.resourceVersion is accepted (false for custom resources).
    unconditional_update: bool = True
    create_on_update: bool = False
    # Whether DELETE answers with the deleted object rather than a success Status.
    returns_deleted_object: bool = False
    # Whether strategic merge patch is accepted (not for custom resources).
    strategic_merge: bool = True
    custom: bool = False
    # Where objects are kept: all versions of one CRD share it.
    storage_key: str = ""
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    # Review kinds (SelfSubjectAccessReview, …) are create-only and never stored.
    verbs: tuple[str, ...] = ALL_VERBS
    # A custom resource's: this version's openAPIV3Schema, and the version objects are stored
    # at with its schema (conversion.py).
    schema: dict[str, Any] | None = field(default=None, compare=False)
    storage_version: str = field(default="", compare=False)
    storage_schema: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def group_version(self) -> str:
        """Path form: `api/v1` or `apis/<group>/<version>`."""
        return f"api/{self.version}" if not self.group else f"apis/{self.group}/{self.version}"

    @property
    def qualified(self) -> str:
        """`services` or `ingresses.networking.k8s.io`, as the server names it in messages."""
        return self.plural if not self.group else f"{self.plural}.{self.group}"

    @property
    def store_key(self) -> str:
        return self.storage_key or f"{self.group}/{self.plural}"


def _core(plural: str, kind: str, *, namespaced: bool = True, short: tuple[str, ...] = (),
          status: bool = False, create_on_update: bool = False, returns_deleted: bool = False,
          categories: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType("", "v1", plural, kind, kind.lower(), namespaced=namespaced,
                        short_names=short, has_status=status, create_on_update=create_on_update,
                        returns_deleted_object=returns_deleted, categories=categories)


BUILTINS: tuple[ResourceType, ...] = (
    _core("namespaces", "Namespace", namespaced=False, short=("ns",), status=True,
          returns_deleted=True),
    _core("services", "Service", short=("svc",), status=True, returns_deleted=True,
          categories=("all",)),
    _core("endpoints", "Endpoints", short=("ep",), create_on_update=True),
    _core("pods", "Pod", short=("po",), status=True, returns_deleted=True, categories=("all",)),
    _core("nodes", "Node", namespaced=False, short=("no",), status=True),
    _core("secrets", "Secret"),
    _core("configmaps", "ConfigMap", short=("cm",)),
    _core("serviceaccounts", "ServiceAccount", short=("sa",)),
    _core("events", "Event", short=("ev",), create_on_update=True),
    ResourceType("events.k8s.io", "v1", "events", "Event", "event", short_names=("ev",),
                 create_on_update=True),
    ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", "endpointslice"),
    # Served only so that manifests holding workloads apply; nothing runs them.
    ResourceType("apps", "v1", "deployments", "Deployment", "deployment",
                 short_names=("deploy",), has_status=True, returns_deleted_object=True,
                 categories=("all",)),
    ResourceType("networking.k8s.io", "v1", "ingresses", "Ingress", "ingress",
                 short_names=("ing",), has_status=True),
    ResourceType("networking.k8s.io", "v1", "ingressclasses", "IngressClass", "ingressclass",
                 namespaced=False),
    # Stored, not enforced: there is no pod network here.
    ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy",
                 "networkpolicy", short_names=("netpol",)),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", "lease"),
    # Served so that in-cluster manifests apply; with `rbac=True` they also drive authorization.
    ResourceType(RBAC_GROUP, "v1", "roles", "Role", "role"),
    ResourceType(RBAC_GROUP, "v1", "rolebindings", "RoleBinding", "rolebinding"),
    ResourceType(RBAC_GROUP, "v1", "clusterroles", "ClusterRole", "clusterrole",
                 namespaced=False),
    ResourceType(RBAC_GROUP, "v1", "clusterrolebindings", "ClusterRoleBinding",
                 "clusterrolebinding", namespaced=False),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget",
                 "poddisruptionbudget", short_names=("pdb",), has_status=True),
    ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews",
                 "SelfSubjectAccessReview", "selfsubjectaccessreview", namespaced=False,
                 verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
                 "subjectaccessreview", namespaced=False, verbs=("create",)),
    ResourceType("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview",
                 "selfsubjectreview", namespaced=False, verbs=("create",)),
    ResourceType("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", "tokenreview",
                 namespaced=False, verbs=("create",)),
    # Stored like any kind; with webhooks configured, every write is admitted through them.
    ResourceType(ADMISSION_GROUP, "v1", "mutatingwebhookconfigurations",
                 "MutatingWebhookConfiguration", "mutatingwebhookconfiguration",
                 namespaced=False, categories=("api-extensions",)),
    ResourceType(ADMISSION_GROUP, "v1", "validatingwebhookconfigurations",
                 "ValidatingWebhookConfiguration", "validatingwebhookconfiguration",
                 namespaced=False, categories=("api-extensions",)),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                 "CustomResourceDefinition", "customresourcedefinition", namespaced=False,
                 short_names=("crd", "crds"), categories=("api-extensions",), has_status=True,
                 returns_deleted_object=True),
)

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


class CRDError(ValueError):
    """A CRD that cannot be served; the message names the field."""


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves, one per served version."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        raise CRDError("spec: Required value")
    group = spec.get("group")
    names = spec.get("names")
    if not isinstance(group, str) or not group:
        raise CRDError("spec.group: Required value")
    if not isinstance(names, dict) or not isinstance(names.get("plural"), str) \
            or not isinstance(names.get("kind"), str):
        raise CRDError("spec.names: Required value: plural and kind are required")
    scope = spec.get("scope", "Namespaced")
    if scope not in ("Namespaced", "Cluster"):
        raise CRDError(f'spec.scope: Unsupported value: "{scope}"')
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        raise CRDError("spec.versions: Invalid value: must have exactly one version marked as "
                       "storage version")
    plural = names["plural"]
    singular = names.get("singular") or names["kind"].lower()
    storage = next((v for v in versions if isinstance(v, dict) and v.get("storage")), None)
    storage_version = str(storage.get("name") or "") if storage is not None else ""
    out = []
    for ver in versions:
        if not isinstance(ver, dict) or not isinstance(ver.get("name"), str):
            raise CRDError("spec.versions[].name: Required value")
        if not ver.get("served", True):
            continue
        subresources = ver.get("subresources") or {}
        out.append(ResourceType(
            group, ver["name"], plural, names["kind"], singular,
            namespaced=scope == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            has_status=isinstance(subresources, dict) and "status" in subresources,
            unconditional_update=False, returns_deleted_object=True, strategic_merge=False,
            custom=True, storage_key=f"{group}/{plural}",
            printer_columns=tuple(ver.get("additionalPrinterColumns") or ()),
            schema=_schema(ver), storage_version=storage_version,
            storage_schema=_schema(storage) if storage is not None else None,
        ))
    return out


def _schema(version: dict[str, Any]) -> dict[str, Any] | None:
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    return schema if isinstance(schema, dict) else None


class Registry:
    """Served resource types, looked up by group-version and plural (or kind)."""

    def __init__(self, types: Iterable[ResourceType] = BUILTINS) -> None:
        self._by_gv: dict[tuple[str, str], dict[str, ResourceType]] = {}
        # CRD name → the types it serves, so deleting the CRD withdraws them.
        self._by_crd: dict[str, list[ResourceType]] = {}
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_gv.setdefault((rt.group, rt.version), {})[rt.plural] = rt

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gv.get((group, version), {}).get(plural)

    def group_versions(self) -> list[tuple[str, str]]:
        return list(self._by_gv)

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return list(self._by_gv.get((group, version), {}).values())

    def __iter__(self) -> Iterator[ResourceType]:
        for table in self._by_gv.values():
            yield from table.values()

    def groups(self) -> dict[str, list[str]]:
        """Group name → its versions, core group ("") included."""
        out: dict[str, list[str]] = {}
        for group, version in self._by_gv:
            out.setdefault(group, []).append(version)
        return out

    def serve_crd(self, name: str, types: list[ResourceType]) -> None:
        self.withdraw_crd(name)
        for rt in types:
            self._add(rt)
        self._by_crd[name] = types

    def withdraw_crd(self, name: str) -> list[ResourceType]:
        removed = self._by_crd.pop(name, [])
        for rt in removed:
            table = self._by_gv.get((rt.group, rt.version))
            if table is not None and table.get(rt.plural) is rt:
                del table[rt.plural]
                if not table:
                    del self._by_gv[(rt.group, rt.version)]
        return removed

    def crd_types(self, name: str) -> list[ResourceType]:
        return list(self._by_crd.get(name, []))
