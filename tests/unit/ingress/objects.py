"""Plain-dict Kubernetes objects and filled caches for the Ingress unit tests."""

from __future__ import annotations

import base64

from controller.ingress.caches import Caches
from controller.ingress.groups import CLASS_INDEX, GROUP_INDEX, GroupLoader, class_keys, index_keys
from controller.ingress.model import BuilderSettings
from runtime.objects import Obj

SETTINGS = BuilderSettings(cluster_name="test-cluster", region="us-west-2", vpc_id="vpc-1",
                           default_target_type="ip")


def backend(service: str, port: int | str = 80) -> Obj:
    ref = {"number": port} if isinstance(port, int) else {"name": port}
    return {"service": {"name": service, "port": ref}}


def path(p: str, service: str = "web", port: int | str = 80, kind: str = "Prefix") -> Obj:
    return {"path": p, "pathType": kind, "backend": backend(service, port)}


def ingress(name: str, *, namespace: str = "default", paths: list[Obj] | None = None,
            host: str | None = None, annotations: dict[str, str] | None = None,
            class_name: str | None = "alb", spec: Obj | None = None,
            finalizers: list[str] | None = None) -> Obj:
    rule: Obj = {"http": {"paths": paths if paths is not None else [path("/")]}}
    if host:
        rule["host"] = host
    body: Obj = {"rules": [rule]}
    if class_name:
        body["ingressClassName"] = class_name
    body.update(spec or {})
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": "1",
                         "annotations": annotations or {}, "finalizers": finalizers or []},
            "spec": body}


def service(name: str, *, namespace: str = "default", port: int = 80, target_port: int = 8080,
            node_port: int = 30080, uid: str | None = None,
            annotations: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}",
                         "annotations": annotations or {}},
            "spec": {"type": "NodePort", "ports": [
                {"name": "http", "port": port, "targetPort": target_port,
                 "nodePort": node_port}]}}


def ingress_class(name: str = "alb", *, params: str | None = None, default: bool = False,
                  controller: str = "ingress.k8s.aws/alb") -> Obj:
    spec: Obj = {"controller": controller}
    if params:
        spec["parameters"] = {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams",
                              "name": params}
    annotations = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": spec}


def class_params(name: str, spec: Obj) -> Obj:
    return {"metadata": {"name": name}, "spec": spec}


def secret(name: str, data: dict[str, str], *, namespace: str = "default") -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "resourceVersion": "1"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def caches(*objects: Obj) -> Caches:
    c = Caches()
    c.ingresses.add_indexer(GROUP_INDEX, index_keys)
    c.ingresses.add_indexer(CLASS_INDEX, class_keys)
    for obj in objects:
        if "data" in obj:
            c.secrets.upsert(obj)
        elif "controller" in (obj.get("spec") or {}):
            c.classes.upsert(obj)
        elif "ports" in (obj.get("spec") or {}):
            c.services.upsert(obj)
        elif "rules" in (obj.get("spec") or {}) or "defaultBackend" in (obj.get("spec") or {}):
            c.ingresses.upsert(obj)
        elif "labels" in (obj.get("metadata") or {}) and "spec" not in obj:
            c.namespaces.upsert(obj)
        else:
            c.params.upsert(obj)
    return c


def loader(c: Caches, ingress_class: str = "alb") -> GroupLoader:
    return GroupLoader(c, ingress_class=ingress_class)
