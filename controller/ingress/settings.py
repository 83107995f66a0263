"""The Ingress controller's settings: its flags (`IngressConfig`: one declaration each, next to
the field it fills) and `Settings`, what `setup` takes: those flags whole, with the pieces every
controller shares nested (cluster scope, stack defaults, backend security group, lanes, feature
gates)."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller import flagrules
from controller.defaults import DEFAULT_INGRESS_CLASS, DEFAULT_MAX_CONCURRENT_RECONCILES
from controller.ingress.exclusions import GroupNamespaces
from controller.ingress.model import BuilderSettings
from controller.reconcilers import MAX_CONCURRENT_RECONCILES, Workers
from controller.stacksettings import StackSettings
from runtime import flagvalues
from runtime.flags import flag


def _ingress_class(value: str) -> str | None:
    # Empty is upstream's "the legacy `alb` annotation value only".
    return flagrules.dns_subdomain_problem(value) if value else None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressConfig:
    ingress_class: str = flag(
        "--ingress-class", default=DEFAULT_INGRESS_CLASS, parse=str, check=_ingress_class,
        help="the IngressClass whose Ingresses this controller serves (empty: Ingresses with "
        "the kubernetes.io/ingress.class: alb annotation, or no class at all)")
    group_namespaces: GroupNamespaces = flag(
        "--ingress-group-namespaces", default="params",
        parse=flagvalues.choice("single", "params", "any"),
        help="which namespaces an Ingress group may span: params (a group named in annotations "
        "stays in one namespace; IngressClassParams groups span the namespaces they select), "
        "single (every group in one namespace), any (upstream: any namespace joins any group)")
    disable_class_annotation: bool = flag(
        "--disable-ingress-class-annotation", default=False, parse=flagvalues.parse_bool,
        help="refuse, at admission, a new use of the kubernetes.io/ingress.class annotation "
        "naming this controller's class (Ingresses that carry it keep it)")
    disable_group_name_annotation: bool = flag(
        "--disable-ingress-group-name-annotation", default=False, parse=flagvalues.parse_bool,
        help="refuse, at admission, a new or changed alb.ingress.kubernetes.io/group.name "
        "annotation (Ingresses that carry it keep it)")
    # The Ingress controller is the one reader of Secrets (OIDC client credentials).
    required_secrets_label: str = flag(
        "--required-secrets-label", default="", parse=str, check=flagrules.label_problem,
        help="read only Secrets carrying this label (key=value); a referenced Secret without "
        "it counts as not found (empty: every referenced Secret is read)")
    max_concurrent_reconciles: int = flag(
        "--ingress-max-concurrent-reconciles", default=DEFAULT_MAX_CONCURRENT_RECONCILES,
        parse=flagvalues.parse_int, check=flagvalues.within(1, MAX_CONCURRENT_RECONCILES),
        help="how many Ingress groups are reconciled at once")

    @property
    def workers(self) -> Workers:
        return Workers(max_concurrent_reconciles=self.max_concurrent_reconciles)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings(StackSettings):
    config: IngressConfig = field(default_factory=IngressConfig)
    cleanup_poll: float = 1.0  # re-check for managed bindings still being deleted

    def builder(self) -> BuilderSettings:
        return BuilderSettings(cluster=self.cluster, ingress_class=self.config.ingress_class,
                               defaults=self.defaults, backend_sg=self.backend_sg,
                               gates=self.gates)


__all__ = ["IngressConfig", "Settings"]
