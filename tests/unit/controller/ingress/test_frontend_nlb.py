"""The frontend NLB of an Ingress group (`enable-frontend-nlb`), as upstream builds it: the
NLB, a TCP listener per port forwarding to an `alb` target group that targets the group's ALB,
upstream's names, defaults and group rules; bad values refused with one line, at admission
too."""

from __future__ import annotations

import pytest

from controller.ingress import admit
from controller.ingress.frontendnlb import FRONTEND_NLB_ID
from controller.ingress.merge import BuildError
from controller.ingress.model import LOAD_BALANCER_ID, BuiltGroup, build_group
from controller.model import ForwardAction, LoadBalancerTarget, SubnetDiscovery, WeightedTargetGroup
from controller.model.canonical import canonical_json
from controller.model.naming import frontend_nlb_target_group_name
from runtime.reconcile import Request
from tests.support.objects import backend_service, ingress, ingress_class, ingress_path
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
ONE = Request("default", "shop")
GROUP = Request("", "edge")


def _ing(name: str, notes: dict[str, str], *, group: bool = False) -> dict[str, object]:
    annotations = {A + k: v for k, v in notes.items()}
    if group:
        annotations[A + "group.name"] = "edge"
    return ingress(name, annotations, paths=[ingress_path("/", "web")])


def build(request: Request, *ings: dict[str, object]) -> BuiltGroup:
    c = caches(ingress_class("alb"), backend_service("web"), *ings)
    return build_group(loader(c).load(request), c, SETTINGS)


def test_defaults_follow_upstream() -> None:
    built = build(ONE, _ing("shop", {"enable-frontend-nlb": "true", "tags": "team=shop"}))
    stack = built.stack
    alb = stack.load_balancers[LOAD_BALANCER_ID]
    nlb = stack.load_balancers[FRONTEND_NLB_ID]
    assert nlb.type == "network"
    assert nlb.name == alb.name[:28] + "-nlb"
    # --default-scheme (internal), whatever the ALB's scheme; discovered subnets.
    assert nlb.scheme == "internal"
    assert nlb.subnets == SubnetDiscovery(role="internal-elb")
    assert nlb.security_groups == alb.security_groups
    assert nlb.tags == alb.tags
    assert nlb.tags["team"] == "shop"
    assert nlb.ip_address_type == alb.ip_address_type
    tg = stack.target_groups[f"{FRONTEND_NLB_ID}-tg-TCP-80"]
    assert tg.name == "k8s-default-shop-5b34d362b2"  # sha256 of upstream's inputs
    assert tg.name == frontend_nlb_target_group_name(
        "test-cluster", "default/shop", 80, "traffic-port", "HTTP", explicit=False)
    assert (tg.protocol, tg.port, tg.target_type, tg.ip_address_type) == (
        "TCP", 80, "alb", "ipv4")
    assert tg.load_balancer_target == LoadBalancerTarget(load_balancer=LOAD_BALANCER_ID,
                                                         port=80)
    hc = tg.health_check
    assert (hc.protocol, hc.port, hc.path, hc.interval_seconds, hc.timeout_seconds,
            hc.healthy_threshold, hc.unhealthy_threshold) == (
        "HTTP", "traffic-port", "/", 15, 5, 2, 2)
    assert hc.matcher is not None
    assert hc.matcher.http_code == "200"
    listener = stack.listeners[f"{FRONTEND_NLB_ID}-ls-TCP-80"]
    assert listener.protocol == "TCP"
    assert listener.port == 80
    assert listener.load_balancer_arn.target[1] == FRONTEND_NLB_ID
    action = listener.default_actions[0]
    assert isinstance(action, ForwardAction)
    assert action.target_groups[0].target_group_arn.target[1] == (  # type: ignore[union-attr]
        f"{FRONTEND_NLB_ID}-tg-TCP-80")
    # Nothing of the NLB forwards into the ALB's own rules, and no binding is made for it.
    assert all(b.target_group_arn.target[1] != tg.name
               for b in stack.target_group_bindings.values())


def test_without_the_key_the_stack_is_unchanged_and_its_checkpoint_too() -> None:
    plain = build(ONE, _ing("shop", {}))
    off = build(ONE, _ing("shop", {"enable-frontend-nlb": "false"}))
    assert list(plain.stack.load_balancers) == [LOAD_BALANCER_ID]
    assert canonical_json(plain.stack) == canonical_json(off.stack)
    assert "load_balancer_target" not in canonical_json(plain.stack).decode()


def test_every_key_is_applied() -> None:
    built = build(ONE, _ing("shop", {
        "enable-frontend-nlb": "true", "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]',
        "frontend-nlb-scheme": "internet-facing", "frontend-nlb-subnets": "subnet-b,subnet-a",
        "frontend-nlb-security-groups": "sg-9", "frontend-nlb-listener-port-mapping": "9000=8080",
        "frontend-nlb-healthcheck-port": "8081", "frontend-nlb-healthcheck-protocol": "HTTPS",
        "frontend-nlb-healthcheck-path": "/hz", "frontend-nlb-healthcheck-interval-seconds": "20",
        "frontend-nlb-healthcheck-timeout-seconds": "6",
        "frontend-nlb-healthcheck-healthy-threshold-count": "3",
        "frontend-nlb-healthcheck-unhealthy-threshold-count": "4",
        "frontend-nlb-healthcheck-success-codes": "200-299",
        "frontend-nlb-attributes": "dns_record.client_routing_policy=availability_zone_affinity",
        "frontend-nlb-tags": "team=edge"}))
    nlb = built.stack.load_balancers[FRONTEND_NLB_ID]
    assert nlb.scheme == "internet-facing"
    assert nlb.subnets == ("subnet-a", "subnet-b")
    assert nlb.security_groups == ("sg-9",)
    assert nlb.attributes == {"dns_record.client_routing_policy": "availability_zone_affinity"}
    assert nlb.tags == {"team": "edge"}
    # Only the mapped port: 9000 → the ALB's 8080, nothing for 80.
    assert [li.port for li in built.stack.listeners.values()
            if li.load_balancer_arn.target[1] == FRONTEND_NLB_ID] == [9000]
    tg = built.stack.target_groups[f"{FRONTEND_NLB_ID}-tg-TCP-9000"]
    assert tg.load_balancer_target == LoadBalancerTarget(load_balancer=LOAD_BALANCER_ID,
                                                         port=8080)
    assert tg.tags == {"team": "edge"}
    hc = tg.health_check
    assert (hc.protocol, hc.port, hc.path, hc.interval_seconds, hc.timeout_seconds,
            hc.healthy_threshold, hc.unhealthy_threshold) == ("HTTPS", 8081, "/hz", 20, 6, 3, 4)
    assert hc.matcher is not None
    assert hc.matcher.http_code == "200-299"
    assert tg.name == frontend_nlb_target_group_name(
        "test-cluster", "default/shop", 9000, "8081", "HTTPS", explicit=False)


def test_a_mapping_to_a_port_the_alb_does_not_listen_on_is_passed_over() -> None:
    built = build(ONE, _ing("shop", {"enable-frontend-nlb": "true",
                                     "frontend-nlb-listener-port-mapping": "81=80,82=8080"}))
    assert sorted(built.stack.listeners) == ["80", f"{FRONTEND_NLB_ID}-ls-TCP-81"]


def test_group_members_merge_as_upstream() -> None:
    built = build(GROUP,
                  _ing("a", {"enable-frontend-nlb": "true", "listen-ports": '[{"HTTP": 80}]',
                             "frontend-nlb-healthcheck-path": "/a"}, group=True),
                  _ing("b", {"listen-ports": '[{"HTTP": 80}, {"HTTP": 81}]',
                             "frontend-nlb-healthcheck-interval-seconds": "30"}, group=True))
    tgs = built.stack.target_groups
    # Explicit values win over the other member's defaults, per NLB port.
    assert tgs[f"{FRONTEND_NLB_ID}-tg-TCP-80"].health_check.path == "/a"
    assert tgs[f"{FRONTEND_NLB_ID}-tg-TCP-80"].health_check.interval_seconds == 30
    assert tgs[f"{FRONTEND_NLB_ID}-tg-TCP-81"].health_check.path == "/"
    assert tgs[f"{FRONTEND_NLB_ID}-tg-TCP-81"].name == frontend_nlb_target_group_name(
        "test-cluster", "edge", 81, "traffic-port", "HTTP", explicit=True)


@pytest.mark.parametrize(("members", "said"), [
    ([{"enable-frontend-nlb": "true"}, {"enable-frontend-nlb": "false"}],
     "enable-frontend-nlb conflicts within the group"),
    ([{"enable-frontend-nlb": "true", "frontend-nlb-scheme": "internal"},
      {"frontend-nlb-scheme": "internet-facing"}],
     "frontend-nlb-scheme conflicts within the group"),
    ([{"enable-frontend-nlb": "true", "frontend-nlb-tags": "a=b"}, {"frontend-nlb-tags": "a=c"}],
     "frontend-nlb-tags conflicts within the group"),
    ([{"enable-frontend-nlb": "true", "frontend-nlb-healthcheck-path": "/a"},
      {"frontend-nlb-healthcheck-path": "/b"}],
     "frontend NLB listener port 80: annotation alb.ingress.kubernetes.io/"
     "frontend-nlb-healthcheck-path conflicts"),
    ([{"enable-frontend-nlb": "true", "listen-ports": '[{"HTTP": 80}, {"HTTP": 81}]',
       "frontend-nlb-listener-port-mapping": "90=80"},
      {"listen-ports": '[{"HTTP": 81}]', "frontend-nlb-listener-port-mapping": "90=81"}],
     "frontend NLB listener port 90: default/edge-a maps it to ALB port 80"),
])
def test_group_conflicts_are_one_message(members: list[dict[str, str]], said: str) -> None:
    ings = [_ing(f"edge-{chr(ord('a') + i)}", notes, group=True)
            for i, notes in enumerate(members)]
    with pytest.raises(BuildError) as exc:
        build(GROUP, *ings)
    assert said in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("key", "value", "said"), [
    ("enable-frontend-nlb", "yes", "enable-frontend-nlb"),
    ("frontend-nlb-scheme", "public", "frontend-nlb-scheme"),
    ("frontend-nlb-listener-port-mapping", "80=http", "ALB listener port"),
    ("frontend-nlb-listener-port-mapping", "0=80", "NLB listener port"),
    ("frontend-nlb-healthcheck-port", "eighty", "frontend-nlb-healthcheck-port"),
    ("frontend-nlb-healthcheck-protocol", "TCP", "frontend-nlb-healthcheck-protocol"),
    ("frontend-nlb-healthcheck-path", "hz", "frontend-nlb-healthcheck-path"),
    ("frontend-nlb-healthcheck-interval-seconds", "1", "interval-seconds"),
    ("frontend-nlb-healthcheck-timeout-seconds", "x", "timeout-seconds"),
    ("frontend-nlb-healthcheck-healthy-threshold-count", "11", "healthy-threshold-count"),
    ("frontend-nlb-healthcheck-unhealthy-threshold-count", "1", "unhealthy-threshold-count"),
    ("frontend-nlb-healthcheck-success-codes", "600", "success-codes"),
    ("frontend-nlb-attributes", "dns_record.client_routing_policy=nearest",
     "dns_record.client_routing_policy"),
    ("frontend-nlb-attributes", "deletion_protection.enabled=true,bogus.key=1", "bogus.key"),
    ("frontend-nlb-subnets", " , ", "frontend-nlb-subnets"),
    ("frontend-nlb-security-groups", ",", "frontend-nlb-security-groups"),
])
def test_bad_values_are_refused_with_one_line(key: str, value: str, said: str) -> None:
    notes = {"enable-frontend-nlb": "true", key: value}
    with pytest.raises(BuildError) as exc:
        build(ONE, _ing("shop", notes))
    assert said in str(exc.value)
    assert "\n" not in str(exc.value)


def test_keys_without_the_nlb_do_nothing_and_are_said() -> None:
    built = build(ONE, _ing("shop", {"frontend-nlb-scheme": "nonsense"}))
    assert list(built.stack.load_balancers) == [LOAD_BALANCER_ID]
    assert "frontend-nlb-scheme has no effect without" in built.frontend_nlb_unused[
        "default/shop"]
    assert not built.warnings


def test_weighted_target_group_type_is_used() -> None:
    # The listener forwards through the same weighted-target-group model as every other one.
    built = build(ONE, _ing("shop", {"enable-frontend-nlb": "true"}))
    action = built.stack.listeners[f"{FRONTEND_NLB_ID}-ls-TCP-80"].default_actions[0]
    assert isinstance(action, ForwardAction)
    assert isinstance(action.target_groups[0], WeightedTargetGroup)


def test_admission_warns_of_keys_without_the_nlb() -> None:
    member = _ing("shop", {"frontend-nlb-tags": "a=b"})
    c = caches(ingress_class("alb"), backend_service("web"))
    said = admit(member, None, c, SETTINGS)
    assert said == [build(ONE, member).frontend_nlb_unused["default/shop"]]


PUBLIC = {"enable-frontend-nlb": "true", "frontend-nlb-scheme": "internet-facing"}


def test_eip_allocations_pair_with_the_listed_subnets_in_their_order() -> None:
    built = build(ONE, _ing("shop", {**PUBLIC, "frontend-nlb-subnets": "subnet-b, subnet-a",
                                     "frontend-nlb-eip-allocations": "eipalloc-2,eipalloc-1"}))
    nlb = built.stack.load_balancers[FRONTEND_NLB_ID]
    assert nlb.eip_allocations == ("eipalloc-2", "eipalloc-1")
    assert nlb.subnet_order == ("subnet-b", "subnet-a")
    # The ALB has none of it.
    assert built.stack.load_balancers[LOAD_BALANCER_ID].eip_allocations is None


def test_eip_allocations_with_discovered_subnets_leave_the_pairing_to_the_resolve_stage() -> None:
    built = build(ONE, _ing("shop", {**PUBLIC, "frontend-nlb-eip-allocations": "eipalloc-1"}))
    nlb = built.stack.load_balancers[FRONTEND_NLB_ID]
    assert nlb.eip_allocations == ("eipalloc-1",)
    assert nlb.subnet_order is None
    assert isinstance(nlb.subnets, SubnetDiscovery)


def test_without_eip_allocations_the_nlb_has_no_static_addresses() -> None:
    built = build(ONE, _ing("shop", {**PUBLIC, "frontend-nlb-subnets": "subnet-a"}))
    nlb = built.stack.load_balancers[FRONTEND_NLB_ID]
    assert nlb.eip_allocations is None
    assert nlb.subnet_order is None
    assert b"eip_allocations" not in canonical_json(built.stack)


def test_group_members_eip_allocations_agree_in_any_order_and_the_first_order_is_kept() -> None:
    built = build(GROUP,
                  _ing("a", {**PUBLIC, "frontend-nlb-eip-allocations": "eipalloc-1,eipalloc-2"},
                       group=True),
                  _ing("b", {"frontend-nlb-eip-allocations": "eipalloc-2, eipalloc-1"},
                       group=True),
                  _ing("c", {}, group=True))
    assert built.stack.load_balancers[FRONTEND_NLB_ID].eip_allocations == (
        "eipalloc-1", "eipalloc-2")


@pytest.mark.parametrize(("members", "said"), [
    ([{**PUBLIC, "frontend-nlb-eip-allocations": "eipalloc-1,eipalloc-2"},
      {"frontend-nlb-eip-allocations": "eipalloc-1"}],
     'annotation alb.ingress.kubernetes.io/frontend-nlb-eip-allocations conflicts within the '
     'group: default/edge-a has "eipalloc-1,eipalloc-2", default/edge-b has "eipalloc-1"'),
    ([{"enable-frontend-nlb": "true", "frontend-nlb-eip-allocations": "eipalloc-1"}, {}],
     "annotation alb.ingress.kubernetes.io/frontend-nlb-eip-allocations: EIP allocations can "
     "be set for an internet-facing load balancer only (the frontend NLB's scheme is "
     "internal)"),
    ([{**PUBLIC, "frontend-nlb-subnets": "subnet-a,subnet-b"},
      {"frontend-nlb-eip-allocations": "eipalloc-1"}],
     "annotation alb.ingress.kubernetes.io/frontend-nlb-eip-allocations: count of EIP "
     "allocations (1) and subnets (2) must match"),
])
def test_eip_allocations_refused_as_upstream_in_one_message(members: list[dict[str, str]],
                                                            said: str) -> None:
    ings = [_ing(f"edge-{chr(ord('a') + i)}", notes, group=True)
            for i, notes in enumerate(members)]
    with pytest.raises(BuildError) as exc:
        build(GROUP, *ings)
    assert said in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("value", "said"), [
    ("eip-1", '"eip-1", which is not an Elastic IP allocation ID (eipalloc-...)'),
    ("eipalloc-1,eipalloc-1", 'lists "eipalloc-1" twice; each subnet needs EIP allocation of '
                              "its own"),
    (" , ", "lists no EIP allocation"),
    ("eipalloc-1\x1b[2J", "which is not an Elastic IP allocation ID"),
])
def test_bad_eip_allocations_are_one_line_and_nothing_is_built(value: str, said: str) -> None:
    member = _ing("shop", {**PUBLIC, "frontend-nlb-eip-allocations": value})
    with pytest.raises(BuildError) as exc:
        build(ONE, member)
    text = str(exc.value)
    assert text.startswith("Ingress default/shop: annotation "
                           "alb.ingress.kubernetes.io/frontend-nlb-eip-allocations")
    assert said in text
    assert "\n" not in text
    assert "\x1b" not in text
    # The same message at admission, and the Ingress refused.
    c = caches(ingress_class("alb"), backend_service("web"))
    with pytest.raises(BuildError) as refused:
        admit(member, None, c, SETTINGS)
    assert str(refused.value) == text


def test_admission_refuses_eips_on_an_internal_frontend_nlb_with_the_build_message() -> None:
    member = _ing("shop", {"enable-frontend-nlb": "true",
                           "frontend-nlb-eip-allocations": "eipalloc-1"})
    with pytest.raises(BuildError) as built:
        build(ONE, member)
    c = caches(ingress_class("alb"), backend_service("web"))
    with pytest.raises(BuildError) as refused:
        admit(member, None, c, SETTINGS)
    assert str(refused.value) == str(built.value)


def test_eip_allocations_without_the_nlb_do_nothing_and_are_said() -> None:
    built = build(ONE, _ing("shop", {"frontend-nlb-eip-allocations": "eipalloc-1"}))
    assert list(built.stack.load_balancers) == [LOAD_BALANCER_ID]
    assert "frontend-nlb-eip-allocations has no effect without" in built.frontend_nlb_unused[
        "default/shop"]
