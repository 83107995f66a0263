"""What a TargetGroupBinding's `spec.networking` may ask the controller to open: the policy a
namespace cannot exceed.

The rules land on the security groups of the targets' network interfaces, and for instance
targets, or pods on their node's interface, that is the node group every namespace shares. So
by default a binding may admit only what its own namespace's load balancers need:
- sources: the cluster's backend security group (`elbv2.k8s.aws/cluster: <cluster>`,
  `elbv2.k8s.aws/resource: backend-sg`, or `--backend-security-group`), or a managed frontend
  group (`<kind>.k8s.aws/resource: ManagedLBSecurityGroup`, or `-N` for a part of a split one)
  of one of its namespace's stacks:
  a Service's or an Ingress's own (`<kind>.k8s.aws/stack: <namespace>/<name>`), or the Ingress
  group that made the binding's target group for its namespace (the target group's tags say
  so); in the cluster's VPC and tagged for this cluster;
- ports: its target ports and its target group's health-check port (with
  `--disable-restricted-sg-rules`, which lets load balancers reach every port, any port);
  TCP and UDP are the only protocols a spec can name.
CIDR sources, other groups and other ports need an administrator's grant:
`--targetgroupbinding-networking-unrestricted-namespaces` names the namespaces that may ask for
anything (`*`: every namespace, upstream's behaviour).

A refusal names the first rule that is not allowed, by its place in the spec, in words that
depend on the spec alone, so that admission and the reconciler say the same thing. Where the
target ports are not known yet (ip targets of a named target port, no endpoints yet), ports are
not checked: no rule is placed before targets are known, and the reconcile that knows them
checks again.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from controller.apis.targetgroupbinding import Networking, NetworkingPeer, NetworkingPort
from controller.deploy.tags import resource_tag, stack_tag, tagged_for_cluster
from controller.errors import InvalidInput
from controller.model import is_managed_group_id
from controller.networking.backend import RESOURCE_TAG, RESOURCE_VALUE
from controller.networking.groupfacts import GroupFacts
from controller.networking.permissions import Permission

UNRESTRICTED_NAMESPACES_FLAG: Final = "--targetgroupbinding-networking-unrestricted-namespaces"
EVERY_NAMESPACE: Final = "*"
ALL_PORTS: Final = (0, 65535)
_KINDS: Final = ("service", "ingress")
_HINT: Final = f"a cluster administrator can allow it with {UNRESTRICTED_NAMESPACES_FLAG}"

Stack = tuple[str, str]  # (kind, stack id)


class NetworkingNotAllowed(InvalidInput):
    """`spec.networking` asks for more than the binding's namespace may have."""

    condition_reason = "NetworkingNotAllowed"


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkingPolicy:
    """`unrestricted_namespaces`: the administrator's grant (`*`: every namespace).
    `backend_group_id`: `--backend-security-group` ("" when the controller finds its own).
    `every_port`: `--disable-restricted-sg-rules`, under which load balancers may reach every
    port of their targets' groups."""

    cluster: str
    vpc_id: str
    # Which of the cluster's controllers keeps the rules ("": the default one).
    controller_id: str = ""
    unrestricted_namespaces: frozenset[str] = frozenset()
    backend_group_id: str = ""
    every_port: bool = False

    def unrestricted(self, namespace: str) -> bool:
        return (EVERY_NAMESPACE in self.unrestricted_namespaces
                or namespace in self.unrestricted_namespaces)

    def load_balancer_group(self, facts: GroupFacts | None) -> Stack | Literal["backend"] | None:
        """What the group is to this cluster: its backend group, a managed frontend group (of
        that stack), or nothing of the controller's."""
        if facts is None:
            return None
        if self.backend_group_id and facts.group_id == self.backend_group_id:
            return "backend"
        if facts.vpc_id != self.vpc_id or not tagged_for_cluster(facts.tags, self.cluster):
            return None
        if facts.tags.get(RESOURCE_TAG) == RESOURCE_VALUE:
            return "backend"
        for kind in _KINDS:
            stack = facts.tags.get(stack_tag(kind))
            if stack and is_managed_group_id(facts.tags.get(resource_tag(kind))):
                return kind, stack
        return None

    def is_cluster_group(self, facts: GroupFacts | None) -> bool:
        return self.load_balancer_group(facts) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingScope:
    """What a binding's own load balancers are, as far as its rules go. `stacks`: the stacks
    that made its target group for its namespace. `ports`: its target ports and health-check
    port; None while they cannot be told (not checked then)."""

    namespace: str
    stacks: frozenset[Stack] = frozenset()
    ports: frozenset[int] | None = None


def target_group_stacks(tags: Mapping[str, str], *, cluster: str,
                        namespace: str) -> frozenset[Stack]:
    """The stacks of this cluster that made a target group for `namespace` (its resource tag
    starts with the namespace: upstream's `<namespace>/<ingress>-<service>:<port>`)."""
    if not tagged_for_cluster(tags, cluster):
        return frozenset()
    found = set()
    for kind in _KINDS:
        stack, resource = tags.get(stack_tag(kind)), tags.get(resource_tag(kind))
        if stack and resource and resource.split("/", 1)[0] == namespace and "/" in resource:
            found.add((kind, stack))
    return frozenset(found)


def may_admit_group(policy: NetworkingPolicy, scope: BindingScope,
                    facts: GroupFacts | None) -> bool:
    """The group is one of the binding's namespace's load balancers' groups."""
    found = policy.load_balancer_group(facts)
    if found is None or found == "backend":
        return found == "backend"
    kind, stack = found
    return stack.startswith(scope.namespace + "/") or (kind, stack) in scope.stacks


def group_sources(networking: Networking) -> list[str]:
    """The security groups `networking` names as sources."""
    return sorted({peer.security_group.group_id for rule in networking.ingress
                   for peer in rule.from_ if peer.security_group is not None})


def refusal(networking: Networking, *, scope: BindingScope, policy: NetworkingPolicy,
            facts: Mapping[str, GroupFacts]) -> str | None:
    """Why `networking` may not be acted on for a binding of `scope`, or None. `facts`: the
    source groups that exist (`group_sources`)."""
    if policy.unrestricted(scope.namespace):
        return None
    ns = scope.namespace
    for i, rule in enumerate(networking.ingress):
        for j, peer in enumerate(rule.from_):
            where = f"spec.networking.ingress[{i}].from[{j}]"
            if peer.ip_block is not None:
                return (f"{where}: ipBlock {peer.ip_block.cidr}: TargetGroupBindings in "
                        f"namespace {ns} may admit only their own load balancers' security "
                        f"groups, not CIDRs ({_HINT})")
            assert peer.security_group is not None
            group_id = peer.security_group.group_id
            if not may_admit_group(policy, scope, facts.get(group_id)):
                return (f"{where}: securityGroup {group_id} is neither the cluster's backend "
                        "security group nor a managed security group of a load balancer in "
                        f"namespace {ns} ({_HINT})")
        if policy.every_port:
            continue
        if not rule.ports:
            return (f"spec.networking.ingress[{i}].ports: none given, which is every TCP port; "
                    f"TargetGroupBindings in namespace {ns} may admit only their target ports "
                    f"and health-check port ({_HINT})")
        for k, port in enumerate(rule.ports):
            where = f"spec.networking.ingress[{i}].ports[{k}]"
            if port.port is None:
                return (f"{where}: every {port.protocol} port: TargetGroupBindings in "
                        f"namespace {ns} may admit only their target ports and health-check "
                        f"port ({_HINT})")
            if (isinstance(port.port, int) and scope.ports is not None
                    and port.port not in scope.ports):
                return (f"{where}: port {port.port} is neither a target port nor the "
                        f"health-check port of this TargetGroupBinding ({_HINT})")
    return None


def check(networking: Networking, *, scope: BindingScope, policy: NetworkingPolicy,
          facts: Mapping[str, GroupFacts]) -> None:
    """Raises NetworkingNotAllowed with `refusal`'s text."""
    why = refusal(networking, scope=scope, policy=policy, facts=facts)
    if why is not None:
        raise NetworkingNotAllowed(why)


# ---- what a binding whose targets are not known yet could need -------------------------------

def _port_range(port: NetworkingPort) -> tuple[int, int]:
    """A number is itself; a name (resolved per target, not known here) or none is every
    port."""
    if isinstance(port.port, int):
        return port.port, port.port
    return ALL_PORTS


def _peer_rule(peer: NetworkingPeer, protocol: str, low: int, high: int) -> Permission:
    if peer.security_group is not None:
        return Permission(protocol, low, high, "group", peer.security_group.group_id)
    assert peer.ip_block is not None
    cidr = peer.ip_block.cidr
    v6 = ipaddress.ip_network(cidr, strict=False).version == 6
    return Permission(protocol, low, high, "cidr6" if v6 else "cidr", cidr)


def claimed_rules(networking: Networking, *, namespace: str,
                  policy: NetworkingPolicy) -> list[Permission]:
    """The rules a binding in `namespace` could need whatever its targets turn out to be;
    nothing when the spec alone shows it would be refused (a CIDR, or every port, without the
    grant). Its group sources still have to pass `may_hold`."""
    unrestricted = policy.unrestricted(namespace)
    found: list[Permission] = []
    for rule in networking.ingress:
        ports = rule.ports or (NetworkingPort(protocol="TCP", port=None),)
        if not (unrestricted or policy.every_port) and any(p.port is None for p in ports):
            return []
        for peer in rule.from_:
            if peer.ip_block is not None and not unrestricted:
                return []
            for port in ports:
                low, high = _port_range(port)
                found.append(_peer_rule(peer, port.protocol.lower(), low, high))
    return found


def may_hold(policy: NetworkingPolicy, namespace: str, rule: Permission,
             facts: GroupFacts | None) -> bool:
    """A rule `claimed_rules` gave may be kept for a binding in `namespace` while its targets
    are not known: its group source is one of the cluster's load balancer groups of that
    namespace, or of an Ingress group (which namespaces an Ingress group serves shows only in
    its target groups' tags, read when the binding is reconciled)."""
    if rule.source_kind != "group" or policy.unrestricted(namespace):
        return True
    found = policy.load_balancer_group(facts)
    if found is None or found == "backend":
        return found == "backend"
    kind, stack = found
    return stack.startswith(namespace + "/") or (kind == "ingress" and "/" not in stack)


__all__ = ["ALL_PORTS", "EVERY_NAMESPACE", "UNRESTRICTED_NAMESPACES_FLAG", "BindingScope",
           "NetworkingNotAllowed", "NetworkingPolicy", "Stack", "check", "claimed_rules",
           "group_sources", "may_admit_group", "may_hold", "refusal", "target_group_stacks"]

