"""Admission webhooks, called as kube-apiserver calls them; see README.md."""

from runtime.envtest.admission.attributes import CREATE, DELETE, UPDATE, Attributes, Warnings
from runtime.envtest.admission.dispatch import Admission
from runtime.envtest.admission.services import ServiceResolver

__all__ = ["CREATE", "DELETE", "UPDATE", "Admission", "Attributes", "ServiceResolver",
           "Warnings"]
