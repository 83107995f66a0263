"""The Stack: every ELBv2 resource one Ingress group or Service wants, linked by `$ref`s."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from controller.errors import InvalidInput
from controller.model.actions import ForwardAction
from controller.model.base import (
    CERTIFICATE,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    RESOURCE_TYPES,
    SECURITY_GROUP,
    TARGET_GROUP,
    TARGET_GROUP_BINDING,
    Items,
    Model,
    Ref,
    sorted_unique,
)
from controller.model.certificate import AnyCertificate, ImportedCertificate, RequestedCertificate
from controller.model.limits import QuotaExceeded, Quotas
from controller.model.listener import Listener, ListenerRule
from controller.model.loadbalancer import LoadBalancer
from controller.model.ruleconditions import condition_value_count
from controller.model.securitygroup import SecurityGroup
from controller.model.targetgroup import TargetGroup, TargetGroupBindingResource

StackKind = Literal["ingress", "service"]
Resource = (ImportedCertificate | RequestedCertificate | SecurityGroup | LoadBalancer | Listener
            | ListenerRule | TargetGroup | TargetGroupBindingResource)

_FIELD_BY_TYPE = {
    CERTIFICATE: "certificates",
    SECURITY_GROUP: "security_groups",
    TARGET_GROUP: "target_groups",
    LOAD_BALANCER: "load_balancers",
    LISTENER: "listeners",
    LISTENER_RULE: "listener_rules",
    TARGET_GROUP_BINDING: "target_group_bindings",
}
_TYPE_BY_CLASS: dict[type[Model], str] = {
    ImportedCertificate: CERTIFICATE,
    RequestedCertificate: CERTIFICATE,
    SecurityGroup: SECURITY_GROUP,
    TargetGroup: TARGET_GROUP,
    LoadBalancer: LOAD_BALANCER,
    Listener: LISTENER,
    ListenerRule: LISTENER_RULE,
    TargetGroupBindingResource: TARGET_GROUP_BINDING,
}


class InvalidStack(InvalidInput):
    """The stack breaks a rule AWS would enforce (or moto would not): one clear message."""

    condition_reason = "InvalidModel"


def resource_type_of(resource: Resource) -> str:
    return _TYPE_BY_CLASS[type(resource)]


def refs_of(resource: Model) -> Iterator[Ref]:
    """Every `$ref` inside a resource, depth first."""
    for name in type(resource).model_fields:
        yield from _refs_in(getattr(resource, name))


def _refs_in(value: Any) -> Iterator[Ref]:
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, Model):
        yield from refs_of(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _refs_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _refs_in(item)


class StackContext(Model):
    """Where, and for which cluster, the stack is deployed. It is part of the model (and so of
    the checkpoint) because the deployer acts on it: a changed --cluster-name, region, VPC or
    set of externally managed tag keys is a changed stack, never a silent checkpoint match."""

    cluster_name: str = Field(min_length=1)
    region: str = Field(min_length=1)
    vpc_id: str = Field(min_length=1)
    # Tag keys someone else manages on our resources: the deployer never removes them.
    external_managed_tags: Items[str] = ()
    # The ListenerRulesTagging gate: off, listeners and rules are created untagged and never
    # tagged (rules are then matched by content, then priority). Left out of the canonical
    # JSON in its default state, so checkpoints taken before the gate existed still match.
    listener_rules_tagging: bool = Field(default=True, exclude_if=lambda value: value)
    # The SubnetsClusterTagCheck gate: off, subnet discovery no longer leaves out subnets
    # tagged kubernetes.io/cluster/<name> for other clusters only (upstream). Left out of the
    # canonical JSON in its default state, as the gates below.
    subnets_cluster_tag_check: bool = Field(default=True, exclude_if=lambda value: value)
    # The ALBSingleSubnet gate: on, an ALB may have subnets in one availability zone.
    alb_single_subnet: bool = Field(default=False, exclude_if=lambda value: not value)
    # The NLBHealthCheckAdvancedConfig gate: off, as upstream, a TCP/UDP/TLS target group
    # whose health check protocol, matcher, interval or timeout differ is replaced instead of
    # modified (from when AWS could not modify them).
    nlb_health_check_advanced_config: bool = Field(default=True,
                                                   exclude_if=lambda value: value)
    # The SubnetDiscoveryByReachability gate: subnet discovery falls back to route-table
    # reachability when no subnet carries the role tag.
    subnet_discovery_by_reachability: bool = Field(default=True,
                                                   exclude_if=lambda value: value)

    @field_validator("external_managed_tags", mode="after")
    @classmethod
    def _sorted(cls, value: Sequence[str]) -> tuple[str, ...]:
        return tuple(sorted_unique(tuple(value)))


class Stack(Model):
    """Stack id: the explicit group name, or `namespace/name` of the Ingress or Service."""

    id: str = Field(min_length=1)
    kind: StackKind
    context: StackContext
    certificates: dict[str, AnyCertificate] = Field(default_factory=dict)
    security_groups: dict[str, SecurityGroup] = Field(default_factory=dict)
    target_groups: dict[str, TargetGroup] = Field(default_factory=dict)
    load_balancers: dict[str, LoadBalancer] = Field(default_factory=dict)
    listeners: dict[str, Listener] = Field(default_factory=dict)
    listener_rules: dict[str, ListenerRule] = Field(default_factory=dict)
    target_group_bindings: dict[str, TargetGroupBindingResource] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Stack:
        # One load balancer, or an Ingress group's ALB and its frontend NLB.
        types = [lb.type for lb in self.load_balancers.values()]
        if len(types) != len(set(types)):
            raise InvalidStack(f"stack {self.id}: at most one load balancer of each type")
        for tid, tg in self.target_groups.items():
            target = tg.load_balancer_target
            if target is None:
                continue
            alb = self.load_balancers.get(target.load_balancer)
            if alb is None or alb.type != "application":
                raise InvalidStack(f"target group {tid}: {target.load_balancer} is no "
                                   "application load balancer of the stack")
            alb_ref = Ref.to(LOAD_BALANCER, target.load_balancer, "loadBalancerARN").ref
            if not any(li.load_balancer_arn.ref == alb_ref and li.port == target.port
                       for li in self.listeners.values()):
                # AWS registers an ALB only on a port it listens on.
                raise InvalidStack(f"target group {tid}: load balancer {target.load_balancer} "
                                   f"has no listener on port {target.port}")
        rank = {t: i for i, t in enumerate(RESOURCE_TYPES)}
        for rtype, rid, res in self.iter_resources():
            for ref in refs_of(res):
                ttype, tid, _ = ref.target
                if tid not in self.resources_of(ttype):
                    raise InvalidStack(f"{rtype}/{rid}: {ref.ref} points at no resource")
                if rank[ttype] >= rank[rtype]:
                    raise InvalidStack(f"{rtype}/{rid}: {ref.ref} must point at an earlier type")
        ports: dict[tuple[str, int], str] = {}
        for lid, listener in self.listeners.items():
            key = (listener.load_balancer_arn.ref, listener.port)
            if key in ports:
                raise InvalidStack(
                    f"listeners {ports[key]} and {lid} both use port {listener.port}"
                )
            ports[key] = lid
        lb_types = {
            Ref.to(LOAD_BALANCER, i, "loadBalancerARN").ref: lb.type
            for i, lb in self.load_balancers.items()
        }
        priorities: dict[tuple[str, int], str] = {}
        for rid, rule in self.listener_rules.items():
            key = (rule.listener_arn.ref, rule.priority)
            if key in priorities:
                raise InvalidStack(
                    f"rules {priorities[key]} and {rid} share priority {rule.priority}"
                )
            priorities[key] = rid
        for lid, listener in self.listeners.items():
            lb_type = lb_types.get(listener.load_balancer_arn.ref)
            alb_only = listener.protocol in ("HTTP", "HTTPS")
            if lb_type is not None and alb_only != (lb_type == "application"):
                raise InvalidStack(f"listener {lid}: {listener.protocol} on a {lb_type} LB")
        return self

    def resources_of(self, resource_type: str) -> dict[str, Any]:
        result: dict[str, Any] = getattr(self, _FIELD_BY_TYPE[resource_type])
        return result

    def iter_resources(self) -> Iterator[tuple[str, str, Resource]]:
        """(type, id, resource) in dependency order: security groups, target groups, load
        balancer, listeners, rules, bindings; ids sorted within a type."""
        for rtype in RESOURCE_TYPES:
            items = self.resources_of(rtype)
            for rid in sorted(items):
                yield rtype, rid, items[rid]

    def actions(self) -> Iterator[tuple[str, str, Sequence[Any]]]:
        """(type, id, actions) of every listener and rule, in dependency order."""
        for rtype, rid, res in self.iter_resources():
            if isinstance(res, Listener):
                yield rtype, rid, res.default_actions
            elif isinstance(res, ListenerRule):
                yield rtype, rid, res.actions

    def forward_target_group_refs(self) -> set[str]:
        """Resource ids of target groups that some action forwards to."""
        used: set[str] = set()
        groups = [lis.default_actions for lis in self.listeners.values()]
        groups += [rule.actions for rule in self.listener_rules.values()]
        for actions in groups:
            for action in actions:
                if isinstance(action, ForwardAction):
                    for tg in action.target_groups:
                        if isinstance(tg.target_group_arn, Ref):
                            used.add(tg.target_group_arn.target[1])
        return used


class StackQuotaExceeded(InvalidStack):
    """InvalidStack past one of AWS's quotas; `exceeded` says which."""

    def __init__(self, exceeded: QuotaExceeded) -> None:
        super().__init__(str(exceeded))
        self.exceeded = exceeded


def check_quotas(stack: Stack, quotas: Quotas) -> None:
    """StackQuotaExceeded when the stack needs more than the account's quotas allow."""
    try:
        _check_quotas(stack, quotas)
    except QuotaExceeded as exc:
        raise StackQuotaExceeded(exc) from None


def _over(where: str, quota: str, limit: int, needed: int, flag: str | None = None) -> None:
    if needed > limit:
        raise QuotaExceeded(where=where, quota=quota, limit=limit, needed=needed, flag=flag)


def _check_quotas(stack: Stack, quotas: Quotas) -> None:
    for lid, lb in stack.load_balancers.items():
        where = f"load balancer {lb.name}"
        _over(where, "security groups", quotas.security_groups_per_load_balancer,
              len(lb.security_groups))
        alb = lb.type == "application"
        ref = Ref.to(LOAD_BALANCER, lid, "loadBalancerARN").ref
        _over(where, "listeners", quotas.listeners_per_load_balancer,
              sum(li.load_balancer_arn.ref == ref for li in stack.listeners.values()))
        if not alb:
            continue
        by_listener: dict[str, int] = {}
        for rule_id, rule in sorted(stack.listener_rules.items()):
            listener = rule.listener_arn.target[1]
            by_listener[listener] = by_listener.get(listener, 0) + 1
            _over(f"{where}: rule {rule_id}", "condition values in one rule",
                  quotas.condition_values_per_rule,
                  sum(condition_value_count(c) for c in rule.conditions),
                  "--max-condition-values-per-rule")
        for listener_id, count in sorted(by_listener.items()):
            _over(f"{where}: listener {listener_id}", "rules besides the default one",
                  quotas.rules_per_listener, count, "--max-rules-per-listener")
        _over(where, "rules", quotas.rules_per_application_load_balancer,
              len(stack.listener_rules))
        # A frontend NLB's target groups (target type alb) are the NLB's, not the ALB's.
        _over(where, "target groups", quotas.target_groups_per_application_load_balancer,
              sum(tg.target_type != "alb" for tg in stack.target_groups.values()),
              "--max-target-groups-per-load-balancer")
        for listener_id, li in sorted(stack.listeners.items()):
            if li.load_balancer_arn.ref == ref and isinstance(li.certificates, tuple | list):
                _over(f"{where}: listener {listener_id}",
                      "certificates besides the default one", quotas.certificates_per_listener,
                      max(0, len(li.certificates) - 1), "--max-certificates-per-listener")
        extra = sum(max(0, len(li.certificates) - 1) for li in stack.listeners.values()
                    if isinstance(li.certificates, tuple | list))
        _over(where, "certificates besides the listeners' default ones",
              quotas.certificates_per_application_load_balancer, extra)


class StackBuilder:
    """Collects resources, hands out `$ref`s to them, and validates the whole at `build()`."""

    def __init__(self, stack_id: str, *, kind: StackKind, context: StackContext) -> None:
        self._id = stack_id
        self._kind: StackKind = kind
        self._context = context
        self._resources: dict[str, dict[str, Resource]] = {t: {} for t in RESOURCE_TYPES}

    def add(self, resource_id: str, resource: Resource) -> None:
        rtype = resource_type_of(resource)
        if resource_id in self._resources[rtype]:
            raise InvalidStack(f"{rtype}/{resource_id} added twice")
        self._resources[rtype][resource_id] = resource

    def add_certificate(self, resource_id: str, certificate: AnyCertificate) -> Ref:
        self.add(resource_id, certificate)
        return Ref.to(CERTIFICATE, resource_id, "certificateARN")

    def add_security_group(self, resource_id: str, sg: SecurityGroup) -> Ref:
        self.add(resource_id, sg)
        return Ref.to(SECURITY_GROUP, resource_id, "groupID")

    def add_target_group(self, resource_id: str, tg: TargetGroup) -> Ref:
        self.add(resource_id, tg)
        return Ref.to(TARGET_GROUP, resource_id, "targetGroupARN")

    def add_load_balancer(self, resource_id: str, lb: LoadBalancer) -> Ref:
        self.add(resource_id, lb)
        return Ref.to(LOAD_BALANCER, resource_id, "loadBalancerARN")

    def add_listener(self, resource_id: str, listener: Listener) -> Ref:
        self.add(resource_id, listener)
        return Ref.to(LISTENER, resource_id, "listenerARN")

    def add_rule(self, resource_id: str, rule: ListenerRule) -> Ref:
        self.add(resource_id, rule)
        return Ref.to(LISTENER_RULE, resource_id, "ruleARN")

    def build(self) -> Stack:
        document: dict[str, Any] = {"id": self._id, "kind": self._kind,
                                    "context": self._context}
        for rtype, items in self._resources.items():
            document[_FIELD_BY_TYPE[rtype]] = dict(items)
        try:
            return Stack.model_validate(document)
        except ValidationError as exc:
            raise InvalidStack(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """pydantic's report reduced to `location: message` lines, without its URLs."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(lines)
