"""What the Ingress controller watches, and what each event means to it: the indexes its map
functions read, the map functions (`GroupMapper`: every watched kind to the Ingress groups it
concerns, cache reads only), and the views its `ViewChanged` predicates compare, which drop
updates that change nothing the model reads — our own status and checkpoint writes, a
Service's status, the TargetGroupBinding controller's writes. The priority of each group is
`priority.py`'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from controller.annotations import load_json
from controller.apis import (
    CHECKPOINT_ANNOTATIONS,
    INGRESS_STACK_LABEL,
    INGRESS_STACK_NAME_LABEL,
    INGRESS_STACK_NAMESPACE_LABEL,
    INGRESSCLASSPARAMS,
    USE_ANNOTATION,
)
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.ingress.annotations import oidc_secret_names
from controller.ingress.caches import Caches
from controller.ingress.gojson import go_fold
from controller.ingress.groups import CLASS_INDEX, GroupLoader, request_of_key
from controller.ingress.plan import DRY_RUN_PLAN
from controller.ingress.tlssecrets import tls_secret_names
from runtime.objects import (
    Obj,
    annotations_of,
    as_dict,
    as_list,
    as_str,
    dig,
    key_of,
    labels_of,
    meta,
)
from runtime.reconcile import Request
from runtime.store import NAMESPACE_INDEX

SERVICE_INDEX: Final = "ingress-service"  # Ingress → namespace/name of every Service it names
SECRET_INDEX: Final = "ingress-secret"  # Ingress → namespace/name of its OIDC Secret
# Service → namespace/name of the OIDC Secret its own auth-idp-oidc annotation names.
SERVICE_SECRET_INDEX: Final = "ingress-service-secret"
BINDING_STACK_INDEX: Final = "ingress-stack"  # managed TGB → Request.key of its group


def ingress_view(obj: Obj) -> Any:
    m = meta(obj)
    # The controller's own outputs: the checkpoint, and the dry-run plan (plan.py).
    annotations = {k: v for k, v in annotations_of(obj).items()
                   if k not in CHECKPOINT_ANNOTATIONS and k != DRY_RUN_PLAN}
    return (obj.get("spec"), annotations, bool(m.get("deletionTimestamp")))


def service_view(obj: Obj) -> Any:
    m = meta(obj)
    return (obj.get("spec"), m.get("annotations"), m.get("uid"))


def secret_view(obj: Obj) -> Any:
    return (obj.get("type"), obj.get("data"))


def spec_and_annotations(obj: Obj) -> Any:
    return (obj.get("spec"), meta(obj).get("annotations"))


def labels_view(obj: Obj) -> Any:
    return meta(obj).get("labels")


# ---- indexes -----------------------------------------------------------------------------

def ingress_service_index(ing: Obj) -> list[str]:
    """namespace/name of every Service an Ingress routes to (rules, default backend, forward
    actions in annotations)."""
    namespace = str(meta(ing).get("namespace") or "")
    spec = as_dict(ing.get("spec"))
    names: dict[str, None] = {}
    backends: list[Any] = [spec.get("defaultBackend")]
    for rule in as_list(spec.get("rules")):
        for path in as_list(dig(rule, "http", "paths")):
            backends.append(dig(path, "backend"))
    for backend in backends:
        name = as_str(dig(backend, "service", "name"))
        if name and dig(backend, "service", "port", "name") != USE_ANNOTATION:
            names[name] = None
    for key, value in annotations_of(ing).items():
        if isinstance(key, str) and key.startswith(PREFIX + "actions.") and isinstance(value, str):
            names.update(dict.fromkeys(_forward_services(value)))
    return [f"{namespace}/{name}" for name in names]


def _forward_services(raw: str) -> list[str]:
    try:
        action = load_json(raw)
    except ValueError:
        return []
    if not isinstance(action, dict):
        return []
    forward = next((v for k, v in action.items() if go_fold(str(k)) == "forwardconfig"), None)
    groups = next((v for k, v in forward.items() if go_fold(str(k)) == "targetgroups"),
                  None) if isinstance(forward, dict) else None
    found: list[str] = []
    for tg in groups if isinstance(groups, list) else []:
        if isinstance(tg, dict):
            name = next((v for k, v in tg.items() if go_fold(str(k)) == "servicename"), None)
            if isinstance(name, str) and name:
                found.append(name)
    return found


def ingress_secret_index(ing: Obj) -> list[str]:
    """Its OIDC Secret and its TLS Secrets (read only with `--enable-secret-certificates`)."""
    namespace = str(meta(ing).get("namespace") or "")
    names = sorted({*oidc_secret_names(ing), *tls_secret_names(ing)})
    return [f"{namespace}/{name}" for name in names]


def service_secret_index(svc: Obj) -> list[str]:
    namespace = str(meta(svc).get("namespace") or "")
    return [f"{namespace}/{name}" for name in oidc_secret_names(svc)] if namespace else []


def binding_stack_index(obj: Obj) -> list[str]:
    labels = labels_of(obj)
    if labels.get(INGRESS_STACK_LABEL):
        return [str(labels[INGRESS_STACK_LABEL])]
    name = labels.get(INGRESS_STACK_NAME_LABEL)
    namespace = labels.get(INGRESS_STACK_NAMESPACE_LABEL)
    return [f"{namespace}/{name}"] if name and namespace else []


# ---- mapping -----------------------------------------------------------------------------

class GroupMapper:
    """Which groups an object of each watched kind concerns."""

    def __init__(self, loader: GroupLoader, caches: Caches) -> None:
        self._loader = loader
        self._caches = caches
    def groups_for_ingress(self, obj: Obj) -> list[Request]:
        return self._loader.groups_of(obj)

    def _groups_of_ingresses(self, ingresses: Iterable[Obj]) -> list[Request]:
        found: dict[Request, None] = {}
        for ing in ingresses:
            found.update(dict.fromkeys(self._loader.groups_of(ing)))
        return list(found)

    def groups_for_service(self, obj: Obj) -> list[Request]:
        return self._groups_of_ingresses(
            self._caches.ingresses.by_index(SERVICE_INDEX, key_of(obj)))

    def groups_for_secret(self, obj: Obj) -> list[Request]:
        """Ingresses naming the Secret, and those routing to a Service that names it."""
        key = key_of(obj)
        ingresses = {key_of(i): i for i in self._caches.ingresses.by_index(SECRET_INDEX, key)}
        for svc in self._caches.services.by_index(SERVICE_SECRET_INDEX, key):
            for ing in self._caches.ingresses.by_index(SERVICE_INDEX, key_of(svc)):
                ingresses[key_of(ing)] = ing
        return self._groups_of_ingresses(ingresses[k] for k in sorted(ingresses))

    def groups_for_class(self, obj: Obj) -> list[Request]:
        name = str(meta(obj).get("name") or "")
        # Ingresses naming no class may be taken by a default class.
        return self._groups_of_ingresses([
            *self._caches.ingresses.by_index(CLASS_INDEX, name),
            *self._caches.ingresses.by_index(CLASS_INDEX, "")])

    def groups_for_params(self, obj: Obj) -> list[Request]:
        name = meta(obj).get("name")
        found: list[Request] = []
        for cls in self._caches.classes.list():
            ref = as_dict(dig(cls, "spec", "parameters"))
            if isinstance(ref, dict) and ref.get("kind") == INGRESSCLASSPARAMS.kind \
                    and ref.get("name") == name:
                found.extend(self.groups_for_class(cls))
        group = dig(obj, "spec", "group", "name")
        if isinstance(group, str) and group:
            found.append(Request("", group))
        return list(dict.fromkeys(found))

    def groups_for_namespace(self, obj: Obj) -> list[Request]:
        return self._groups_of_ingresses(self._caches.ingresses.by_index(
            NAMESPACE_INDEX, str(meta(obj).get("name") or "")))

    def group_for_binding(self, obj: Obj) -> list[Request]:
        return [request_of_key(k) for k in binding_stack_index(obj)]
