"""Kubernetes objects as plain dicts: the one set of factories every test builds from.

Each factory returns the object as the API server would serve it. Unit tests hand it straight to
parsers, builders and caches; the integration harness (`cluster.py`) creates it through the
client, which drops what the server assigns (uid, resourceVersion) and passes what differs
for a live cluster (no fixed nodePorts, its own namespace). Presets name the objects tests are
written against: `web_service` is the Service unit tests' shop/web, `nlb_service` the Service
asking for an NLB with ip targets on port 80, `backend_service` what an Ingress or a binding
points at.

Annotation keys without a "/" get the prefix of the kind they configure
(`service.beta.kubernetes.io/` on NLB Services, `alb.ingress.kubernetes.io/` on Ingresses and
their backend Services); keys with a "/" are taken as they are.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from controller.apis import (
    ALB_CONTROLLER,
    DEFAULT_CLASS_ANNOTATION,
    INGRESS_ANNOTATION_PREFIX,
    INGRESSCLASSPARAMS,
    SERVICE_ANNOTATION_PREFIX,
    TARGETGROUPBINDINGS,
)
from runtime.objects import Obj

NLB_CLASS = "service.k8s.aws/nlb"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_NAMESPACE = "default"


def prefixed(prefix: str, annotations: Mapping[str, str | None] | None) -> dict[str, Any]:
    """`annotations` with `prefix` on every key that has no "/"."""
    return {(k if "/" in k else prefix + k): v for k, v in (annotations or {}).items()}


def _metadata(name: str, *, namespace: str | None = None, uid: str | None = None,
              resource_version: str | None = None, labels: Mapping[str, str] | None = None,
              annotations: Mapping[str, Any] | None = None,
              finalizers: Sequence[str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    if finalizers is not None:
        meta["finalizers"] = list(finalizers)
    return meta


def _number(name: str) -> int:
    return zlib.crc32(name.encode())


# ---- Services ---------------------------------------------------------------------------------

def service_port(port: int = 80, target: int | str = 8080, name: str = "http", *,
                 protocol: str | None = "TCP", node_port: int | None = None) -> Obj:
    body: Obj = {"name": name, "port": port, "targetPort": target}
    if protocol is not None:
        body["protocol"] = protocol
    if node_port is not None:
        body["nodePort"] = node_port
    return body


def service(name: str, *, namespace: str | None = None, ports: Sequence[Obj] | None = None,
            type_: str | None = None, selector: Mapping[str, str] | None = None,
            labels: Mapping[str, str] | None = None,
            annotations: Mapping[str, str] | None = None,
            finalizers: Sequence[str] | None = None, uid: str | None = None,
            resource_version: str | None = None, **spec: Any) -> Obj:
    """A Service with only what is given (one port 80 by default). `spec` keys given as None
    are left out."""
    body: Obj = {}
    if type_ is not None:
        body["type"] = type_
    if selector is not None:
        body["selector"] = dict(selector)
    body["ports"] = [dict(p) for p in ports] if ports is not None else [{"port": 80}]
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _metadata(name, namespace=namespace, uid=uid,
                                  resource_version=resource_version, labels=labels,
                                  annotations=annotations, finalizers=finalizers),
            "spec": {k: v for k, v in body.items() if v is not None}}


def nlb_service(name: str, annotations: Mapping[str, str] | None = None, *,
                namespace: str | None = DEFAULT_NAMESPACE, ports: Sequence[Obj] | None = None,
                target_type: str | None = "ip", load_balancer_class: str | None = NLB_CLASS,
                type_: str = "LoadBalancer", uid: str | None = None, **spec: Any) -> Obj:
    """A Service asking for an NLB (by `loadBalancerClass` unless None), selecting
    `app: <name>`, with one TCP port 80 -> 8080 by default. `target_type` goes into the
    nlb-target-type annotation unless the annotations name one or it is None."""
    notes = prefixed(SERVICE_ANNOTATION_PREFIX, annotations)
    if target_type:
        notes.setdefault(SERVICE_ANNOTATION_PREFIX + "aws-load-balancer-nlb-target-type",
                         target_type)
    spec.setdefault("loadBalancerClass", load_balancer_class)
    return service(name, namespace=namespace, uid=uid, annotations=notes, type_=type_,
                   selector={"app": name},
                   ports=ports if ports is not None else [service_port()], **spec)


# The Service unit tests' ports: https and http, each with its nodePort.
WEB_PORTS: tuple[Obj, ...] = (service_port(443, 8443, "https", node_port=30443),
                              service_port(80, 8080, "http", node_port=30080))


def web_service(annotations: Mapping[str, str] | None = None, *,
                load_balancer_class: str | None = NLB_CLASS, type_: str = "LoadBalancer",
                ports: Sequence[Obj] | None = None, **spec: Any) -> Obj:
    """The Service the Service unit tests model: shop/web (uid u-1), cluster traffic policy,
    the `WEB_PORTS`, and no target-type annotation (so upstream's default applies)."""
    spec.setdefault("externalTrafficPolicy", "Cluster")
    return nlb_service("web", annotations, namespace="shop", uid="u-1", target_type=None,
                       load_balancer_class=load_balancer_class, type_=type_,
                       ports=WEB_PORTS if ports is None else ports, **spec)


def backend_service(name: str, annotations: Mapping[str, str] | None = None, *,
                    namespace: str | None = DEFAULT_NAMESPACE, port: int = 80,
                    target_port: int | str = 8080, node_port: int | None = 30080,
                    type_: str = "NodePort", uid: str | None = None) -> Obj:
    """A Service an Ingress or a TargetGroupBinding points at: one port named `http`,
    selecting `app: <name>`. Its annotations are Ingress ones (target-group settings)."""
    return service(name, namespace=namespace, uid=uid or f"uid-{name}",
                   annotations=prefixed(INGRESS_ANNOTATION_PREFIX, annotations), type_=type_,
                   selector={"app": name},
                   ports=[service_port(port, target_port, protocol=None, node_port=node_port)])


# ---- EndpointSlices -------------------------------------------------------------------------

def endpoint_ip(service: str) -> str:
    """The address of the one endpoint a Service gets when a test names none."""
    return f"10.0.2.{10 + _number(service) % 200}"


def endpoint(ip: str, *, service: str = "", ready: bool | None = True,
             terminating: bool | None = False, kind: str = "Pod",
             uid: str | None = None) -> Obj:
    """One endpoint, backed by a Pod named after the address (`ready=None`: no readiness)."""
    conditions: Obj = {}
    if ready is not None:
        conditions["ready"] = ready
    if terminating is not None:
        conditions["terminating"] = terminating
    owner = f"{service}-" if service else ""
    return {"addresses": [ip], "conditions": conditions,
            "targetRef": {"kind": kind, "name": f"{owner or 'pod-'}{ip}",
                          "uid": uid if uid is not None else f"uid-{owner}{ip}"}}


def endpoint_slice(service: str, ips: Sequence[str] = (), *, name: str | None = None,
                   namespace: str | None = DEFAULT_NAMESPACE,
                   ports: Sequence[tuple[str, int]] = (("http", 8080),),
                   not_ready: Sequence[str] = (), endpoints: Sequence[Obj] | None = None,
                   address_type: str = "IPv4") -> Obj:
    """The EndpointSlice of `service`: a ready endpoint per address (`not_ready` ones not),
    or `endpoints` as given."""
    listed = (list(endpoints) if endpoints is not None else
              [endpoint(ip, service=service, ready=ip not in not_ready) for ip in ips])
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": _metadata(name or f"{service}-1", namespace=namespace,
                                  labels={SERVICE_NAME_LABEL: service}),
            "addressType": address_type,
            "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
            "endpoints": listed}


# ---- Nodes ------------------------------------------------------------------------------------

def node(name: str, instance_id: str | None = None, *, zone: str = "us-west-2a",
         ready: bool | str = True, unschedulable: bool = False,
         labels: Mapping[str, str] | None = None, taints: Sequence[Obj] | None = None,
         created: str | None = None) -> Obj:
    """A Node backed by EC2 instance `instance_id` (default `i-<name>`). The status is a
    subresource: creating the Node drops it, so the harness writes it afterwards."""
    meta = _metadata(name, labels=labels or {})
    if created is not None:
        meta["creationTimestamp"] = created
    spec: Obj = {"providerID": f"aws:///{zone}/{instance_id or 'i-' + name}",
                 "unschedulable": unschedulable}
    if taints is not None:
        spec["taints"] = list(taints)
    status = ready if isinstance(ready, str) else ("True" if ready else "False")
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": status}]}}


# ---- Ingresses --------------------------------------------------------------------------------

def ingress_backend(service: str, port: int | str = 80) -> Obj:
    ref = {"number": port} if isinstance(port, int) else {"name": port}
    return {"service": {"name": service, "port": ref}}


def ingress_path(path: str, service: str = "web", port: int | str = 80,
                 path_type: str = "Prefix") -> Obj:
    return {"path": path, "pathType": path_type, "backend": ingress_backend(service, port)}


def ingress(name: str, annotations: Mapping[str, str | None] | None = None, *,
            namespace: str | None = DEFAULT_NAMESPACE, paths: Sequence[Obj] | None = None,
            host: str | None = None, class_name: str | None = "alb",
            tls_hosts: Sequence[str] | None = None, rules: Sequence[Obj] | None = None,
            spec: Obj | None = None, finalizers: Sequence[str] | None = None) -> Obj:
    """An Ingress of class `class_name` with one rule (for `host`, if given) holding `paths`
    (default: `/` to Service web); `rules` replaces that rule, `spec` is merged last."""
    body: Obj = {}
    if rules is None:
        rule: Obj = {"http": {"paths": list(paths) if paths is not None
                              else [ingress_path("/")]}}
        if host:
            rule["host"] = host
        rules = [rule]
    body["rules"] = list(rules)
    if class_name:
        body["ingressClassName"] = class_name
    if tls_hosts:
        body["tls"] = [{"hosts": list(tls_hosts)}]
    body.update(spec or {})
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": _metadata(name, namespace=namespace, resource_version="1",
                                  annotations=prefixed(INGRESS_ANNOTATION_PREFIX, annotations),
                                  finalizers=finalizers or []),
            "spec": body}


def ingress_class(name: str = "alb", *, params: str | None = None, default: bool = False,
                  controller: str = ALB_CONTROLLER) -> Obj:
    spec: Obj = {"controller": controller}
    if params:
        spec["parameters"] = {"apiGroup": INGRESSCLASSPARAMS.group,
                              "kind": INGRESSCLASSPARAMS.kind, "name": params}
    annotations = {DEFAULT_CLASS_ANNOTATION: "true"} if default else {}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": _metadata(name, annotations=annotations), "spec": spec}


def class_params(name: str, spec: Obj) -> Obj:
    return {"apiVersion": INGRESSCLASSPARAMS.api_version, "kind": INGRESSCLASSPARAMS.kind,
            "metadata": _metadata(name), "spec": spec}


def secret(name: str, data: Mapping[str, str], *,
           namespace: str | None = DEFAULT_NAMESPACE) -> Obj:
    """A Secret holding `data` (plain text here, base64 in the object)."""
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": _metadata(name, namespace=namespace, uid=f"uid-{name}",
                                  resource_version="1"),
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


# ---- TargetGroupBindings ---------------------------------------------------------------------

def target_group_binding(name: str, *, service: str, port: int | str = 80,
                         arn: str | None = None, tg_name: str | None = None,
                         target_type: str | None = "ip", multi_cluster: bool = False,
                         namespace: str | None = None, extra: Obj | None = None) -> Obj:
    """A binding of `service`'s `port` to a target group given by ARN or name; `extra` spec
    fields are merged last."""
    spec: Obj = {"serviceRef": {"name": service, "port": port}}
    if arn:
        spec["targetGroupARN"] = arn
    if tg_name:
        spec["targetGroupName"] = tg_name
    if target_type:
        spec["targetType"] = target_type
    if multi_cluster:
        spec["multiClusterTargetGroup"] = True
    spec.update(extra or {})
    return {"apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
            "metadata": _metadata(name, namespace=namespace), "spec": spec}


# ---- Pods -------------------------------------------------------------------------------------

def pod(name: str, *, namespace: str | None = DEFAULT_NAMESPACE,
        labels: Mapping[str, str] | None = None, gates: Sequence[str] = (),
        conditions: Mapping[str, str] | None = None, uid: str | None = None,
        ip: str | None = None) -> Obj:
    """A pod with readiness gates `gates` (condition types) and `conditions` ({type: status});
    one container."""
    spec: Obj = {"containers": [{"name": "app", "image": "nginx"}]}
    if gates:
        spec["readinessGates"] = [{"conditionType": g} for g in gates]
    status: Obj = {"conditions": [{"type": t, "status": v}
                                  for t, v in (conditions or {}).items()]}
    if ip:
        status["podIP"] = ip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _metadata(name, namespace=namespace, uid=uid or f"uid-{name}",
                                  labels=labels or {}),
            "spec": spec, "status": status}


# ---- reading what the API server holds --------------------------------------------------------

def with_hostname(obj: Obj, hostname: str = "k8s-lb-0123456789.elb.amazonaws.com") -> Obj:
    """`obj` with a load balancer's DNS name in its status, as the controller writes it after
    a deploy."""
    obj.setdefault("status", {})["loadBalancer"] = {"ingress": [{"hostname": hostname}]}
    return obj


def hostname(obj: Obj | None) -> str | None:
    """The load balancer's DNS name in a Service's or Ingress's status."""
    items = (((obj or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return str(items[0]["hostname"]) if items and items[0].get("hostname") else None


def condition(obj: Obj | None, type_: str) -> Obj | None:
    """A copy of the status condition of `type_`, None when there is none."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def annotation(obj: Obj | None, key: str) -> str:
    return str((((obj or {}).get("metadata") or {}).get("annotations") or {}).get(key) or "")
