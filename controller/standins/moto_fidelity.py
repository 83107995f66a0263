"""Where moto's ELBv2, WAFv2 or Shield model answers differently from AWS's documented API in
a way the controller meets, the stand-in follows AWS. Applied once to the in-process moto
server by `MotoStandIn`.

- `ModifyListener` (AWS API reference): `Protocol` may be HTTP, HTTPS, TCP, TLS, UDP, TCP_UDP or
  GENEVE; `Certificates` apply to HTTPS and TLS listeners; `AlpnPolicy` applies to TLS
  listeners. moto 5.2 refuses TLS, UDP and TCP_UDP with `UnsupportedProtocol`, keeps
  certificates only for HTTPS and drops `AlpnPolicy`, so an NLB listener could never be
  changed to or from TLS, nor its ALPN policy edited.
- `ModifyTargetGroup`: `Matcher.HttpCode` applies whenever the health check protocol is HTTP or
  HTTPS, including an NLB's TCP target group with HTTP health checks (codes 200..599). moto
  stores it only for HTTP(S) target groups and silently drops it otherwise.
- `DeleteSecurityGroup` (EC2 API reference): "If you attempt to delete a security group that is
  associated with an instance or network interface, is referenced by another security group in
  the same VPC, or has a VPC association, the operation fails" with `DependencyViolation`; a
  load balancer's network interfaces are in its groups. moto deletes the group regardless.
- `RevokeSecurityGroupIngress` and duplicate checks: a rule is its protocol, ports and source;
  its description is not part of it ("you do not need to specify the description to revoke
  the rule", and a second rule differing only in its description is `InvalidPermission.
  Duplicate`). moto compares a security-group source with its description, so a rule granted
  with one could not be revoked without it.
- `UpdateSecurityGroupRuleDescriptionsIngress` (EC2 API reference): a rule named that the group
  does not have is `InvalidPermission.NotFound` ("The specified rule does not exist in this
  security group"), and then no description changes. moto skips such a rule silently and
  updates the others, so a description update racing a revocation would look like success.
- `SetSecurityGroups` (ELBv2 API reference): `EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic`
  ("on" or "off", network load balancers with security groups) is stored, answered and shown by
  `DescribeLoadBalancers`; moto ignores it.
- `DescribeTargetGroups` (ELBv2 API reference): answers at most `PageSize` target groups (1 to
  400, 400 when not given) and a `NextMarker` while more follow, the next page starting after
  the `Marker` given. moto answers every target group in one page whatever is asked, so a
  region listing would look cheaper here than against AWS.
- Actions of type `jwt-validation` (ELBv2 API reference, `JwtValidationActionConfig`): accepted
  by `CreateRule`, `ModifyRule`, `CreateListener` and `ModifyListener` with `JwksEndpoint` (a
  full `https://` URL, at most 256 characters), `Issuer` (at most 256) and up to 10
  `AdditionalClaims` (`Format` one of single-string, string-array, space-separated-values; a
  `Name` other than exp, iss, nbf and iat; 1 to 10 `Values` of at most 256 characters, without
  spaces for space-separated-values), each violation a `ValidationError`, and answered back as
  sent. moto 5.2 refuses the type (`ValidationError`, "Member must satisfy enum value set").
- `RegisterTargets` on a target group of target type `alb` (ELBv2 API reference,
  `TargetDescription`; "Application Load Balancers as targets"): the target is the ARN of an
  Application Load Balancer in the target group's VPC, with a listener on the target's port
  (`InvalidTarget` otherwise), and the group holds a single one (`TooManyTargets`). moto
  registers any string, so a frontend NLB's registration made before its ALB listens, or of
  the wrong load balancer, would look like success.
- WAFv2 `AssociateWebACL` (WAFv2 API reference): a resource has at most one web ACL; associating
  another replaces it. moto adds the resource to the new web ACL and leaves it in the old one,
  whose association `GetWebACLForResource` keeps answering.
- Shield `GetSubscriptionState` (Shield API reference): `ACTIVE` or `INACTIVE`. moto has no such
  operation; here it answers from moto's subscription (`CreateSubscription`).
- `ImportCertificate` with `CertificateArn` (ACM API reference, "reimport"): the certificate
  keeps its ARN, its tags and its associations; tags may not be given ("You cannot apply tags
  when reimporting a certificate", `ValidationException`), and only an imported certificate can
  be reimported. moto replaces the certificate with a new one without tags (so a re-imported
  certificate would no longer look like its owner's) and takes tags and any type.
- `RequestCertificate` (ACM user guide, "DNS validation"): a public (AMAZON_ISSUED) certificate
  stays PENDING_VALIDATION until the CNAME record ACM names for each of its domain names exists
  in Route53; moto issues it after a fixed wait instead. Here it is issued once every record is
  in a hosted zone of the account (moto's own Route53), so a test sees what the controller's
  records do. A Private CA's certificate is issued at once (as moto does).
- `ListCertificates`: without `Includes.keyTypes` only `RSA_2048` certificates are listed
  ("Default filtering returns only RSA_2048 certificates"); moto lists every key type, so a
  caller that forgot the filter would find ECDSA certificates here and not in AWS.
"""

from __future__ import annotations

import inspect
from typing import Any

_PROTOCOLS = ("HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "GENEVE")
_applied = False


def apply() -> None:
    """Patch moto's ELBv2 backend (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.elbv2.exceptions import ELBClientError as RESTError
    from moto.elbv2.models import ELBv2Backend
    from moto.elbv2.responses import ELBV2Response

    original = ELBv2Backend.modify_listener

    def modify_listener(self: Any, arn: str, port: str | None = None,
                        protocol: str | None = None, ssl_policy: str | None = None,
                        certificates: list[dict[str, Any]] | None = None,
                        actions: list[dict[str, Any]] | None = None) -> Any:
        if protocol is not None and protocol not in _PROTOCOLS:
            raise RESTError("UnsupportedProtocol", f"Protocol {protocol} is not supported")
        if protocol not in ("TLS", "UDP", "TCP_UDP", "GENEVE"):
            return original(self, arn, port, protocol, ssl_policy, certificates, actions)
        # moto's own checks know only HTTP(S) and TCP: run them as TCP, then set what AWS
        # would have stored.
        listener = original(self, arn, port, "TCP", ssl_policy, [], actions)
        listener.protocol = protocol
        if protocol == "TLS":
            if certificates:
                arn0 = certificates[0]["CertificateArn"]
                if not self._certificate_exists(certificate_arn=arn0):
                    raise RESTError("CertificateNotFound", f"Certificate {arn0} not found")
                listener.certificate = arn0
                listener.certificates = [c["CertificateArn"] for c in certificates]
            elif not listener.certificates:
                raise RESTError("InvalidConfigurationRequest",
                                "You must provide a list containing exactly one certificate "
                                "if the listener protocol is TLS.")
        return listener

    response_original = ELBV2Response.modify_listener

    def modify_listener_response(self: Any) -> Any:
        result = response_original(self)
        alpn = self._get_param("AlpnPolicy")
        if alpn:
            listener = self.elbv2_backend.describe_listeners(
                load_balancer_arn=None, listener_arns=[self._get_param("ListenerArn")])[0]
            listener.alpn_policy = list(alpn)
        return result

    tg_original = ELBv2Backend.modify_target_group

    tg_signature = inspect.signature(tg_original)

    def modify_target_group(self: Any, *args: Any, **kwargs: Any) -> Any:
        target_group = tg_original(self, *args, **kwargs)
        codes = tg_signature.bind(self, *args, **kwargs).arguments.get("http_codes")
        if codes is not None and str(target_group.health_check_protocol).upper() in (
                "HTTP", "HTTPS"):
            target_group.matcher["HttpCode"] = codes
        return target_group

    ELBv2Backend.modify_listener = modify_listener  # type: ignore[method-assign]
    ELBv2Backend.modify_target_group = modify_target_group  # type: ignore[method-assign]
    ELBV2Response.modify_listener = modify_listener_response  # type: ignore[method-assign]
    _security_group_dependencies()
    _rules_without_descriptions()
    _descriptions_of_existing_rules()
    _private_link_inbound_rules()
    _paged_target_groups()
    _jwt_validation_actions()
    _rules_per_load_balancer()
    _alb_targets()
    from controller.standins import moto_listeners

    moto_listeners.apply()
    from controller.standins import moto_subnet_mappings

    moto_subnet_mappings.apply()
    _one_web_acl_per_resource()
    _shield_subscription_state()
    _acm_reimport_and_key_types()
    _acm_dns_validation()
    _applied = True


def _security_group_dependencies() -> None:
    from moto.ec2.exceptions import DependencyViolationError
    from moto.ec2.models.security_groups import SecurityGroupBackend
    from moto.elbv2.models import elbv2_backends

    original = SecurityGroupBackend.delete_security_group

    def delete_security_group(self: Any, name: str | None = None,
                              group_id: str | None = None) -> None:
        group = (self.get_security_group_from_id(group_id) if group_id
                 else self.get_security_group_by_name_or_id(name) if name else None)
        if group is not None:
            dependent = _dependent_of(self, group.id, elbv2_backends)
            if dependent:
                raise DependencyViolationError(
                    f"resource {group.id} has a dependent object ({dependent})")
        original(self, name=name, group_id=group_id)

    SecurityGroupBackend.delete_security_group = delete_security_group  # type: ignore[method-assign]


def _dependent_of(ec2: Any, group_id: str, elbv2_backends: Any) -> str | None:
    for eni in list(getattr(ec2, "enis", {}).values()):
        if any(getattr(g, "id", None) == group_id for g in eni.group_set):
            return str(eni.id)
    try:
        elbv2 = elbv2_backends[ec2.account_id][ec2.region_name]
    except KeyError:
        elbv2 = None
    if elbv2 is not None:
        for lb in list(elbv2.load_balancers.values()):
            if group_id in (lb.security_groups or []):
                return str(lb.name)
    for groups in list(ec2.groups.values()):
        for other in list(groups.values()):
            if other.id == group_id:
                continue
            for rule in [*other.ingress_rules, *other.egress_rules]:
                if (rule.source_group or {}).get("GroupId") == group_id:
                    return str(other.id)
    return None


def _rules_without_descriptions() -> None:
    from moto.ec2.models.security_groups import SecurityGroupRule

    def source(rule: Any) -> dict[str, Any]:
        return {k: v for k, v in (rule.source_group or {}).items() if k != "Description"}

    def same_rule(self: Any, other: object) -> bool:
        if not isinstance(other, SecurityGroupRule):
            return False
        that: Any = other
        for key in ("CidrIp", "CidrIpv6"):
            if key in self.ip_range and self.ip_range.get(key) != that.ip_range.get(key):
                return False
        if (self.ip_protocol != that.ip_protocol or source(self) != source(that)
                or self.prefix_list_id != that.prefix_list_id):
            return False
        return bool(self.ip_protocol == "-1" or (self.from_port == that.from_port
                                                 and self.to_port == that.to_port))

    SecurityGroupRule.__eq__ = same_rule  # type: ignore[method-assign]


def _descriptions_of_existing_rules() -> None:
    from moto.ec2.exceptions import InvalidPermissionNotFoundError
    from moto.ec2.responses.security_groups import SecurityGroups

    original = SecurityGroups.update_security_group_rule_descriptions_ingress

    def missing(backend: Any, args: dict[str, Any]) -> bool:
        group = backend.get_security_group_by_name_or_id(args["group_name_or_id"],
                                                          args.get("vpc_id"))
        if group is None:
            return False  # moto's own answer (InvalidGroup.NotFound) follows
        sources = backend._add_source_group(
            [dict(item) for item in args.get("source_groups") or []], args.get("vpc_id"))
        rules = backend._iterate_security_rules(
            args["ip_protocol"], group.group_id, args["from_port"], args["to_port"],
            args.get("ip_ranges") or [], sources, args.get("prefix_list_ids") or [],
            is_egress=False)
        return any(rule not in group.ingress_rules for rule in rules)

    def update_ingress(self: Any) -> Any:
        if any(missing(self.ec2_backend, args)
               for args in self._process_rules_from_querystring()):
            raise InvalidPermissionNotFoundError()
        return original(self)

    SecurityGroups.update_security_group_rule_descriptions_ingress = (  # type: ignore[method-assign]
        update_ingress)


def _private_link_inbound_rules() -> None:
    from moto.core.responses import ActionResult
    from moto.elbv2.responses import ELBV2Response

    original = ELBV2Response.set_security_groups
    key = "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic"

    def set_security_groups(self: Any) -> Any:
        result = original(self)
        value = self._get_param(key)
        if value:
            arn = self._get_param("LoadBalancerArn")
            balancer = self.elbv2_backend.load_balancers.get(arn)
            if balancer is not None:
                balancer.enforce_security_group_inbound_rules_on_private_link_traffic = value
            return ActionResult({"SecurityGroupIds": self._get_param("SecurityGroups", []),
                                 key: value})
        return result

    ELBV2Response.set_security_groups = set_security_groups  # type: ignore[method-assign]


def _paged_target_groups() -> None:
    from moto.core.responses import ActionResult
    from moto.elbv2.responses import ELBV2Response

    def describe_target_groups(self: Any) -> Any:
        groups = list(self.elbv2_backend.describe_target_groups(
            self._get_param("LoadBalancerArn"), self._get_param("TargetGroupArns", []),
            self._get_param("Names", [])))
        marker = self._get_param("Marker")
        arns = [group.arn for group in groups]
        # The marker is the last ARN of the page before (opaque to callers, as AWS's is).
        start = arns.index(marker) + 1 if marker in arns else (len(groups) if marker else 0)
        size = self._get_int_param("PageSize", 400)
        page = groups[start:start + size]
        more = start + size < len(groups)
        return ActionResult({"TargetGroups": page,
                             "NextMarker": page[-1].arn if more and page else None})

    ELBV2Response.describe_target_groups = describe_target_groups  # type: ignore[method-assign]


def _alb_targets() -> None:
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import ELBv2Backend

    original = ELBv2Backend.register_targets

    def register_targets(self: Any, target_group_arn: str, instances: list[Any]) -> None:
        group = self.target_groups.get(target_group_arn)
        if group is not None and group.target_type == "alb":
            for target in instances:
                balancer = self.load_balancers.get(str(target.get("Id")))
                if (balancer is None or balancer.type != "application"
                        or balancer.vpc_id != group.vpc_id):
                    raise ELBClientError(
                        "InvalidTarget", f"The target {target.get('Id')} is not an Application "
                        "Load Balancer in the target group's VPC")
                port = int(target.get("Port") or group.port)
                if not any(int(li.port) == port for li in balancer.listeners.values()):
                    raise ELBClientError(
                        "InvalidTarget", f"The Application Load Balancer {balancer.name} has no "
                        f"listener on port {port}")
            ids = {t["Id"] for t in instances} | set(group.targets)
            if len(ids) > 1:
                raise ELBClientError("TooManyTargets", "A target group of target type alb "
                                     "holds a single Application Load Balancer")
        original(self, target_group_arn, instances)

    ELBv2Backend.register_targets = register_targets  # type: ignore[method-assign]


_JWT_FORMATS = ("single-string", "string-array", "space-separated-values")
_JWT_DEFAULT_CLAIMS = frozenset({"exp", "iss", "nbf", "iat"})


def _jwt_validation_actions() -> None:
    from moto.elbv2 import models
    from moto.elbv2.exceptions import ValidationError
    from moto.elbv2.models import ELBv2Backend

    if "jwt-validation" not in models.ALLOWED_ACTIONS:
        models.ALLOWED_ACTIONS.append("jwt-validation")
    original = ELBv2Backend._validate_actions

    def validate_actions(self: Any, actions: list[Any]) -> None:
        for index, action in enumerate(actions, start=1):
            if action.type == "jwt-validation":
                problem = _jwt_problem(action.data.get("JwtValidationConfig"))
                if problem:
                    raise ValidationError(f"Action {index}: {problem}")
        original(self, [a for a in actions if a.type != "jwt-validation"])

    ELBv2Backend._validate_actions = validate_actions  # type: ignore[method-assign]


# AWS's default quotas "Rules per Application Load Balancer" (default rules not counted) and
# "Target groups per Application Load Balancer" (unique target groups its actions use).
RULES_PER_LOAD_BALANCER = 100
TARGET_GROUPS_PER_LOAD_BALANCER = 100


def _forwarded(action: Any) -> set[str]:
    data = action if isinstance(action, dict) else getattr(action, "data", {})
    found = {str(data["TargetGroupArn"])} if data.get("TargetGroupArn") else set()
    for group in (data.get("ForwardConfig") or {}).get("TargetGroups") or []:
        if group.get("TargetGroupArn"):
            found.add(str(group["TargetGroupArn"]))
    return found


def _rules_per_load_balancer() -> None:
    """CreateRule past the rules a load balancer may have (`TooManyRules`) or forwarding to
    more target groups than it may use (`TooManyUniqueTargetGroupsPerLoadBalancer`): moto has
    neither limit."""
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import ELBv2Backend

    original = ELBv2Backend.create_rule

    def create_rule(self: Any, listener_arn: str, conditions: list[dict[str, Any]],
                    priority: int, actions: list[dict[str, Any]],
                    tags: list[dict[str, str]] | None = None) -> Any:
        listeners = self.describe_listeners(None, [listener_arn])
        lb = self.load_balancers.get(listeners[0].load_balancer_arn) if listeners else None
        if lb is not None:
            rules = [r for li in lb.listeners.values() for r in li._non_default_rules.values()]
            if len(rules) >= RULES_PER_LOAD_BALANCER:
                raise ELBClientError("TooManyRules", "You've reached the limit on the number of "
                                     "rules per load balancer.")
            used = {arn for li in lb.listeners.values() for a in li.default_actions
                    for arn in _forwarded(a)}
            used |= {arn for r in rules for a in r.actions for arn in _forwarded(a)}
            if len(used | {arn for a in actions for arn in _forwarded(a)}) > (
                    TARGET_GROUPS_PER_LOAD_BALANCER):
                raise ELBClientError(
                    "TooManyUniqueTargetGroupsPerLoadBalancer", "You've reached the limit on "
                    "the number of unique target groups per load balancer across all "
                    "listeners.")
        return original(self, listener_arn, conditions, priority, actions, tags)

    ELBv2Backend.create_rule = create_rule  # type: ignore[method-assign]


def _jwt_problem(config: Any) -> str:
    """What AWS's `JwtValidationActionConfig` constraints say of `config` ("" when none)."""
    if not isinstance(config, dict):
        return "a jwt-validation action needs a JwtValidationConfig"
    endpoint, issuer = config.get("JwksEndpoint"), config.get("Issuer")
    if not isinstance(endpoint, str) or not endpoint.startswith("https://") \
            or len(endpoint) > 256 or len(endpoint) <= len("https://"):
        return "JwksEndpoint must be a full HTTPS URL of at most 256 characters"
    if not isinstance(issuer, str) or not issuer or len(issuer) > 256:
        return "Issuer must be 1 to 256 characters"
    claims = config.get("AdditionalClaims") or []
    if len(claims) > 10:
        return "at most 10 AdditionalClaims are allowed"
    for claim in claims:
        name, fmt, values = claim.get("Name"), claim.get("Format"), claim.get("Values") or []
        if fmt not in _JWT_FORMATS:
            return f"claim format {fmt!r} is not one of {', '.join(_JWT_FORMATS)}"
        if not name or name in _JWT_DEFAULT_CLAIMS:
            return f"claim name {name!r} is not allowed (exp, iss, nbf and iat are validated " \
                   "by default)"
        if not 1 <= len(values) <= 10 or any(len(v) > 256 for v in values):
            return f"claim {name!r} needs 1 to 10 values of at most 256 characters"
        if fmt == "space-separated-values" and any(" " in v for v in values):
            return f"claim {name!r}: space-separated values cannot contain spaces"
    return ""


def _one_web_acl_per_resource() -> None:
    from moto.wafv2.models import WAFV2Backend

    original = WAFV2Backend.associate_web_acl

    def associate_web_acl(self: Any, web_acl_arn: str, resource_arn: str) -> None:
        original(self, web_acl_arn, resource_arn)
        for arn, web_acl in self.wacls.items():
            if arn != web_acl_arn and resource_arn in web_acl.associated_resources:
                web_acl.associated_resources.remove(resource_arn)

    WAFV2Backend.associate_web_acl = associate_web_acl  # type: ignore[method-assign]


def _shield_subscription_state() -> None:
    import json

    from moto.shield.responses import ShieldResponse

    def get_subscription_state(self: Any) -> str:
        active = self.shield_backend.subscription is not None
        return json.dumps({"SubscriptionState": "ACTIVE" if active else "INACTIVE"})

    ShieldResponse.get_subscription_state = get_subscription_state  # type: ignore[attr-defined]


def _acm_reimport_and_key_types() -> None:
    from moto.acm.exceptions import AWSValidationException
    from moto.acm.models import AWSCertificateManagerBackend

    original_import = AWSCertificateManagerBackend.import_certificate

    def import_certificate(self: Any, certificate: bytes, private_key: bytes,
                           chain: bytes | None, arn: str | None,
                           tags: list[dict[str, str]]) -> str:
        if arn is None or arn not in self._certificates:
            return str(original_import(self, certificate, private_key, chain, arn, tags))
        if tags:
            raise AWSValidationException("You cannot apply tags when reimporting a certificate.")
        before = self._certificates[arn]
        if before.type != "IMPORTED":
            raise AWSValidationException(f"Certificate {arn} was not imported; only an "
                                         "imported certificate can be reimported.")
        result = str(original_import(self, certificate, private_key, chain, arn, []))
        after = self._certificates[arn]
        after.tags = before.tags
        after.in_use_by = before.in_use_by
        return result

    original_list = AWSCertificateManagerBackend.list_certificates

    def list_certificates(self: Any, statuses: list[str], includes: dict[str, Any]) -> Any:
        includes = dict(includes or {})
        includes.setdefault("keyTypes", ["RSA_2048"])
        return original_list(self, statuses, includes)

    AWSCertificateManagerBackend.import_certificate = import_certificate  # type: ignore[method-assign]
    AWSCertificateManagerBackend.list_certificates = list_certificates  # type: ignore[method-assign]


def _acm_dns_validation() -> None:
    from moto.acm.models import CertBundle
    from moto.route53.models import route53_backends

    original_check = CertBundle.check

    def validated(cert: Any) -> bool:
        account = str(cert.arn).split(":")[4]
        records: set[tuple[str, str]] = set()
        for zone in route53_backends[account]["global"].zones.values():
            for rrset in zone.rrsets:
                for value in rrset.records or []:
                    if isinstance(value, dict):
                        value = value.get("Value", "")
                    records.add((str(rrset.name).rstrip(".").lower(), str(value).rstrip(".")))
        described = cert.describe()["Certificate"].get("DomainValidationOptions") or []
        return bool(described) and all(
            (str(opt["ResourceRecord"]["Name"]).rstrip(".").lower(),
             str(opt["ResourceRecord"]["Value"]).rstrip(".")) in records
            for opt in described)

    def check(self: Any) -> None:
        if self.type == "AMAZON_ISSUED" and self.status == "PENDING_VALIDATION":
            if validated(self):
                self.status = "ISSUED"
            return
        original_check(self)

    CertBundle.check = check  # type: ignore[method-assign]
