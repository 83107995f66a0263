"""Ingress backends → target groups, managed TargetGroupBindings and rule actions.

One target group per (Ingress, Service, port), as upstream (its resource id is
`<namespace>/<ingress>-<service>:<port>`); the TargetGroupBinding that fills it has the same
name and lives in the Ingress's namespace.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from controller.annotations import AnnotationError
from controller.ingress.annotations import (
    AuthSettings,
    TargetGroupSettings,
    parse_auth,
    parse_target_control_port,
    parse_target_group,
)
from controller.ingress.authschemas import JwtValidationConfig
from controller.ingress.caches import Caches
from controller.ingress.classes import ClassParams
from controller.ingress.merge import BuildError, MissingObject
from controller.ingress.schemas import ActionSpec
from controller.model import (
    Action,
    AuthenticateCognitoAction,
    AuthenticateOidcAction,
    FixedResponseAction,
    ForwardAction,
    GroupReference,
    HealthCheck,
    HealthCheckMatcher,
    JwtClaim,
    JwtValidationAction,
    NetworkingPort,
    RedirectAction,
    Ref,
    ServiceReference,
    StackBuilder,
    Stickiness,
    TargetGroup,
    TargetGroupBindingResource,
    TargetGroupByName,
    WeightedTargetGroup,
    ingress_target_group_name,
)
from controller.networking.frontend import binding_networking
from runtime.objects import Obj, meta


@dataclass
class Backends:
    """Adds target groups and bindings to a stack as rules need them (each once)."""

    builder: StackBuilder
    caches: Caches
    cluster_name: str
    stack_id: str
    labels: Mapping[str, str]
    default_target_type: Literal["instance", "ip"]
    # Target group tags (upstream): the Ingress's tags (class parameters' winning), under its
    # backend Service's `tags`, under the class parameters', under `--default-tags`.
    default_tags: Mapping[str, str] = field(default_factory=dict)
    external_managed_tags: frozenset[str] = frozenset()
    ingress_tags: dict[str, Mapping[str, str]] = field(default_factory=dict)
    # What the targets' groups must admit (the backend group, or the managed frontend group's
    # parts without one); None: no rules are managed on them.
    target_source: GroupReference | tuple[GroupReference, ...] | None = None
    restricted_rules: bool = True
    # Upstream's --tolerate-non-existent-backend-service / -action: a rule forwarding to one
    # Service that does not exist, or naming an action annotation that does not exist, answers
    # a fixed 503; `missing` says which, per Ingress (namespace/name).
    tolerate_missing_service: bool = False
    tolerate_missing_action: bool = False
    missing: dict[str, list[str]] = field(default_factory=dict)
    ip_targets: bool = True  # the EnableIPTargetType feature gate
    weighted_target_groups: bool = True  # the WeightedTargetGroups feature gate
    refs: dict[str, Ref] = field(default_factory=dict)
    services: set[str] = field(default_factory=set)
    secrets: set[str] = field(default_factory=set)
    # Per Ingress (namespace/name), the Services whose annotations were read for it: their
    # `alb.ingress.kubernetes.io/` keys are reviewed for that Ingress.
    used: dict[str, set[str]] = field(default_factory=dict)

    def _use(self, ing: Obj, service_key: str) -> None:
        m = meta(ing)
        self.used.setdefault(f"{m.get('namespace')}/{m.get('name')}", set()).add(service_key)

    def _tolerated(self, ing: Obj, service_name: str) -> bool:
        """The Service is missing and that is tolerated: noted (and still watched for)."""
        namespace = str(meta(ing).get("namespace"))
        key = f"{namespace}/{service_name}"
        if not self.tolerate_missing_service or self.caches.services.get(key) is not None:
            return False
        self.services.add(key)
        self._missing(ing, f"backend Service {key} not found; its rules answer 503 until it "
                           "exists")
        return True

    def _missing(self, ing: Obj, what: str) -> None:
        m = meta(ing)
        key = f"{m.get('namespace')}/{m.get('name')}"
        message = f"Ingress {key}: {what}"
        found = self.missing.setdefault(key, [])
        if message not in found:
            found.append(message)

    def service(self, ing: Obj, name: str) -> Obj:
        namespace = str(meta(ing).get("namespace"))
        self.services.add(f"{namespace}/{name}")
        svc = self.caches.services.get(f"{namespace}/{name}")
        if svc is None:
            raise MissingObject(f"Ingress {namespace}/{meta(ing).get('name')}: backend "
                                f"Service {namespace}/{name} not found")
        self._use(ing, f"{namespace}/{name}")
        return svc

    def target_group(self, ing: Obj, service_name: str, port: int | str,
                     params: ClassParams | None) -> Ref:
        m = meta(ing)
        namespace, ing_name = str(m.get("namespace")), str(m.get("name"))
        rid = f"{namespace}/{ing_name}-{service_name}:{port}"
        if rid in self.refs:
            return self.refs[rid]
        svc = self.service(ing, service_name)
        svc_port = _find_port(svc, port)
        where = f"Ingress {namespace}/{ing_name}: Service {namespace}/{service_name} port {port}"
        if svc_port is None:
            raise MissingObject(f"{where} not found")
        try:
            settings = parse_target_group(
                ing, svc, default_target_type=self.default_target_type,
                params_target_type=params.target_type if params is not None else None)
        except AnnotationError as exc:
            raise BuildError(f"Ingress {namespace}/{ing_name}: {exc}") from None
        try:
            control_port = parse_target_control_port(ing, svc, service_name=service_name,
                                                     port=port)
        except AnnotationError as exc:
            raise BuildError(f"Ingress {namespace}/{ing_name}: {exc}") from None
        if control_port is not None and settings.target_type == "instance":
            # Upstream's words: the agent runs beside the pod, so it needs ip targets.
            raise BuildError(f"{where}: target control port is not supported for instance "
                             "target target group")
        if settings.target_type == "ip" and not self.ip_targets:
            raise BuildError(f"Ingress {namespace}/{ing_name}: unsupported targetType: ip when "
                             "EnableIPTargetType is false")
        traffic_port: int | str
        if settings.target_type == "instance":
            node_port = svc_port.get("nodePort")
            if not isinstance(node_port, int):
                raise BuildError(f"{where}: instance targets need a NodePort or LoadBalancer "
                                 "Service (or use target-type ip)")
            tg_port = traffic_port = node_port
        else:
            target = svc_port.get("targetPort", svc_port.get("port"))
            tg_port = target if isinstance(target, int) else 1
            # A named target port is resolved per target by the binding's controller.
            traffic_port = target if isinstance(target, int | str) else tg_port
        name = ingress_target_group_name(
            self.cluster_name, group_id=self.stack_id, ingress_namespace=namespace,
            ingress_name=ing_name, service_namespace=namespace, service_name=service_name,
            service_uid=str(meta(svc).get("uid") or ""), service_port=port,
            target_port=tg_port, target_type=settings.target_type,
            protocol=settings.protocol, protocol_version=settings.protocol_version,
            target_control_port=control_port)
        for tag in sorted(set(settings.tags) & self.external_managed_tags):
            raise BuildError(f"Ingress {namespace}/{ing_name}: backend Service "
                             f"{namespace}/{service_name}: tag {tag!r} is managed outside the "
                             "controller (--external-managed-tags)")
        tags = {**self.ingress_tags.get(f"{namespace}/{ing_name}", {}), **settings.tags,
                **(params.tag_map() if params is not None else {}), **self.default_tags}
        try:
            tg = TargetGroup(
                name=name, protocol=settings.protocol,
                protocol_version=settings.protocol_version, port=tg_port,
                target_type=settings.target_type, health_check=_health_check(settings),
                attributes=dict(settings.attributes), tags=tags,
                target_control_port=control_port)
        except ValueError as exc:
            raise BuildError(f"{where}: {_first_line(exc)}") from None
        ref = self.builder.add_target_group(rid, tg)
        ports = [NetworkingPort(port=traffic_port)]
        if isinstance(settings.hc_port, int) and settings.hc_port != traffic_port:
            ports.append(NetworkingPort(port=settings.hc_port))
        if control_port is not None:  # the load balancer reaches the agent there too
            ports.append(NetworkingPort(port=control_port))
        self.builder.add(rid, TargetGroupBindingResource(
            name=name, namespace=namespace, target_group_arn=ref,
            target_type=settings.target_type,
            service_ref=ServiceReference(name=service_name, port=port),
            multi_cluster_target_group=settings.multi_cluster,
            node_selector=(dict(settings.target_node_labels)
                           if settings.target_type == "instance" and settings.target_node_labels
                           else None),
            networking=binding_networking(self.target_source, ports,
                                          restricted=self.restricted_rules),
            labels=dict(self.labels)))
        self.refs[rid] = ref
        return ref

    def backend_actions(self, ing: Obj, backend: Any, annotated: Mapping[str, ActionSpec],
                        params: ClassParams | None) -> tuple[list[Action], str | None]:
        """Actions for an Ingress backend, and the Service name (for conditions and auth)."""
        m = meta(ing)
        where = f"Ingress {m.get('namespace')}/{m.get('name')}"
        svc_ref = backend.get("service") if isinstance(backend, dict) else None
        if not isinstance(svc_ref, dict) or not svc_ref.get("name"):
            raise BuildError(f"{where}: only Service backends are supported")
        svc_name = str(svc_ref["name"])
        port_ref = svc_ref.get("port") or {}
        if port_ref.get("name") == "use-annotation":
            spec = annotated.get(svc_name)
            if spec is None:
                if self.tolerate_missing_action:
                    self._missing(ing, f"backend {svc_name} uses annotation actions.{svc_name}, "
                                       "which is missing; its rules answer 503 until it exists")
                    return [unavailable(BACKEND_ACTION_MISSING)], svc_name
                raise BuildError(f"{where}: backend {svc_name} uses annotation actions."
                                 f"{svc_name}, which is missing")
            return [self.annotated_action(ing, spec, params)], svc_name
        if self._tolerated(ing, svc_name):
            return [unavailable(BACKEND_SERVICE_MISSING)], svc_name
        port: int | str | None = port_ref.get("number") or port_ref.get("name")
        if port is None:
            raise BuildError(f"{where}: backend Service {svc_name} names no port")
        ref = self.target_group(ing, svc_name, port, params)
        return [ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=ref)])], \
            svc_name

    def annotated_action(self, ing: Obj, spec: ActionSpec, params: ClassParams | None) -> Action:
        if spec.type == "redirect" and spec.redirect_config is not None:
            rc = spec.redirect_config
            values: dict[str, Any] = {
                k: v for k, v in (("protocol", rc.protocol), ("port", rc.port),
                                  ("host", rc.host), ("path", rc.path), ("query", rc.query))
                if v is not None}
            return RedirectAction.model_validate({"status_code": rc.status_code, **values})
        if spec.type == "fixed-response" and spec.fixed_response_config is not None:
            fc = spec.fixed_response_config
            return FixedResponseAction(status_code=fc.status_code, content_type=fc.content_type,
                                       message_body=fc.message_body)
        groups = spec.forward_groups()
        if len(groups) > 1 and not self.weighted_target_groups:
            # Upstream refuses it when it builds the API call; here before any AWS call.
            m = meta(ing)
            raise BuildError(f"Ingress {m.get('namespace')}/{m.get('name')}: a forward action "
                             f"over {len(groups)} target groups: weighted target groups feature "
                             "is disabled (feature gate WeightedTargetGroups)")
        if (len(groups) == 1 and groups[0].service_name is not None
                and self._tolerated(ing, groups[0].service_name)):
            return unavailable(BACKEND_SERVICE_MISSING)  # upstream: one Service only
        weighted: list[WeightedTargetGroup] = []
        for tgt in groups:
            weight = 1 if tgt.weight is None else tgt.weight
            if tgt.target_group_arn is not None:
                weighted.append(WeightedTargetGroup(target_group_arn=tgt.target_group_arn,
                                                    weight=weight))
                continue
            if tgt.target_group_name is not None:
                # Resolved to its ARN by the resolve stage; the qualify step checked it first.
                weighted.append(WeightedTargetGroup(target_group_arn=TargetGroupByName(
                    target_group_name=tgt.target_group_name), weight=weight))
                continue
            assert tgt.service_name is not None
            assert tgt.service_port is not None
            port: int | str = tgt.service_port
            if isinstance(port, str) and port.isdigit():
                port = int(port)
            ref = self.target_group(ing, tgt.service_name, port, params)
            weighted.append(WeightedTargetGroup(target_group_arn=ref, weight=weight))
        sticky = spec.forward_config.stickiness if spec.forward_config is not None else None
        try:
            return ForwardAction(
                target_groups=weighted,
                stickiness=Stickiness(enabled=sticky.enabled,
                                      duration_seconds=sticky.duration_seconds)
                if sticky is not None else None)
        except ValueError as exc:
            m = meta(ing)
            raise BuildError(f"Ingress {m.get('namespace')}/{m.get('name')}: "
                             f"{_first_line(exc)}") from None

    def auth(self, ing: Obj, service_name: str | None
             ) -> AuthenticateOidcAction | AuthenticateCognitoAction | None:
        m = meta(ing)
        namespace = str(m.get("namespace"))
        svc = self.caches.services.get(f"{namespace}/{service_name}") if service_name else None
        if svc is not None:
            self._use(ing, f"{namespace}/{service_name}")
        try:
            settings = parse_auth(ing, svc)
        except AnnotationError as exc:
            raise BuildError(f"Ingress {namespace}/{m.get('name')}: {exc}") from None
        if settings is None:
            return None
        if settings.cognito is not None:
            cognito = settings.cognito
            return AuthenticateCognitoAction(
                user_pool_arn=cognito.user_pool_arn,
                user_pool_client_id=cognito.user_pool_client_id,
                user_pool_domain=cognito.user_pool_domain,
                session_cookie_name=settings.session_cookie, scope=settings.scope,
                session_timeout=settings.session_timeout,
                on_unauthenticated_request=settings.on_unauthenticated,
                authentication_request_extra_params=dict(cognito.extra_params))
        return self._oidc(ing, settings)

    def _oidc(self, ing: Obj, auth: AuthSettings) -> AuthenticateOidcAction:
        assert auth.oidc is not None  # parse_auth: either cognito or oidc
        namespace = str(meta(ing).get("namespace"))
        key = f"{namespace}/{auth.oidc.secret_name}"
        self.secrets.add(key)
        secret = self.caches.secrets.get(key)
        where = f"Ingress {namespace}/{meta(ing).get('name')}"
        if secret is None:
            raise MissingObject(f"{where}: OIDC Secret {key} not found")
        data = secret.get("data") or {}
        client_id = _secret_value(data, "clientID", "clientId")
        client_secret = _secret_value(data, "clientSecret")
        if client_id is None or client_secret is None:
            raise BuildError(f"{where}: OIDC Secret {key} needs base64 keys clientID and "
                             "clientSecret")
        oidc = auth.oidc
        sm = meta(secret)
        return AuthenticateOidcAction(
            issuer=oidc.issuer, authorization_endpoint=oidc.authorization_endpoint,
            token_endpoint=oidc.token_endpoint, user_info_endpoint=oidc.user_info_endpoint,
            client_id=client_id, client_secret=client_secret,
            session_cookie_name=auth.session_cookie, scope=auth.scope,
            session_timeout=auth.session_timeout,
            on_unauthenticated_request=auth.on_unauthenticated,
            authentication_request_extra_params=dict(oidc.extra_params),
            # Stands for the credentials in the checkpoint: any change to the Secret's data
            # gives it a new resourceVersion, and nothing of the secret is digested.
            credentials_version=f"{sm.get('uid', '')}/{sm.get('resourceVersion', '')}")


def jwt_action(config: JwtValidationConfig | None) -> JwtValidationAction | None:
    if config is None:
        return None
    return JwtValidationAction(
        jwks_endpoint=config.jwks_endpoint, issuer=config.issuer,
        additional_claims=[JwtClaim.model_validate({"format": c.format, "name": c.name,
                                                    "values": c.values})
                           for c in config.additional_claims])


def secured(actions: list[Action], auth: Action | None, jwt: Action | None, *,
            owner: str) -> list[Action]:
    """A rule's actions on an HTTPS listener (upstream's buildActions): the authentication or
    the JWT validation first, never both."""
    if auth is not None and jwt is not None:
        raise BuildError(f"Ingress {owner}: authentication and jwt validation can't both be "
                         "configured")
    first = auth if auth is not None else jwt
    return [first, *actions] if first is not None else actions
# Upstream's exact answers (pkg/ingress/enhanced_backend_builder.go).
BACKEND_SERVICE_MISSING: Final = "Backend service does not exist"
BACKEND_ACTION_MISSING: Final = "Backend action does not exist"


def unavailable(message_body: str) -> FixedResponseAction:
    """The fixed 503 a rule gets for a backend that does not exist."""
    return FixedResponseAction(status_code="503", content_type="text/plain",
                               message_body=message_body)


def _secret_value(data: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        raw = data.get(key)
        if isinstance(raw, str):
            try:
                return base64.b64decode(raw, validate=True).decode().strip()
            except (binascii.Error, UnicodeDecodeError):
                return None
    return None


def _find_port(svc: Obj, port: int | str) -> dict[str, Any] | None:
    for item in (svc.get("spec") or {}).get("ports") or []:
        if not isinstance(item, dict):
            continue
        if (isinstance(port, int) and item.get("port") == port) or (
                isinstance(port, str) and item.get("name") == port):
            return item
    return None


def _health_check(settings: TargetGroupSettings) -> HealthCheck:
    grpc = settings.protocol_version == "GRPC"
    matcher = (HealthCheckMatcher(grpc_code=settings.success_codes) if grpc
               else HealthCheckMatcher(http_code=settings.success_codes))
    return HealthCheck(
        protocol=settings.hc_protocol, port=settings.hc_port, path=settings.hc_path,
        interval_seconds=settings.hc_interval, timeout_seconds=settings.hc_timeout,
        healthy_threshold=settings.healthy_threshold,
        unhealthy_threshold=settings.unhealthy_threshold, matcher=matcher)


def _first_line(exc: Exception) -> str:
    text = str(exc)
    if hasattr(exc, "errors"):
        try:
            first = exc.errors()[0]
            return str(first.get("msg", text)).removeprefix("Value error, ")
        except Exception:
            return text.splitlines()[0]
    return text.splitlines()[0] if text else type(exc).__name__
