"""Resource descriptors: what the REST client needs to build a URL for a kind.

The runtime never hard-codes paths; every call names a `Resource`. Built-in descriptors for the
kinds aiolbc touches are defined here; controllers define their own CRDs the same way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """A served resource: `group` is "" for the core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def prefix(self) -> str:
        """URL prefix of the group-version, e.g. `/api/v1` or `/apis/apps/v1`."""
        return f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """Collection or object path; `namespace=None` on a namespaced kind means all namespaces."""
        parts = [self.prefix]
        if self.namespaced and namespace is not None:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource is not None:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return self.plural if not self.group else f"{self.plural}.{self.group}"


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
SECRETS = Resource("", "v1", "secrets", "Secret")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Resource("", "v1", "events", "Event")
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
INGRESSCLASSES = Resource("networking.k8s.io", "v1", "ingressclasses", "IngressClass",
                          namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
MUTATINGWEBHOOKCONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", namespaced=False)
VALIDATINGWEBHOOKCONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", namespaced=False)
CUSTOMRESOURCEDEFINITIONS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                     "CustomResourceDefinition", namespaced=False)
# Create-only reviews: who a token belongs to, and what a user may do (secure metrics).
TOKENREVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
                        namespaced=False)
SUBJECTACCESSREVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews",
                                "SubjectAccessReview", namespaced=False)

