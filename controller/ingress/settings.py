"""The Ingress controller's settings: its flags (`IngressConfig`: one declaration each, next to
the field it fills) and `Settings`, what `setup` takes: those flags whole, with the pieces every
controller shares nested (cluster scope, stack defaults, backend security group, lanes, feature
gates)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from controller import flagrules, validators
from controller.defaults import (
    DEFAULT_INGRESS_CLASS,
    DEFAULT_MAX_CONCURRENT_RECONCILES,
    DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_ACTION,
    DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_SERVICE,
)
from controller.deploy import DeployerSettings
from controller.gates import enabled as gate_enabled
from controller.ingress.addons import AddonSettings
from controller.ingress.exclusions import GroupNamespaces
from controller.ingress.model import BuilderSettings
from controller.model import Quotas
from controller.reconcilers import MAX_CONCURRENT_RECONCILES, Workers
from controller.stacksettings import StackSettings
from runtime import flagvalues
from runtime.flags import flag


def _authority_arns(value: frozenset[str]) -> str | None:
    bad = sorted(arn for arn in value if not arn.startswith("arn:"))
    return f"not an ARN: {', '.join(bad)}" if bad else None


def _pca_arn(value: str) -> str | None:
    return validators.pca_arn_problem(value) if value else None


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
    tolerate_non_existent_backend_service: bool = flag(
        "--tolerate-non-existent-backend-service",
        default=DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_SERVICE, parse=flagvalues.parse_bool,
        help="a rule forwarding to one backend Service that does not exist answers a fixed 503 "
        "(with a Warning naming it) instead of failing its Ingress")
    tolerate_non_existent_backend_action: bool = flag(
        "--tolerate-non-existent-backend-action",
        default=DEFAULT_TOLERATE_NON_EXISTENT_BACKEND_ACTION, parse=flagvalues.parse_bool,
        help="a rule whose use-annotation backend has no actions.<name> annotation answers a "
        "fixed 503 (with a Warning naming it) instead of failing its Ingress")
    allowed_certificate_authority_arns: frozenset[str] = flag(
        "--allowed-certificate-authority-arns", default=frozenset(),
        parse=flagvalues.parse_names, check=_authority_arns,
        help="certificate discovery considers only the ACM certificates issued by one of these "
        "private certificate authorities (comma-separated ARNs; empty: every issued "
        "certificate, as upstream)")
    enable_secret_certificates: bool = flag(
        "--enable-secret-certificates", default=False, parse=flagvalues.parse_bool,
        help="import the certificate of an Ingress's spec.tls[].secretName Secret (type "
        "kubernetes.io/tls, in the Ingress's namespace) into ACM and serve it on its HTTPS "
        "listeners, re-imported when the Secret changes (upstream ignores secretName)")
    default_pca_arn: str = flag(
        "--default-pca-arn", default="", parse=str.strip, check=_pca_arn,
        help="the ACM Private CA that issues the certificates created for Ingresses "
        "(create-acm-cert, with the EnableCertificateManagement feature gate) that name none "
        "in acm-pca-arn; empty: public certificates validated through Route53 DNS records")
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

    # AWS's quotas an Ingress group is planned against (Elastic Load Balancing quotas, AWS's
    # defaults): a member that would take its group past one is left out of it alone.
    max_rules_per_listener: int = flag(
        "--max-rules-per-listener", default=100, parse=flagvalues.parse_int,
        check=flagvalues.within(1, 10000),
        help="listener rules an ALB listener may have besides its default rule (AWS's quota): "
        "an Ingress that would take its group past it is left out of the group")
    max_target_groups_per_load_balancer: int = flag(
        "--max-target-groups-per-load-balancer", default=100, parse=flagvalues.parse_int,
        check=flagvalues.within(1, 10000),
        help="target groups an ALB may forward to (AWS's quota): an Ingress that would take "
        "its group past it is left out of the group")
    max_condition_values_per_rule: int = flag(
        "--max-condition-values-per-rule", default=5, parse=flagvalues.parse_int,
        check=flagvalues.within(1, 5),
        help="condition values one listener rule may have (AWS's quota, 5 at most): an Ingress "
        "with a rule past it is left out of its group")
    max_certificates_per_listener: int = flag(
        "--max-certificates-per-listener", default=25, parse=flagvalues.parse_int,
        check=flagvalues.within(1, 10000),
        help="certificates an HTTPS listener may have besides its default one (AWS's quota): "
        "an Ingress that would take its group past it is left out of the group")

    # Upstream's addon switches (pkg/config/addons_config.go): off, an Ingress asking for the
    # addon is refused (upstream ignores it), one asking for none is told it is not acted on.
    enable_waf: bool = flag(
        "--enable-waf", default=True, parse=flagvalues.parse_bool,
        help="act on WAF Classic (regional) web ACL associations of ALBs (waf-acl-id)")
    enable_wafv2: bool = flag(
        "--enable-wafv2", default=True, parse=flagvalues.parse_bool,
        help="act on WAFv2 web ACL associations of ALBs (wafv2-acl-arn, wafv2-acl-name, "
        "IngressClassParams wafv2AclArn and wafv2AclName)")
    enable_shield: bool = flag(
        "--enable-shield", default=True, parse=flagvalues.parse_bool,
        help="act on Shield Advanced protection of ALBs (shield-advanced-protection)")

    @property
    def addons(self) -> AddonSettings:
        return AddonSettings(waf=self.enable_waf, wafv2=self.enable_wafv2,
                             shield=self.enable_shield)

    @property
    def quotas(self) -> Quotas:
        return Quotas(rules_per_listener=self.max_rules_per_listener,
                      target_groups_per_application_load_balancer=(
                          self.max_target_groups_per_load_balancer),
                      condition_values_per_rule=self.max_condition_values_per_rule,
                      certificates_per_listener=self.max_certificates_per_listener)

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
                               gates=self.gates, addons=self.config.addons,
                               quotas=self.config.quotas,
                               tolerate_missing_service=(
                                   self.config.tolerate_non_existent_backend_service),
                               tolerate_missing_action=(
                                   self.config.tolerate_non_existent_backend_action),
                               allowed_certificate_authorities=(
                                   self.config.allowed_certificate_authority_arns),
                               secret_certificates=self.config.enable_secret_certificates,
                               certificate_management=self.certificate_management,
                               default_pca_arn=self.config.default_pca_arn)

    @property
    def plan_annotation(self) -> bool:
        """The IngressPlanAnnotation gate: the group's model in a member's dry-run-plan."""
        return gate_enabled(self.gates, "IngressPlanAnnotation")

    @property
    def certificate_management(self) -> bool:
        return gate_enabled(self.gates, "EnableCertificateManagement")

    @property
    def deployer(self) -> DeployerSettings:
        # `super()` without arguments does not work in a slotted dataclass.
        shared: DeployerSettings = StackSettings.deployer.__get__(self)
        return dataclasses.replace(shared,
                                   manage_certificates=(self.config.enable_secret_certificates
                                                        or self.certificate_management))


__all__ = ["IngressConfig", "Settings"]
