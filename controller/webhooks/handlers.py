"""The admission handlers aiolbc serves, one per webhook of `manifests/webhook/`. Each turns an
AdmissionRequest into a call of the code the reconcilers use (`controller.ingress.admit`,
`controller.targetgroupbinding.BindingAdmission`, `gates_for`), and its answer into an
AdmissionResponse: bad input (`InvalidInput`) is a denial with the reconciler's text, objects
that do not exist yet are warnings, AWS failures are errors (the webhook's failurePolicy then
decides).

Handlers read the informer caches, and wait until they are synced: a replica that has just
started answers late rather than wrongly (the API server's timeout, then the failurePolicy,
bound the wait)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from controller import ingress
from controller.aws import AWSError
from controller.errors import InvalidInput
from controller.ingress.exclusions import GroupNamespaces
from controller.targetgroupbinding import BindingAdmission, gates_for, with_gates
from runtime.informer import SharedInformer
from runtime.objects import Obj, dig
from runtime.webhook import AdmissionRequest, AdmissionResponse, allowed, denied, errored, patched

log = structlog.get_logger("webhooks")

# Upstream's paths, so that either controller's webhook configurations reach the other's server.
MUTATE_POD: Final = "/mutate-v1-pod"
MUTATE_SERVICE: Final = "/mutate-v1-service"
MUTATE_TARGETGROUPBINDING: Final = "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
VALIDATE_TARGETGROUPBINDING: Final = "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
VALIDATE_INGRESS: Final = "/validate-networking-v1-ingress"
VALIDATE_INGRESSCLASSPARAMS: Final = "/validate-elbv2-k8s-aws-v1beta1-ingressclassparams"


def _object(request: AdmissionRequest) -> Obj:
    """The object written, with the request's namespace: a create by generateName, or one
    posted without metadata.namespace, has it only there."""
    obj = dict(request.object or {})
    meta = dict(obj.get("metadata") or {})
    if request.namespace and not meta.get("namespace"):
        meta["namespace"] = request.namespace
    obj["metadata"] = meta
    return obj


def _old(request: AdmissionRequest) -> Obj | None:
    return request.old_object if request.operation == "UPDATE" else None


async def _synced(informers: Sequence[SharedInformer]) -> None:
    await asyncio.gather(*(i.wait_for_sync() for i in informers if not i.has_synced))


def _denial(exc: InvalidInput) -> AdmissionResponse:
    return denied(str(exc))


@dataclass(frozen=True, slots=True)
class PodReadinessGateMutator:
    """`mpod.elbv2.k8s.aws`: readiness gates for new pods in opted-in namespaces."""

    bindings: SharedInformer
    services: SharedInformer
    enabled: bool = True  # --enable-pod-readiness-gate-inject

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if not self.enabled or request.operation != "CREATE":
            return allowed()
        await _synced((self.bindings, self.services))
        pod = _object(request)
        namespace = str(pod["metadata"].get("namespace") or "")
        gates = gates_for(pod, namespace, bindings=self.bindings.store,
                          services=self.services.store)
        return patched(pod, with_gates(pod, gates))


@dataclass(frozen=True, slots=True)
class TargetGroupBindingMutator:
    """`mtargetgroupbinding.elbv2.k8s.aws`: a new binding's defaults from its target group."""

    admission: BindingAdmission

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation != "CREATE":
            return allowed()
        tgb = _object(request)
        try:
            return patched(tgb, await self.admission.default(tgb))
        except InvalidInput as exc:
            return _denial(exc)
        except AWSError as exc:
            return errored(500, f"unable to describe the target group: {exc}")


@dataclass(frozen=True, slots=True)
class TargetGroupBindingValidator:
    """`vtargetgroupbinding.elbv2.k8s.aws`."""

    admission: BindingAdmission
    bindings: SharedInformer
    services: SharedInformer | None = None  # the networking policy's target ports

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return allowed()
        await _synced((self.bindings, *((self.services,) if self.services else ())))
        try:
            warnings = await self.admission.validate(_object(request), _old(request))
        except InvalidInput as exc:
            return _denial(exc)
        except AWSError as exc:
            return errored(500, f"unable to describe the target group: {exc}")
        return allowed(warnings=warnings)


@dataclass(frozen=True, slots=True)
class IngressValidator:
    """`vingress.elbv2.k8s.aws`: Ingresses of our class, as their group's reconcile reads them."""

    caches: ingress.Caches
    informers: tuple[SharedInformer, ...]
    settings: ingress.BuilderSettings
    policy: GroupNamespaces = "params"  # --ingress-group-namespaces

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return allowed()
        await _synced(self.informers)
        try:
            warnings = ingress.admit(_object(request), _old(request), self.caches,
                                     self.settings, policy=self.policy)
        except InvalidInput as exc:
            return _denial(exc)
        return allowed(warnings=warnings)


@dataclass(frozen=True, slots=True)
class IngressClassParamsValidator:
    """`vingressclassparams.elbv2.k8s.aws`."""

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return allowed()
        try:
            return allowed(warnings=ingress.admit_params(_object(request)))
        except InvalidInput as exc:
            return _denial(exc)


@dataclass(frozen=True, slots=True)
class ServiceMutator:
    """`mservice.elbv2.k8s.aws` (opt-in): LoadBalancer Services without a class get ours, and
    an update that drops the class keeps the one the Service had (upstream's service mutator;
    the API server refuses a changed class anyway)."""

    load_balancer_class: str
    enabled: bool = True  # --enable-service-mutator-webhook

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        svc = _object(request)
        if (not self.enabled or request.operation not in ("CREATE", "UPDATE")
                or dig(svc, "spec", "type") != "LoadBalancer"
                or dig(svc, "spec", "loadBalancerClass")):
            return allowed()
        if request.operation == "CREATE":
            wanted = self.load_balancer_class
        else:
            wanted = dig(request.old_object or {}, "spec", "loadBalancerClass")
            if not isinstance(wanted, str) or not wanted:
                return allowed()
        mutated = {**svc, "spec": {**svc["spec"], "loadBalancerClass": wanted}}
        return patched(svc, mutated)


__all__ = ["MUTATE_POD", "MUTATE_SERVICE", "MUTATE_TARGETGROUPBINDING", "VALIDATE_INGRESS",
           "VALIDATE_INGRESSCLASSPARAMS", "VALIDATE_TARGETGROUPBINDING",
           "IngressClassParamsValidator", "IngressValidator", "PodReadinessGateMutator",
           "ServiceMutator", "TargetGroupBindingMutator", "TargetGroupBindingValidator"]
