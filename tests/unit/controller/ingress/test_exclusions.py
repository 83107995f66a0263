"""Which members a group admits (`controller/ingress/exclusions.py`): the namespace policy,
groups enforced by IngressClassParams, the legacy class annotation, and newcomers that cannot
be built, against established members that hold the group instead."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.errors import InvalidInput
from controller.ingress.caches import Caches
from controller.ingress.exclusions import GroupNamespaces, Settled, settle
from controller.ingress.groups import Group
from controller.ingress.model import BuiltGroup, build_group
from controller.model import Quotas
from runtime.objects import Obj
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    with_hostname,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

GROUP = "alb.ingress.kubernetes.io/group.name"
ORDER = "alb.ingress.kubernetes.io/group.order"
SCHEME = "alb.ingress.kubernetes.io/scheme"
FINALIZER = "group.ingress.k8s.aws/storefront"
STOREFRONT = Request("", "storefront")


def member(name: str, namespace: str, *, created: str, established: bool = False,
           annotations: dict[str, str] | None = None) -> Obj:
    ing = ingress(name, namespace=namespace, paths=[ingress_path(f"/{name}", "web")],
                  annotations={GROUP: "storefront", **(annotations or {})},
                  finalizers=[FINALIZER] if established else None)
    ing["metadata"]["creationTimestamp"] = created
    return with_hostname(ing) if established else ing


def run(c: Caches, request: Request = STOREFRONT, *, policy: GroupNamespaces = "params",
        unknown: tuple[Obj, ...] = ()) -> Settled[BuiltGroup]:
    return settle(loader(c).load(request), caches=c, policy=policy,
                  build=lambda g: build_group(g, c, SETTINGS), unknown=unknown)


def names(group: Group) -> list[str]:
    return [m.key for m in group.members]


def excluded(group: Group) -> dict[str, str]:
    return {f"{ing['metadata']['namespace']}/{ing['metadata']['name']}": why
            for ing, why in group.excluded}


def shop(*extra: Obj) -> Caches:
    return caches(ingress_class("alb"), backend_service("web", namespace="shop"),
                  backend_service("web", namespace="attacker"), *extra)


def test_an_outsider_naming_a_group_is_left_out_under_the_default_policy() -> None:
    c = shop(member("front", "shop", created="2024-01-01T00:00:00Z", established=True),
             member("grab", "attacker", created="2024-02-01T00:00:00Z",
                    annotations={ORDER: "-1000"}))
    settled = run(c)
    assert names(settled.group) == ["shop/front"]
    assert "belongs to namespace shop" in excluded(settled.group)["attacker/grab"]
    assert settled.built is not None
    rules = settled.built.stack.listener_rules
    assert len(rules) == 1  # only the team's /front
    # upstream's behaviour when the operator asks for it
    assert names(run(c, policy="any").group) == ["attacker/grab", "shop/front"]


def test_the_group_namespace_is_the_oldest_established_members() -> None:
    c = shop(member("late", "shop", created="2024-05-01T00:00:00Z", established=True),
             member("early", "attacker", created="2024-01-01T00:00:00Z"))
    group = run(c).group
    assert names(group) == ["shop/late"]
    # no established member: the oldest member decides
    c = shop(member("late", "shop", created="2024-05-01T00:00:00Z"),
             member("early", "attacker", created="2024-01-01T00:00:00Z"))
    assert names(run(c).group) == ["attacker/early"]


def test_an_established_outsider_holds_the_group_rather_than_losing_its_rules() -> None:
    c = shop(member("front", "shop", created="2024-01-01T00:00:00Z", established=True),
             member("old", "attacker", created="2024-02-01T00:00:00Z", established=True))
    settled = run(c)
    assert settled.group.held is not None
    assert "attacker/old" in settled.group.held
    assert settled.built is None
    assert isinstance(settled.error, InvalidInput)


def test_a_finalizer_written_by_hand_makes_no_established_member() -> None:
    """An outsider may add the group's finalizer to its own Ingress (even an old one); the
    group was never deployed with it (no hostname in its status, which only the controller
    writes), so it neither holds the group nor makes its namespace the group's."""
    forged = member("old", "attacker", created="2023-01-01T00:00:00Z")
    forged["metadata"]["finalizers"] = [FINALIZER]
    c = shop(member("front", "shop", created="2024-01-01T00:00:00Z", established=True), forged)
    settled = run(c)
    assert settled.group.held is None
    assert names(settled.group) == ["shop/front"]
    assert "belongs to namespace shop" in excluded(settled.group)["attacker/old"]


def test_a_leaving_member_keeps_the_namespace_of_its_group() -> None:
    """While the team's last Ingress is being deleted, an outsider waiting for the name does
    not inherit the team's load balancer."""
    leaving = member("front", "shop", created="2024-01-01T00:00:00Z", established=True)
    leaving["metadata"]["deletionTimestamp"] = "2024-06-01T00:00:00Z"
    c = shop(leaving, member("grab", "attacker", created="2024-02-01T00:00:00Z"))
    settled = run(c)
    assert names(settled.group) == []
    assert [i["metadata"]["name"] for i in settled.group.leaving] == ["front"]
    assert "attacker/grab" in excluded(settled.group)


def test_a_group_enforced_by_class_parameters_cannot_be_named_directly() -> None:
    labels = {"metadata": {"name": "shop", "labels": {"team": "shop"}}}
    c = caches(ingress_class("alb", params="front"), ingress_class("plain"),
               class_params("front", {"group": {"name": "storefront"},
                                      "namespaceSelector": {"matchLabels": {"team": "shop"}}}),
               labels, backend_service("web", namespace="shop"),
               backend_service("web", namespace="attacker"),
               ingress("front", namespace="shop", paths=[ingress_path("/front", "web")]),
               ingress("grab", namespace="attacker", paths=[ingress_path("/grab", "web")],
                       class_name="plain", annotations={GROUP: "storefront"}),
               ingress("legacy", namespace="attacker", paths=[ingress_path("/legacy", "web")],
                       class_name=None,
                       annotations={"kubernetes.io/ingress.class": "alb"}))
    settled = run(c, policy="any")
    assert names(settled.group) == ["shop/front"]
    reasons = excluded(settled.group)
    assert "enforced by IngressClassParams front" in reasons["attacker/grab"]
    # The legacy annotation names class alb: its parameters' namespaceSelector applies, so
    # the Ingress is in no group but its own, where it is left out too.
    assert "attacker/legacy" not in reasons
    own = run(c, Request("attacker", "legacy"), policy="any")
    assert names(own.group) == []
    assert "not selected by the namespaceSelector" in excluded(own.group)["attacker/legacy"]


def test_a_conflicting_newcomer_is_left_out_and_the_rest_builds() -> None:
    c = shop(member("front", "shop", created="2024-01-01T00:00:00Z", established=True,
                    annotations={SCHEME: "internal"}),
             member("new", "shop", created="2024-02-01T00:00:00Z",
                    annotations={SCHEME: "internet-facing"}),
             member("fine", "shop", created="2024-03-01T00:00:00Z"))
    settled = run(c)
    assert names(settled.group) == ["shop/fine", "shop/front"]
    reason = excluded(settled.group)["shop/new"]
    assert "conflicts" in reason
    assert "shop/front" in reason
    assert settled.built is not None
    assert len(settled.built.stack.listener_rules) == 2


def test_established_members_that_conflict_hold_the_group() -> None:
    c = shop(member("a", "shop", created="2024-01-01T00:00:00Z", established=True,
                    annotations={SCHEME: "internal"}),
             member("b", "shop", created="2024-02-01T00:00:00Z", established=True,
                    annotations={SCHEME: "internet-facing"}))
    settled = run(c)
    assert settled.built is None
    assert settled.group.held is not None
    assert "conflicts" in settled.group.held
    assert excluded(settled.group) == {}


def test_two_new_members_the_older_one_wins() -> None:
    c = shop(member("b", "shop", created="2024-01-01T00:00:00Z",
                    annotations={SCHEME: "internal"}),
             member("a", "shop", created="2024-02-01T00:00:00Z",
                    annotations={SCHEME: "internet-facing"}))
    settled = run(c)
    assert names(settled.group) == ["shop/b"]
    assert list(excluded(settled.group)) == ["shop/a"]


def test_a_single_member_that_does_not_build_holds_its_own_group() -> None:
    c = caches(ingress_class("alb"),
               ingress("alone", paths=[ingress_path("/", "missing")]))
    settled = run(c, Request("default", "alone"))
    assert settled.built is None
    assert settled.group.held is not None
    assert "missing" in settled.group.held


@pytest.mark.parametrize("policy", ["single", "params"])
def test_single_keeps_even_enforced_groups_in_one_namespace(policy: Any) -> None:
    ns = [{"metadata": {"name": n, "labels": {"team": "x"}}} for n in ("one", "two")]
    c = caches(ingress_class("alb", params="p"),
               class_params("p", {"group": {"name": "storefront"}}), *ns,
               backend_service("web", namespace="one"), backend_service("web", namespace="two"),
               ingress("a", namespace="one", paths=[ingress_path("/a", "web")]),
               ingress("b", namespace="two", paths=[ingress_path("/b", "web")]))
    for ing in c.ingresses.list():
        ing["metadata"]["creationTimestamp"] = ("2024-01-01T00:00:00Z"
                                                if ing["metadata"]["name"] == "a"
                                                else "2024-02-01T00:00:00Z")
    group = run(c, policy=policy).group
    if policy == "single":
        assert names(group) == ["one/a"]
        assert "not at all" in excluded(group)["two/b"]
    else:
        assert names(group) == ["one/a", "two/b"]


def test_vanished_members_are_carried_on_the_settled_group() -> None:
    gone = member("gone", "shop", created="2024-01-01T00:00:00Z", established=True)
    c = shop(member("front", "shop", created="2024-02-01T00:00:00Z", established=True))
    group = run(c, unknown=(gone,)).group
    assert [i["metadata"]["name"] for i in group.unknown] == ["gone"]


def _with_paths(name: str, n: int, *, order: int, created: str,
                established: bool = False) -> Obj:
    ing = member(name, "shop", created=created, established=established,
                 annotations={ORDER: str(order)})
    ing["spec"]["rules"][0]["http"]["paths"] = [ingress_path(f"/{name}/{i}", "web")
                                                for i in range(n)]
    return ing


def _quota_run(c: Caches, rules: int) -> Settled[BuiltGroup]:
    limited = dataclasses.replace(SETTINGS, quotas=Quotas(rules_per_listener=rules))
    return settle(loader(c).load(STOREFRONT), caches=c, policy="params",
                  build=lambda g: build_group(g, c, limited))


def test_a_member_past_a_quota_is_left_out_alone_in_the_group_s_order() -> None:
    # 4 + 3 + 2 rules on listener 80, quota 6: planned in group.order, "b" (order 2) would
    # take the listener to 7 rules and is left out; "c" (order 3) still fits.
    c = shop(_with_paths("c", 2, order=3, created="2024-01-01T00:00:00Z"),
             _with_paths("b", 3, order=2, created="2024-01-02T00:00:00Z"),
             _with_paths("a", 4, order=1, created="2024-01-03T00:00:00Z"))
    settled = _quota_run(c, 6)
    assert names(settled.group) == ["shop/a", "shop/c"]
    assert excluded(settled.group) == {"shop/b": (
        "Ingress shop/b would take the group past an AWS quota: load balancer "
        f"{settled.built.stack.load_balancers['LoadBalancer'].name if settled.built else ''}: "
        "listener 80: 7 rules besides the default one, more than the quota of 6 "
        "(--max-rules-per-listener)")}
    assert settled.built is not None
    assert len(settled.built.stack.listener_rules) == 6
    assert settled.group.held is None
    # The same answer whatever the creation times say.
    again = _quota_run(shop(_with_paths("c", 2, order=3, created="2024-01-03T00:00:00Z"),
                            _with_paths("b", 3, order=2, created="2024-01-01T00:00:00Z"),
                            _with_paths("a", 4, order=1, created="2024-01-02T00:00:00Z")), 6)
    assert list(excluded(again.group)) == ["shop/b"]


def test_a_newcomer_never_pushes_an_established_member_past_a_quota() -> None:
    # The newcomer comes first in group.order, but the established member is admitted first.
    c = shop(_with_paths("old", 4, order=5, created="2024-01-01T00:00:00Z", established=True),
             _with_paths("new", 4, order=1, created="2024-02-01T00:00:00Z"))
    settled = _quota_run(c, 6)
    assert names(settled.group) == ["shop/old"]
    assert list(excluded(settled.group)) == ["shop/new"]
    # An established member that grew past the quota on its own is left out alone too: the
    # group does not hold, the rest converges.
    c = shop(_with_paths("big", 7, order=1, created="2024-01-01T00:00:00Z", established=True),
             _with_paths("small", 2, order=2, created="2024-01-02T00:00:00Z",
                         established=True))
    settled = _quota_run(c, 6)
    assert settled.group.held is None
    assert names(settled.group) == ["shop/small"]
    assert "listener 80: 7 rules besides the default one" in excluded(settled.group)["shop/big"]
