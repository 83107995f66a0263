"""The pure stage: Ingress group → Stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.config.featuregates import GATES
from controller.ingress.merge import BuildError, GroupQuotaExceeded
from controller.ingress.model import (
    BuilderSettings,
    BuiltGroup,
    build_group,
    path_values,
    sort_paths,
)
from controller.model import (
    SECURITY_GROUP,
    AuthenticateOidcAction,
    CertificateDiscovery,
    FixedResponseAction,
    ForwardAction,
    Quotas,
    RedirectAction,
    Ref,
    SharedBackendSecurityGroup,
    SubnetDiscovery,
    SubnetSelector,
)
from controller.model.canonical import canonical_json, checkpoint_digest
from controller.networking.settings import BackendSettings
from controller.settings import ClusterScope, StackDefaults
from runtime.objects import Obj, meta
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_backend,
    ingress_class,
    ingress_path,
    secret,
    service,
    service_port,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"


def build(request: Request, *objs: dict[str, object]) -> BuiltGroup:
    c = caches(ingress_class("alb"), *objs)
    return build_group(loader(c).load(request), c, SETTINGS)


def rule_paths(built: BuiltGroup, port: int = 80) -> list[tuple[str, ...]]:
    rules = sorted((r for rid, r in built.stack.listener_rules.items()
                    if rid.startswith(f"{port}:")), key=lambda r: r.priority)
    out = []
    for rule in rules:
        values: tuple[str, ...] = ()
        for cond in rule.conditions:
            if cond.field == "path-pattern":
                values = tuple(cond.values)
        out.append(values)
    return out


def test_path_sorting_and_patterns() -> None:
    paths = [ingress_path("/a", path_type="ImplementationSpecific"),
             ingress_path("/", path_type="Prefix"), ingress_path("/long/er"),
             ingress_path("/x", path_type="Exact"),
             ingress_path("/b", path_type="ImplementationSpecific")]
    assert [p["path"] for p in sort_paths(paths)] == ["/x", "/long/er", "/", "/a", "/b"]
    assert path_values("/", "Prefix") == ["/*"]
    assert path_values("/api/", "Prefix") == ["/api", "/api/*"]
    assert path_values("/exact", "Exact") == ["/exact"]
    assert path_values("/img/*.png", "ImplementationSpecific") == ["/img/*.png"]


def test_single_ingress_stack() -> None:
    built = build(Request("default", "shop"), backend_service("web"), backend_service("api"),
                  ingress("shop", host="shop.example.com",
                          paths=[ingress_path("/", "web"), ingress_path("/api", "api")]))
    stack = built.stack
    assert stack.id == "default/shop"
    assert stack.kind == "ingress"
    (lb,) = stack.load_balancers.values()
    assert lb.scheme == "internal"
    assert lb.subnets == SubnetDiscovery(role="internal-elb")
    assert lb.name.startswith("k8s-default-shop-")
    assert set(stack.listeners) == {"80"}
    assert isinstance(stack.listeners["80"].default_actions[0], FixedResponseAction)
    assert rule_paths(built) == [("/api", "/api/*"), ("/*",)]
    assert set(stack.target_groups) == {"default/shop-web:80", "default/shop-api:80"}
    tg = stack.target_groups["default/shop-web:80"]
    assert (tg.port, tg.target_type, tg.protocol) == (8080, "ip", "HTTP")
    tgb = stack.target_group_bindings["default/shop-web:80"]
    assert tgb.name == tg.name
    assert tgb.service_ref.port == 80
    assert tgb.labels == {"ingress.k8s.aws/stack-namespace": "default",
                          "ingress.k8s.aws/stack-name": "shop"}
    assert built.services == {"default/web", "default/api"}


def test_group_rule_order_follows_group_order() -> None:
    g = {A + "group.name": "g"}
    built = build(Request("", "g"), backend_service("web"),
                  ingress("b", {**g, A + "group.order": "2"}, paths=[ingress_path("/b")]),
                  ingress("a", {**g, A + "group.order": "2"}, paths=[ingress_path("/a")]),
                  ingress("c", {**g, A + "group.order": "-3"}, paths=[ingress_path("/c")]))
    assert rule_paths(built) == [("/c", "/c/*"), ("/a", "/a/*"), ("/b", "/b/*")]
    assert next(iter(built.stack.load_balancers.values())).name.startswith("k8s-g-")
    assert len(built.stack.target_groups) == 3  # one per (Ingress, Service, port)


def test_https_ssl_redirect_and_certificates() -> None:
    annotations = {A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
                   A + "ssl-redirect": "443"}
    built = build(Request("default", "s"), backend_service("web"),
                  ingress("s", annotations, host="a.example.com", paths=[ingress_path("/")],
                          spec={"tls": [{"hosts": ["a.example.com", "B.example.com"]}]}))
    listeners = built.stack.listeners
    assert set(listeners) == {"80", "443"}
    redirect = listeners["80"].default_actions[0]
    assert isinstance(redirect, RedirectAction)
    assert redirect.port == "443"
    assert listeners["443"].certificates == CertificateDiscovery(
        hosts=["a.example.com", "b.example.com"])
    assert listeners["443"].ssl_policy == "ELBSecurityPolicy-2016-08"
    assert rule_paths(built, 80) == []  # redirected: no rules on HTTP
    assert rule_paths(built, 443) == [("/*",)]
    arn = "arn:aws:acm:us-west-2:123456789012:certificate/abc"
    built = build(Request("default", "s"), backend_service("web"),
                  ingress("s", annotations={A + "certificate-arn": arn}))
    assert set(built.stack.listeners) == {"443"}
    assert built.stack.listeners["443"].certificates == (arn,)


def test_allowed_authorities_go_into_the_discovery_and_the_checkpoint() -> None:
    """--allowed-certificate-authority-arns is part of the discovery placeholder, so changing
    it changes the checkpoint; left empty, the canonical JSON (and every checkpoint) is what
    it was before the flag existed."""
    ca = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/ca"
    objs = (backend_service("web"),
            ingress("s", {A + "listen-ports": '[{"HTTPS": 443}]'}, paths=[ingress_path("/")],
                    spec={"tls": [{"hosts": ["a.example.com"]}]}))
    c = caches(ingress_class("alb"), *objs)
    group = loader(c).load(Request("default", "s"))
    plain = build_group(group, c, SETTINGS)
    restricted = build_group(group, c, dataclasses.replace(
        SETTINGS, allowed_certificate_authorities=frozenset({ca})))
    assert restricted.stack.listeners["443"].certificates == CertificateDiscovery(
        hosts=["a.example.com"], authorities=[ca])
    assert b'"authorities"' not in canonical_json(plain.stack)
    assert b'"certificates":{"hosts":["a.example.com"]}' in canonical_json(plain.stack)
    assert checkpoint_digest(plain.stack) != checkpoint_digest(restricted.stack)


def test_default_backend_and_annotation_actions() -> None:
    actions = {
        A + "actions.blue-green": '{"type":"forward","forwardConfig":{"targetGroups":['
        '{"serviceName":"web","servicePort":"80","weight":80},'
        '{"serviceName":"api","servicePort":80,"weight":20}]}}',
        A + "actions.moved": '{"Type":"redirect","RedirectConfig":{"Host":"new.example.com",'
        '"StatusCode":"HTTP_302"}}',
        A + "conditions.blue-green": '[{"field":"http-header","httpHeaderConfig":'
        '{"httpHeaderName":"X-Canary","values":["on"]}}]',
    }
    built = build(Request("default", "s"), backend_service("web"), backend_service("api"),
                  ingress("s", annotations=actions, spec={"defaultBackend": ingress_backend("web")},
                          paths=[ingress_path("/new", "blue-green", "use-annotation"),
                                 ingress_path("/old", "moved", "use-annotation")]))
    default = built.stack.listeners["80"].default_actions[0]
    assert isinstance(default, ForwardAction)
    rules = sorted(built.stack.listener_rules.values(), key=lambda r: r.priority)
    forward = rules[0].actions[0]
    assert isinstance(forward, ForwardAction)
    assert sorted(w.weight for w in forward.target_groups) == [20, 80]
    assert {c.field for c in rules[0].conditions} == {"path-pattern", "http-header"}
    redirect = rules[1].actions[0]
    assert isinstance(redirect, RedirectAction)
    assert (redirect.host, redirect.status_code, redirect.port) == (
        "new.example.com", "HTTP_302", "#{port}")


def test_oidc_on_https_rules_only() -> None:
    oidc = ('{"issuer":"https://i","authorizationEndpoint":"https://i/a","tokenEndpoint":'
            '"https://i/t","userInfoEndpoint":"https://i/u","secretName":"s"}')
    annotations = {A + "auth-type": "oidc", A + "auth-idp-oidc": oidc,
                   A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
                   A + "certificate-arn": "arn:aws:acm:us-west-2:1:certificate/x"}
    built = build(Request("default", "s"), backend_service("web"),
                  secret("s", {"clientID": "id", "clientSecret": "shh"}),
                  ingress("s", annotations=annotations))
    https = built.stack.listener_rules["443:1"].actions
    assert isinstance(https[0], AuthenticateOidcAction)
    assert (https[0].client_id, https[0].client_secret) == ("id", "shh")
    assert not any(isinstance(a, AuthenticateOidcAction)
                   for a in built.stack.listener_rules["80:1"].actions)
    assert built.secrets == {"default/s"}
    with pytest.raises(BuildError, match="OIDC Secret default/s not found"):
        build(Request("default", "s"), backend_service("web"),
              ingress("s", annotations=annotations))


def test_params_override_annotations() -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"scheme": "internet-facing", "ipAddressType": "dualstack",
                                  "subnets": {"ids": ["subnet-1", "subnet-2"]},
                                  "sslPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06"}),
               ingress("a", annotations={A + "scheme": "internal",
                                         A + "subnets": "subnet-9,subnet-8"}))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    (lb,) = built.stack.load_balancers.values()
    assert (lb.scheme, lb.ip_address_type, lb.subnets) == (
        "internet-facing", "dualstack", ("subnet-1", "subnet-2"))
    assert built.load_balancer.inbound_cidrs == ("0.0.0.0/0", "::/0")


def test_params_subnet_tags_become_a_selector_and_names_stay_names() -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"subnets": {"tags": {"team": ["b", "a"], "tier": ["web"]}}}),
               ingress("a", annotations={A + "subnets": "subnet-9"}))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    (lb,) = built.stack.load_balancers.values()
    assert lb.subnets == SubnetSelector(tags={"team": ("a", "b"), "tier": ("web",)})
    c = caches(ingress_class("alb"), backend_service("web"),
               ingress("a", annotations={A + "subnets": "public-a, subnet-9"}))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    (lb,) = built.stack.load_balancers.values()
    assert lb.subnets == ("public-a", "subnet-9")


@pytest.mark.parametrize(("spec", "message"), [
    ({"ids": ["subnet-1"], "tags": {"a": ["b"]}}, "give either ids or tags, not both"),
    ({"tags": {"team": []}}, "subnets.tags: .*lists no value"),
])
def test_bad_params_subnets_are_one_build_error(spec: dict[str, object], message: str) -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"subnets": spec}), ingress("a"))
    with pytest.raises(BuildError, match=message):
        build_group(loader(c).load(Request("default", "a")), c, SETTINGS)


@pytest.mark.parametrize(("objs", "message"), [
    ((ingress("a", paths=[ingress_path("/", "missing")]),),
     "backend Service default/missing not found"),
    ((backend_service("web"), ingress("a", paths=[ingress_path("/", "web", 81)])),
     "port 81 not found"),
    ((backend_service("web"), ingress("a", annotations={A + "ssl-redirect": "443"})),
     "ssl-redirect port 443 is not an HTTPS listen port"),
    ((backend_service("web"), ingress("a", annotations={A + "listen-ports": '[{"HTTPS": 443}]'})),
     "has no certificate"),
    ((backend_service("web"), ingress("a", annotations={A + "healthcheck-interval-seconds": "5",
                                                A + "healthcheck-timeout-seconds": "6"})),
     "must be shorter than the interval"),
])
def test_bad_input_is_one_clear_error(objs: tuple[dict[str, object], ...], message: str) -> None:
    with pytest.raises(BuildError, match=message) as info:
        build(Request("default", "a"), *objs)
    assert "\n" not in str(info.value)


def test_group_conflicts() -> None:
    g = {A + "group.name": "g"}
    with pytest.raises(BuildError, match="ip-address-type conflicts within the group"):
        build(Request("", "g"), backend_service("web"),
              ingress("a", annotations={**g, A + "ip-address-type": "ipv4"}),
              ingress("b", annotations={**g, A + "ip-address-type": "dualstack"}))
    # The same value on several members, or a value on one member only, is fine.
    build(Request("", "g"), backend_service("web"),
          ingress("a", annotations={**g, A + "scheme": "internal"}),
          ingress("b", annotations={**g, A + "scheme": "internal"}), ingress("c", annotations=g))
    with pytest.raises(BuildError, match="both default/a and default/b set a default backend"):
        build(Request("", "g"), backend_service("web"),
              ingress("a", annotations=g, spec={"defaultBackend": ingress_backend("web")}),
              ingress("b", annotations=g, spec={"defaultBackend": ingress_backend("web")}))
    with pytest.raises(BuildError, match="listen port 80 is HTTP"):
        build(Request("", "g"), backend_service("web"), ingress("a", annotations=g),
              ingress("b", annotations={**g, A + "listen-ports": '[{"HTTPS": 80}]',
                                        A + "certificate-arn": "arn:aws:acm:r:1:certificate/x"}))


def test_names_follow_upstream_model_builder_test() -> None:
    """Upstream's pkg/ingress/model_builder_test.go "Ingress - vanilla internal" (cluster
    `cluster-dummy`, Services without a UID): the ALB `k8s-ns1-ing1-b7e914000d`, target groups
    `k8s-ns1-svc1-9889425938` (instance, `http` -> nodePort 32768) and
    `k8s-ns1-svc3-bf42870fba` (ip, HTTPS, `https` -> 8443). No protocol version annotation is
    set; upstream hashes its default HTTP1."""
    settings = BuilderSettings(
        cluster=ClusterScope(name="cluster-dummy", region="us-west-2", vpc_id="vpc-1"),
        defaults=StackDefaults(target_type="instance"))
    svc1 = service("svc-1", namespace="ns-1", type_="NodePort",
                   ports=[service_port(80, 8080, node_port=32768, protocol=None)])
    svc3 = service("svc-3", namespace="ns-1", type_="NodePort",
                   annotations={A + "target-type": "ip", A + "backend-protocol": "HTTPS"},
                   ports=[service_port(443, 8443, "https", node_port=32768, protocol=None)])
    ing = ingress("ing-1", namespace="ns-1", paths=[ingress_path("/svc-1", "svc-1", "http"),
                                                    ingress_path("/svc-3", "svc-3", "https")])
    c = caches(ingress_class("alb"), svc1, svc3, ing)
    stack = build_group(loader(c).load(Request("ns-1", "ing-1")), c, settings).stack
    assert stack.load_balancers["LoadBalancer"].name == "k8s-ns1-ing1-b7e914000d"
    assert stack.target_groups["ns-1/ing-1-svc-1:http"].name == "k8s-ns1-svc1-9889425938"
    assert stack.target_groups["ns-1/ing-1-svc-3:https"].name == "k8s-ns1-svc3-bf42870fba"


# ---- security groups --------------------------------------------------------------------------

def _managed_rules(built: BuiltGroup) -> set[tuple[int, str]]:
    group = built.stack.security_groups["ManagedLBSecurityGroup"]
    return {(r.from_port, str(r.cidr_ipv4 or r.cidr_ipv6 or r.prefix_list_id))
            for r in group.ingress}


def test_the_managed_group_admits_the_inbound_cidrs_on_every_listen_port() -> None:
    notes = {A + "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]',
             A + "inbound-cidrs": "10.0.0.0/8,2001:db8::/32", A + "tags": "team=a"}
    built = build(Request("default", "a"), backend_service("web"), ingress("a", notes))
    # The IPv6 source is left out: the load balancer is not dualstack.
    assert _managed_rules(built) == {(80, "10.0.0.0/8"), (8080, "10.0.0.0/8")}
    group = built.stack.security_groups["ManagedLBSecurityGroup"]
    assert group.name.startswith("k8s-default-a-")
    assert group.tags == {"team": "a"}
    dual = build(Request("default", "a"), backend_service("web"), ingress("a", {
        **notes, A + "ip-address-type": "dualstack"}))
    assert (80, "2001:db8::/32") in _managed_rules(dual)


def test_inbound_cidrs_that_admit_no_one_are_named() -> None:
    some = build(Request("default", "a"), backend_service("web"), ingress("a", {
        A + "inbound-cidrs": "10.0.0.0/8,2001:db8::/32"}))
    assert some.warnings == (
        "group default/a: inbound CIDRs (inbound-cidrs or IngressClassParams inboundCIDRs): "
        "2001:db8::/32 admits no one: IPv6 sources never reach an ipv4 load balancer (make it "
        "dualstack, or remove them)",)
    alone = build(Request("default", "a"), backend_service("web"), ingress("a", {
        A + "inbound-cidrs": "::/0"}))
    (warning,) = alone.warnings
    assert warning.endswith("no other source is given, so the load balancer admits no one")
    assert _managed_rules(alone) == set()
    # From the class parameters too; and a dualstack load balancer serves them.
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"inboundCIDRs": ["::/0"]}), ingress("a"))
    assert build_group(loader(c).load(Request("default", "a")), c, SETTINGS).warnings
    dual = build(Request("default", "a"), backend_service("web"), ingress("a", {
        A + "inbound-cidrs": "::/0", A + "ip-address-type": "dualstack"}))
    assert dual.warnings == ()
    # With the user's own groups the inbound CIDRs are not used at all.
    given = build(Request("default", "a"), backend_service("web"), ingress("a", {
        A + "inbound-cidrs": "::/0", A + "security-groups": "sg-1"}))
    assert given.warnings == ()


def test_a_managed_group_over_ec2_s_rule_quota_is_split() -> None:
    # Before: refused; now split, and without the backend group the bindings admit every part.
    cidrs = ",".join(f"10.0.{i}.0/24" for i in range(31))
    notes = {A + "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]', A + "inbound-cidrs": cidrs}
    built = build(Request("default", "a"), backend_service("web"), ingress("a", notes))
    parts = sorted(built.stack.security_groups)
    assert parts[0] == "ManagedLBSecurityGroup"
    assert len(parts) >= 2
    assert sum(len(g.ingress) for g in built.stack.security_groups.values()) == 62
    alone = dataclasses.replace(SETTINGS, backend_sg=BackendSettings(enabled=False))
    c = caches(ingress_class("alb"), backend_service("web"), ingress("a", notes))
    built = build_group(loader(c).load(Request("default", "a")), c, alone)
    (binding,) = built.stack.target_group_bindings.values()
    assert binding.networking is not None
    assert {p.security_group for p in binding.networking.ingress[0].from_} == {
        Ref.to(SECURITY_GROUP, p, "groupID") for p in parts}
    # A lower --max-rules-per-security-group splits sooner; past what the load balancer may
    # carry, refused.
    few = dataclasses.replace(SETTINGS, backend_sg=BackendSettings(rules_per_group=10))
    c = caches(ingress_class("alb"), backend_service("web"),
               ingress("a", {A + "inbound-cidrs": cidrs + "".join(
                   f",10.2.{i}.0/24" for i in range(10))}))
    with pytest.raises(BuildError, match=r"41 inbound IPv4 rules .* more than fit in the 4 "
                                         r"managed security groups .* with 10 rules each"):
        build_group(loader(c).load(Request("default", "a")), c, few)


def test_params_prefix_lists_replace_the_default_cidrs() -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"prefixListsIDs": ["pl-0a1"]}),
               ingress("a", annotations={A + "security-group-prefix-lists": "pl-0b2"}))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    assert _managed_rules(built) == {(80, "pl-0a1")}


def test_params_legacy_prefix_lists_spelling_is_read_as_upstream_reads_it() -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"PrefixListsIDs": ["pl-0c3"]}), ingress("a"))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    assert _managed_rules(built) == {(80, "pl-0c3")}
    both = caches(ingress_class("alb", params="p"), backend_service("web"),
                  class_params("p", {"PrefixListsIDs": ["pl-0c3"], "prefixListsIDs": ["pl-0a1"]}),
                  ingress("a"))
    with pytest.raises(BuildError, match="IngressClassParams p: cannot specify both "
                                         "'prefixListsIDs' and 'PrefixListsIDs'"):
        build_group(loader(both).load(Request("default", "a")), both, SETTINGS)


def test_params_capacity_and_ipam_are_acted_on() -> None:
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"minimumLoadBalancerCapacity": {"capacityUnits": 100},
                                  "ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-1"}}),
               ingress("a"), ingress("b", {A + "group.name": "g"}))
    built = build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
    assert built.warnings == ()
    (lb,) = built.stack.load_balancers.values()
    assert (lb.capacity_units, lb.ipv4_ipam_pool) == (100, "ipam-pool-1")


IPAM = A + "ipam-ipv4-pool-id"
COIP = A + "customer-owned-ipv4-pool"


ONE = Request("default", "a")


def _lb(*objs: Obj, request: Request = ONE) -> Any:
    if not any(o.get("kind") == "IngressClass" for o in objs):
        objs = (ingress_class("alb"), *objs)
    c = caches(backend_service("web"), *objs)
    (lb,) = build_group(loader(c).load(request), c, SETTINGS).stack.load_balancers.values()
    return lb


def test_ipam_pool_from_the_annotation_or_the_class() -> None:
    assert _lb(ingress("a")).ipv4_ipam_pool is None
    assert _lb(ingress("a", {IPAM: ""})).ipv4_ipam_pool is None  # upstream: empty is unset
    assert _lb(ingress("a", {IPAM: "ipam-pool-0a1"})).ipv4_ipam_pool == "ipam-pool-0a1"
    assert _lb(ingress_class("alb", params="p"),
               class_params("p", {"ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-0c3"}}),
               ingress("a", {IPAM: "ipam-pool-0a1"})).ipv4_ipam_pool == "ipam-pool-0c3"
    # The pool stays out of the canonical JSON (and the checkpoint) when not asked for.
    assert "ipv4_ipam_pool" not in _lb(ingress("a")).model_dump()
    g = {A + "group.name": "g"}
    with pytest.raises(BuildError, match=r'ipam-ipv4-pool-id conflicts within the group: '
                                         r'default/a has "ipam-pool-1", default/b has '
                                         r'"ipam-pool-2"'):
        _lb(ingress("a", {**g, IPAM: "ipam-pool-1"}), ingress("b", {**g, IPAM: "ipam-pool-2"}),
            request=Request("", "g"))


def test_customer_owned_pool() -> None:
    assert _lb(ingress("a", {COIP: "ipv4pool-coip-0a1"})).customer_owned_ipv4_pool == (
        "ipv4pool-coip-0a1")
    assert _lb(ingress("a")).customer_owned_ipv4_pool is None


@pytest.mark.parametrize(("key", "value", "message"), [
    (IPAM, "pool-1", '"pool-1" is not an IPAM pool ID (ipam-pool- and letters or digits)'),
    (COIP, "", '"" is empty; name a customer-owned IPv4 pool or remove the annotation'),
    (COIP, "coip-1", '"coip-1" is not a customer-owned IPv4 pool ID (ipv4pool-coip- and '
                     'letters or digits)'),
])
def test_pools_refused(key: str, value: str, message: str) -> None:
    with pytest.raises(BuildError) as info:
        _lb(ingress("a", {key: value}))
    assert str(info.value) == f"Ingress default/a: annotation {key}: {message}"


def test_class_ipam_pool_refused() -> None:
    with pytest.raises(BuildError, match=r"IngressClassParams p: "
                                         r"spec\.ipamConfiguration\.ipv4IPAMPoolId: "
                                         r'"pool" is not an IPAM pool ID'):
        _lb(ingress_class("alb", params="p"),
            class_params("p", {"ipamConfiguration": {"ipv4IPAMPoolId": "pool"}}), ingress("a"))


CAPACITY = A + "minimum-load-balancer-capacity"


def _capacity(*objs: Obj, settings: BuilderSettings = SETTINGS) -> int | None:
    if not any(o.get("kind") == "IngressClass" for o in objs):
        objs = (ingress_class("alb"), *objs)
    c = caches(backend_service("web"), *objs)
    built = build_group(loader(c).load(Request("", "g") if any(
        A + "group.name" in (meta(o).get("annotations") or {}) for o in objs)
        else Request("default", "a")), c, settings)
    (lb,) = built.stack.load_balancers.values()
    return lb.capacity_units


def test_capacity_reservation_from_the_annotation() -> None:
    assert _capacity(ingress("a")) is None  # nobody asks: AWS's reservation is left alone
    assert _capacity(ingress("a", {CAPACITY: "CapacityUnits=1000"})) == 1000
    assert _capacity(ingress("a", {CAPACITY: "CapacityUnits=0"})) == 0  # resets
    assert _capacity(ingress("a", {CAPACITY: ""})) is None  # upstream: an empty map
    g = {A + "group.name": "g"}
    assert _capacity(ingress("a", {**g, CAPACITY: "CapacityUnits=200"}),
                     ingress("b", g)) == 200
    assert _capacity(ingress("a", {**g, CAPACITY: "CapacityUnits=200"}),
                     ingress("b", {**g, CAPACITY: "CapacityUnits=200"})) == 200


@pytest.mark.parametrize(("value", "message"), [
    ("CapacityUnits=-1", 'has CapacityUnits "-1", which is out of range: want 0..2147483647'),
    ("CapacityUnits=lots", 'has CapacityUnits "lots", which is not an integer'),
    ("Units=5", 'has key "Units"; the only key is CapacityUnits'),
    ("CapacityUnits", 'has an item "CapacityUnits" that is not key=value'),
])
def test_capacity_reservation_refused(value: str, message: str) -> None:
    with pytest.raises(BuildError) as info:
        _capacity(ingress("a", {CAPACITY: value}))
    assert str(info.value) == f'Ingress default/a: annotation {CAPACITY}: "{value}" {message}'


def test_capacity_reservation_conflicts_within_a_group() -> None:
    g = {A + "group.name": "g"}
    with pytest.raises(BuildError, match=r'conflicts within the group: default/a has '
                                         r'"CapacityUnits=200", default/b has '
                                         r'"CapacityUnits=300"'):
        _capacity(ingress("a", {**g, CAPACITY: "CapacityUnits=200"}),
                  ingress("b", {**g, CAPACITY: "CapacityUnits=300"}))


def test_capacity_reservation_params_win_over_the_annotation() -> None:
    # Upstream: the class's capacityUnits, and the annotation is not even parsed.
    assert _capacity(ingress_class("alb", params="p"),
                     class_params("p", {"minimumLoadBalancerCapacity": {"capacityUnits": 0}}),
                     ingress("a", {CAPACITY: "CapacityUnits=nonsense"})) == 0
    c = caches(ingress_class("alb", params="p"), backend_service("web"), ingress("a"),
               class_params("p", {"minimumLoadBalancerCapacity": {"capacityUnits": -5}}))
    with pytest.raises(BuildError, match=r"IngressClassParams p: "
                                         r"spec\.minimumLoadBalancerCapacity\.capacityUnits"):
        build_group(loader(c).load(Request("default", "a")), c, SETTINGS)


def test_capacity_reservation_gate_off_reads_nothing_and_says_so() -> None:
    off = dataclasses.replace(SETTINGS, gates=GATES.parse("LBCapacityReservation=false"))
    c = caches(ingress_class("alb", params="p"), backend_service("web"),
               class_params("p", {"minimumLoadBalancerCapacity": {"capacityUnits": 7}}),
               ingress("a", {CAPACITY: "CapacityUnits=nonsense"}))
    built = build_group(loader(c).load(Request("default", "a")), c, off)
    (lb,) = built.stack.load_balancers.values()
    assert lb.capacity_units is None
    assert built.warnings == (
        "IngressClassParams p: spec.minimumLoadBalancerCapacity is not acted on "
        "(--feature-gates LBCapacityReservation=false); it is ignored",)
    assert [f.message for f in built.findings["default/a"]] == [
        f"annotation {CAPACITY} is not acted on (--feature-gates "
        "LBCapacityReservation=false); it is ignored"]


def test_user_groups_and_backend_rules() -> None:
    built = build(Request("default", "a"), backend_service("web"),
                  ingress("a", {A + "security-groups": "sg-1,team"}))
    assert built.stack.security_groups == {}
    (lb,) = built.stack.load_balancers.values()
    assert lb.security_groups == ("sg-1", "team")
    (binding,) = built.stack.target_group_bindings.values()
    assert binding.networking is None
    managed = build(Request("default", "a"), backend_service("web"), ingress("a", {
        A + "security-groups": "sg-1", A + "manage-backend-security-group-rules": "true"}))
    (lb,) = managed.stack.load_balancers.values()
    assert lb.security_groups == (SharedBackendSecurityGroup(), "sg-1")  # stored sorted
    (binding,) = managed.stack.target_group_bindings.values()
    assert binding.networking is not None
    assert [p.port for p in binding.networking.ingress[0].ports] == [8080]
    off = dataclasses.replace(SETTINGS, backend_sg=BackendSettings(enabled=False))
    c = caches(ingress_class("alb"), backend_service("web"), ingress("a", {
        A + "security-groups": "sg-1", A + "manage-backend-security-group-rules": "true"}))
    with pytest.raises(BuildError, match="needs the backend security group"):
        build_group(loader(c).load(Request("default", "a")), c, off)


def test_bindings_admit_the_backend_group_on_target_and_health_check_ports() -> None:
    built = build(Request("default", "a"), backend_service("web", {
        A + "healthcheck-port": "9000"}), ingress("a"))
    (lb,) = built.stack.load_balancers.values()
    assert lb.security_groups[1] == SharedBackendSecurityGroup()
    (binding,) = built.stack.target_group_bindings.values()
    assert binding.networking is not None
    rule = binding.networking.ingress[0]
    assert [p.security_group for p in rule.from_] == [SharedBackendSecurityGroup()]
    assert [p.port for p in rule.ports] == [8080, 9000]
    wide = dataclasses.replace(SETTINGS, backend_sg=BackendSettings(disable_restricted_rules=True))
    c = caches(ingress_class("alb"), backend_service("web"), ingress("a"))
    (binding,) = build_group(loader(c).load(Request("default", "a")), c,
                             wide).stack.target_group_bindings.values()
    assert binding.networking is not None
    assert [p.port for p in binding.networking.ingress[0].ports] == [None]


def test_the_alb_quotas_an_ingress_group_is_planned_against() -> None:
    def refused(quotas: Quotas, *objs: dict[str, object]) -> str:
        c = caches(ingress_class("alb"), backend_service("web"), backend_service("api"), *objs)
        with pytest.raises(GroupQuotaExceeded) as exc:
            build_group(loader(c).load(Request("default", "a")), c,
                        dataclasses.replace(SETTINGS, quotas=quotas))
        return str(exc.value.exceeded)

    two = ingress("a", paths=[ingress_path("/web", "web"), ingress_path("/api", "api")],
                  host="shop.example.com")
    assert refused(Quotas(target_groups_per_application_load_balancer=1), two).endswith(
        "2 target groups, more than the quota of 1 (--max-target-groups-per-load-balancer)")
    assert refused(Quotas(rules_per_listener=1), two).endswith(
        "listener 80: 2 rules besides the default one, more than the quota of 1 "
        "(--max-rules-per-listener)")
    # host and path (a Prefix path is two patterns, /web and /web/*): three values a rule.
    assert refused(Quotas(condition_values_per_rule=1), two).endswith(
        "3 condition values in one rule, more than the quota of 1 "
        "(--max-condition-values-per-rule)")
    certs = ",".join(f"arn:aws:acm:us-west-2:123456789012:certificate/{i}" for i in range(3))
    https = ingress("a", {A + "certificate-arn": certs, A + "listen-ports": '[{"HTTPS": 443}]'})
    assert refused(Quotas(certificates_per_listener=1), https).endswith(
        "listener 443: 2 certificates besides the default one, more than the quota of 1 "
        "(--max-certificates-per-listener)")
    # AWS's defaults: all of these build.
    for obj in (two, https):
        c = caches(ingress_class("alb"), backend_service("web"), backend_service("api"), obj)
        assert build_group(loader(c).load(Request("default", "a")), c, SETTINGS)
