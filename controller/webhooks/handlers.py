"""The admission handlers aiolbc serves, one per webhook of `manifests/webhook/`. Each turns an
AdmissionRequest into a call of the code the reconcilers use (`controller.ingress.admit`,
`controller.targetgroupbinding.BindingAdmission`, `gates_for`), and its answer into an
AdmissionResponse: bad input (`InvalidInput`) is a denial with the reconciler's text, objects
that do not exist yet are warnings.

Every webhook fails open (`FAILURE_POLICY`, the shipped configurations' failurePolicy): the
reconcilers make the same checks and fill in the same values. So does a handler that cannot
read AWS in time (`LookupUnavailable`: AccessDenied, throttling, a timeout, a 5xx, or the read
cache's own rate limit): it admits with a warning saying what it skipped, rather than deny an
ordinary write because of AWS. The webhook server answers a handler that has not answered
within half the API server's timeout, or that raised, as that policy says.

Handlers read the informer caches, and wait until they are synced: a replica that has just
started answers late rather than wrongly (the handler's deadline, then the failurePolicy,
bound the wait)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import structlog

from controller import ingress, service
from controller.apis import ALBTARGETCONTROLCONFIGS
from controller.apis.albtargetcontrolconfig import (
    CONFIG_NAME,
    ALBTargetControlConfigSpec,
    InvalidConfig,
    parse_spec,
)
from controller.aws import AWSError, LookupUnavailable, ReadCache
from controller.errors import InvalidInput
from controller.ingress.exclusions import GroupNamespaces
from controller.lbcmetrics import ERROR_CATEGORY_ANNOTATION
from controller.model.addons import web_acl_not_found
from controller.targetgroupbinding import (
    BindingAdmission,
    gates_for,
    with_gates,
    with_server_ids,
)
from controller.webhooks.targetcontrol import (
    INJECT_LABEL,
    has_agent,
    injection_enabled,
    with_agent,
)
from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError
from runtime.failures import describe
from runtime.informer import SharedInformer
from runtime.objects import Obj, dig, key_of
from runtime.store import Store
from runtime.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    FailurePolicy,
    allowed,
    denied,
    patched,
)

log = structlog.get_logger("webhooks")

# Upstream's paths, so that either controller's webhook configurations reach the other's server.
MUTATE_POD: Final = "/mutate-v1-pod"
MUTATE_POD_SERVER_ID: Final = "/mutate-v1-pod-server-id"
# The ALB target control agent's two webhooks (a labelled namespace; a labelled pod elsewhere),
# one handler; registered only with the ALBTargetControlAgent gate on, as upstream.
MUTATE_TARGET_CONTROL_NAMESPACE: Final = "/mutate-alb-target-control-namespace-v1-pod"
MUTATE_TARGET_CONTROL_OBJECT: Final = "/mutate-alb-target-control-object-v1-pod"
MUTATE_SERVICE: Final = "/mutate-v1-service"
MUTATE_TARGETGROUPBINDING: Final = "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
VALIDATE_TARGETGROUPBINDING: Final = "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding"
VALIDATE_INGRESS: Final = "/validate-networking-v1-ingress"
VALIDATE_INGRESSCLASSPARAMS: Final = "/validate-elbv2-k8s-aws-v1beta1-ingressclassparams"
# The failurePolicy of every webhook in manifests/webhook/ (a test keeps them equal): how the
# server answers for a handler that fails or runs out of time.
FAILURE_POLICY: Final[FailurePolicy] = "Ignore"
# Except the QUIC server IDs' (upstream's Fail): a pod admitted without its ID can never get one
# (a container's environment is fixed), so its targets would never be registered; better the
# pod waits for the controller than serves nothing.
# The agent's webhooks fail closed too (upstream's Fail): a pod that asked for the sidecar and
# started without it would get the load balancer's traffic with nothing serving the target
# control port.
FAILURE_POLICIES: Final[Mapping[str, FailurePolicy]] = {
    MUTATE_POD_SERVER_ID: "Fail", MUTATE_TARGET_CONTROL_NAMESPACE: "Fail",
    MUTATE_TARGET_CONTROL_OBJECT: "Fail"}


def failure_policy(path: str) -> FailurePolicy:
    """The failurePolicy of the webhook on `path` (the shipped configurations')."""
    return FAILURE_POLICIES.get(path, FAILURE_POLICY)

# Lines a minute about reads skipped for one reason, at most: a flood of reviews while AWS
# fails must not become a flood of log lines.
_SKIPPED_LOG_INTERVAL: Final = 60.0


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


def _denial(exc: InvalidInput, *, category: str | None = None) -> AdmissionResponse:
    """A denial with the reason a reconciler's condition would give the same mistake, as an
    audit annotation (the API server's audit log keeps it; the failure metrics count it)."""
    return replace(denied(str(exc)), audit_annotations={
        ERROR_CATEGORY_ANNOTATION: category or exc.condition_reason})


@dataclass
class SkippedReads:
    """Logs that a handler went on without AWS: once per webhook and reason per minute."""

    clock: Clock = field(default_factory=RealClock)
    _last: dict[tuple[str, str], float] = field(default_factory=dict)

    def note(self, webhook: str, exc: Exception) -> None:
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        reason = cause.code if isinstance(cause, AWSError) else type(cause).__name__
        now = self.clock.now()
        last = self._last.get((webhook, reason))
        if last is not None and now - last < _SKIPPED_LOG_INTERVAL:
            return
        self._last[(webhook, reason)] = now
        log.warning("admitted without reading AWS", webhook=webhook, error=describe(exc))


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
        if not self.bindings.serves(namespace):
            # A namespace not served (or let go): no controller here would ever open the gate.
            return allowed()
        gates = gates_for(pod, namespace, bindings=self.bindings.store,
                          services=self.services.store)
        return patched(pod, with_gates(pod, gates))


@dataclass(frozen=True, slots=True)
class PodServerIdMutator:
    """`quicid.elbv2.k8s.aws`: QUIC server IDs for the containers a new pod's
    `aws-load-balancer-quic-enabled-containers` annotation names, in opted-in namespaces
    (`controller.targetgroupbinding.quic`)."""

    env_name: str  # --quic-environment-variable-name
    generate: Callable[[], Awaitable[str]]

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation != "CREATE":
            return allowed()
        pod = _object(request)
        return patched(pod, await with_server_ids(pod, self.env_name, self.generate))


@dataclass(frozen=True, slots=True)
class ALBTargetControlAgentMutator:
    """`alb-target-control.namespace.elbv2.k8s.aws` and `alb-target-control.object.elbv2.k8s.aws`:
    the ALB target control agent sidecar for a new pod that asks for it
    (`controller.webhooks.targetcontrol`), made from the ALBTargetControlConfig named
    `CONFIG_NAME` in the pod's namespace, else in the controller's. Read from the API server at
    each pod (upstream caches a config, or its absence, until it restarts)."""

    client: KubeClient
    namespaces: SharedInformer
    controller_namespace: str

    async def _namespace_labels(self, namespace: str) -> dict[str, str] | None:
        await _synced((self.namespaces,))
        obj = self.namespaces.store.get(namespace)
        if obj is None:  # upstream: a namespace it cannot read gets no agent
            return None
        return dict((obj.get("metadata") or {}).get("labels") or {})

    async def _config(self, namespace: str) -> tuple[ALBTargetControlConfigSpec | None, str]:
        """The spec, or None with what was looked at."""
        looked: list[str] = []
        for where in dict.fromkeys((namespace, self.controller_namespace)):
            if not where:
                continue
            try:
                obj = await self.client.get(ALBTARGETCONTROLCONFIGS, CONFIG_NAME, where)
            except ApiError as exc:
                looked.append(f"{where} ({exc.code or 'unreachable'})")
                continue
            return parse_spec(obj), ""
        return None, ", ".join(looked)

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation != "CREATE":
            return allowed()
        pod = _object(request)
        namespace = str(pod["metadata"].get("namespace") or "")
        if has_agent(pod):
            return allowed()
        labels = pod["metadata"].get("labels") or {}
        namespace_labels = (None if labels.get(INJECT_LABEL) in ("true", "false")
                            else await self._namespace_labels(namespace))
        if not injection_enabled(pod, namespace_labels):
            return allowed()
        try:
            spec, looked = await self._config(namespace)
            if spec is None:
                return allowed(warnings=[
                    f"no ALBTargetControlConfig {CONFIG_NAME} in namespace {looked}: the ALB "
                    f"target control agent sidecar was not added to pod {key_of(pod)}"])
            return patched(pod, with_agent(pod, spec))
        except InvalidConfig as exc:
            return _denial(exc)
        except InvalidInput as exc:
            return _denial(InvalidInput(f"pod {key_of(pod)}: {exc}"),
                           category=exc.condition_reason)


@dataclass(frozen=True, slots=True)
class TargetGroupBindingMutator:
    """`mtargetgroupbinding.elbv2.k8s.aws`: a new binding's defaults from its target group."""

    admission: BindingAdmission
    skipped: SkippedReads = field(default_factory=SkippedReads)

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation != "CREATE":
            return allowed()
        tgb = _object(request)
        try:
            return patched(tgb, await self.admission.default(tgb))
        except InvalidInput as exc:
            return _denial(exc)
        except (LookupUnavailable, AWSError) as exc:
            self.skipped.note(MUTATE_TARGETGROUPBINDING, exc)
            return allowed(warnings=[
                f"TargetGroupBinding {key_of(tgb)}: its target group could not be read ({exc}), "
                "so targetType, ipAddressType and vpcID were not filled in; the controller "
                "reads them from the target group when it reconciles"])


@dataclass(frozen=True, slots=True)
class TargetGroupBindingValidator:
    """`vtargetgroupbinding.elbv2.k8s.aws`."""

    admission: BindingAdmission
    bindings: SharedInformer
    services: SharedInformer | None = None  # the networking policy's target ports
    skipped: SkippedReads = field(default_factory=SkippedReads)

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return allowed()
        await _synced((self.bindings, *((self.services,) if self.services else ())))
        tgb = _object(request)
        try:
            warnings = await self.admission.validate(tgb, _old(request))
        except InvalidInput as exc:
            return _denial(exc)
        except (LookupUnavailable, AWSError) as exc:
            self.skipped.note(VALIDATE_TARGETGROUPBINDING, exc)
            return allowed(warnings=[
                f"TargetGroupBinding {key_of(tgb)}: not checked against its target group, "
                f"which could not be read ({exc}); the controller checks it when it reconciles "
                "and reports a refusal as a Warning Event"])
        return allowed(warnings=warnings)


@dataclass(frozen=True, slots=True)
class IngressValidator:
    """`vingress.elbv2.k8s.aws`: Ingresses of our class, as their group's reconcile reads them."""

    caches: ingress.Caches
    informers: tuple[SharedInformer, ...]
    settings: ingress.BuilderSettings
    policy: GroupNamespaces = "params"  # --ingress-group-namespaces
    # WAFv2 web ACL names are looked up as the resolve stage will (None: not checked here).
    reads: ReadCache | None = None
    skipped: SkippedReads = field(default_factory=SkippedReads)
    # --disable-ingress-class-annotation, --disable-ingress-group-name-annotation
    disable_class_annotation: bool = False
    disable_group_name_annotation: bool = False

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return allowed()
        await _synced(self.informers)
        ing = _object(request)
        try:
            warnings = ingress.admit(
                ing, _old(request), self.caches, self.settings, policy=self.policy,
                disable_class_annotation=self.disable_class_annotation,
                disable_group_name_annotation=self.disable_group_name_annotation)
        except InvalidInput as exc:
            return _denial(exc)
        if self.reads is None or not self.settings.addons.wafv2:
            return allowed(warnings=warnings)
        for name in ingress.web_acl_names(ing, self.caches, self.settings):
            try:
                found = await self.reads.web_acl_named(name)
            except (LookupUnavailable, AWSError) as exc:
                self.skipped.note(VALIDATE_INGRESS, exc)
                warnings.append(f"Ingress {key_of(ing)}: WAFv2 web ACL {name!r} not looked up "
                                f"({exc}); the controller looks it up when it reconciles")
                continue
            if found is None:
                return _denial(InvalidInput(web_acl_not_found(name)), category="WebACLNotFound")
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
    the API server refuses a changed class anyway). A Service we serve is told, as warnings,
    about its annotations we do not act on (`service.admission_warnings`) and what the
    reconciler would refuse it with (`service.admission_refusal`, when `model` is given); it is
    never denied here (upstream has no Service validation either), the reconciler refuses."""

    load_balancer_class: str
    enabled: bool = True  # --enable-service-mutator-webhook
    model: service.ModelSettings | None = None  # the Service controller's model settings
    services: Store | None = None  # the Service cache: weighted actions' backend Services

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        svc = _object(request)
        if (not self.enabled or request.operation not in ("CREATE", "UPDATE")
                or dig(svc, "spec", "type") != "LoadBalancer"):
            return allowed()
        mutated = svc
        if not dig(svc, "spec", "loadBalancerClass"):
            wanted = (self.load_balancer_class if request.operation == "CREATE"
                      else dig(request.old_object or {}, "spec", "loadBalancerClass"))
            if isinstance(wanted, str) and wanted:
                mutated = {**svc, "spec": {**svc["spec"], "loadBalancerClass": wanted}}
        warnings = service.admission_warnings(
            mutated, load_balancer_class=self.load_balancer_class,
            advanced_health_check=self.model is None or self.model.advanced_health_check)
        refusal = (service.admission_refusal(
            mutated, settings=self.model,
            services=self.services.get if self.services is not None else None)
                   if self.model is not None else None)
        return patched(svc, mutated, warnings=[*warnings, *([refusal] if refusal else [])])


__all__ = [
    "FAILURE_POLICIES",
    "FAILURE_POLICY",
    "MUTATE_POD",
    "MUTATE_POD_SERVER_ID",
    "MUTATE_SERVICE",
    "MUTATE_TARGETGROUPBINDING",
    "VALIDATE_INGRESS",
    "VALIDATE_INGRESSCLASSPARAMS",
    "VALIDATE_TARGETGROUPBINDING",
    "IngressClassParamsValidator",
    "IngressValidator",
    "PodReadinessGateMutator",
    "PodServerIdMutator",
    "ServiceMutator",
    "SkippedReads",
    "TargetGroupBindingMutator",
    "TargetGroupBindingValidator",
    "failure_policy",
]
