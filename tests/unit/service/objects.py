"""Plain-dict Services as the API server serves them, for the Service tests."""

from __future__ import annotations

from typing import Any

from controller.service.annotations import PREFIX

NLB_CLASS = "service.k8s.aws/nlb"


def service(annotations: dict[str, str] | None = None, *, type_: str = "LoadBalancer",
            load_balancer_class: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Service; annotation keys without a "/" get the `service.beta.kubernetes.io/` prefix."""
    full = {(k if "/" in k else PREFIX + k): v for k, v in (annotations or {}).items()}
    body: dict[str, Any] = {
        "type": type_,
        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443,
                   "nodePort": 30443},
                  {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080,
                   "nodePort": 30080}],
        **spec,
    }
    if load_balancer_class is not None:
        body["loadBalancerClass"] = load_balancer_class
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "annotations": full},
            "spec": body}


def by_class(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return service(annotations, load_balancer_class=NLB_CLASS, **spec)
