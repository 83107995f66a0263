"""controller/checkpoint.py: the value, reading and writing it, and the handler priority."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import checkpoint
from controller.apis import CHECKPOINT_ANNOTATION
from controller.model import (
    AuthenticateOidcAction,
    FixedResponseAction,
    Listener,
    LoadBalancer,
    Stack,
    StackBuilder,
    StackContext,
    SubnetDiscovery,
)
from runtime.handlers import Deferred, EnqueueForObject, PriorityFn
from runtime.predicates import Event, EventKind
from runtime.reconcile import LOW, NORMAL, Request
from tests.support.queues import decided


def alb(*, client_secret: str = "s3cret", client_id: str = "id", port: int = 443,
        version: str = "uid/1") -> Stack:
    b = StackBuilder("default/web", kind="ingress", context=StackContext(
        cluster_name="c", region="us-west-2", vpc_id="vpc-1"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-default-web-0123456789", type="application",
        subnets=SubnetDiscovery(role="internal-elb")))
    b.add_listener(str(port), Listener(
        load_balancer_arn=lb, port=port, protocol="HTTPS", certificates=["arn:aws:acm:x"],
        default_actions=[
            AuthenticateOidcAction(issuer="https://idp", authorization_endpoint="https://idp/a",
                                   token_endpoint="https://idp/t",
                                   user_info_endpoint="https://idp/u", client_id=client_id,
                                   client_secret=client_secret, credentials_version=version),
            FixedResponseAction(status_code="200")]))
    return b.build()


def obj(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default",
                         "annotations": annotations or {}}}


def test_value_is_versioned_digest() -> None:
    value = checkpoint.compute(alb(), version=1)
    prefix, _, digest = value.partition(":")
    assert prefix == "v1"
    assert len(digest) == 43
    assert set(digest) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert checkpoint.compute(alb(), version=1) == value
    assert checkpoint.compute(alb(), version=2) == f"v2:{digest}"
    with pytest.raises(ValueError, match="version"):
        checkpoint.compute(alb(), version=0)


def test_secret_version_changes_the_value_and_the_secret_is_never_in_it() -> None:
    before, rotated = alb(), alb(client_secret="rotated", client_id="other", version="uid/2")
    # The value reveals nothing of the secret: the same version with other credentials
    # gives the same checkpoint; the rotated Secret's new version changes it.
    assert checkpoint.compute(alb(client_secret="x", client_id="y"), version=1) == \
        checkpoint.compute(before, version=1)
    assert checkpoint.compute(before, version=1) != checkpoint.compute(rotated, version=1)
    assert checkpoint.compute(alb(port=8443), version=1) != checkpoint.compute(before, version=1)


def test_stored_and_group_stored() -> None:
    assert checkpoint.stored(obj()) == ""
    assert checkpoint.stored({"metadata": {}}) == ""
    assert checkpoint.stored(obj({CHECKPOINT_ANNOTATION: "v1:x"})) == "v1:x"
    a, b = obj({CHECKPOINT_ANNOTATION: "v1:a"}), obj(
        {CHECKPOINT_ANNOTATION: "v1:b"})
    assert checkpoint.group_stored([a, obj(), a]) == "v1:a"  # members without it are ignored
    assert checkpoint.group_stored([a, b]) == ""  # conflicting values force a deploy
    assert checkpoint.group_stored([obj(), obj()]) == ""
    assert checkpoint.group_stored([]) == ""


def test_patches() -> None:
    assert checkpoint.patch("v1:x", timestamp=1700000000.7) == {"metadata": {"annotations": {
        "elbv2.k8s.aws/checkpoint": "v1:x",
        "elbv2.k8s.aws/checkpoint-timestamp": "1700000000"}}}
    assert checkpoint.removal_patch() == {"metadata": {"annotations": {
        "elbv2.k8s.aws/checkpoint": None, "elbv2.k8s.aws/checkpoint-timestamp": None}}}
    assert checkpoint.without_checkpoint({
        "elbv2.k8s.aws/checkpoint": "a/b", "elbv2.k8s.aws/checkpoint-timestamp": "1",
        "team": "x"}) == {"team": "x"}
    assert not checkpoint.matches(None, "")
    assert not checkpoint.matches("", "")
    assert checkpoint.matches("v1:a", "v1:a")


class Recorded:
    """The enqueue side of a controller: what the handler asked for."""

    def __init__(self) -> None:
        self.items: list[tuple[Request, int]] = []

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        self.items.append((request, priority))

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        self.enqueue(request, priority=decision())  # decided at once


def _ask(fn: PriorityFn, o: dict[str, Any], kind: EventKind, default: int) -> int | Deferred:
    """What the handler of `o`'s own kind asks: its request, the event, the default."""
    return fn(Request.for_object(o), Event(kind, o), default)


def _priority(compute: Any, *, enabled: bool = True) -> Any:
    fn = checkpoint.priority_function(compute, enabled=enabled)
    return lambda o, kind, default: decided(_ask(fn, o, kind, default))


def test_initial_adds_and_resyncs_that_match_go_low() -> None:
    stored = obj({CHECKPOINT_ANNOTATION: "v1:same"})
    fn = _priority(lambda o: "v1:same")
    for kind in (EventKind.INITIAL_ADD, EventKind.RESYNC):
        assert fn(stored, kind, LOW) == LOW
        assert fn(obj(), kind, LOW) == NORMAL  # never written
        assert _priority(lambda o: "v1:other")(stored, kind, LOW) == NORMAL
        assert _priority(lambda o: None)(stored, kind, LOW) == NORMAL
    for kind in (EventKind.ADD, EventKind.UPDATE, EventKind.DELETE):
        assert fn(stored, kind, NORMAL) == NORMAL
        assert fn(stored, kind, 7) == 7  # other events keep their default


def test_only_a_stored_checkpoint_waits_for_the_model() -> None:
    built: list[Any] = []

    def compute(o: Any) -> str:
        built.append(o)
        return "v1:same"

    fn = checkpoint.priority_function(compute, enabled=True)
    assert _ask(fn, obj(), EventKind.INITIAL_ADD, LOW) == NORMAL  # nothing stored: at once
    later = _ask(fn, obj({CHECKPOINT_ANNOTATION: "v1:same"}), EventKind.INITIAL_ADD, LOW)
    assert isinstance(later, Deferred)
    assert built == []  # the model is built when the decision is made, not in the handler
    assert later() == LOW
    assert later() == LOW
    assert len(built) == 1  # once, however many requests share the decision


def test_disabled_is_always_normal() -> None:
    stored = obj({CHECKPOINT_ANNOTATION: "v1:same"})
    fn = _priority(lambda o: "v1:same", enabled=False)
    for kind in EventKind:
        assert fn(stored, kind, LOW) == NORMAL


def test_a_failing_computation_never_escapes_the_handler() -> None:
    def bad_input(o: Any) -> str:
        raise ValueError("annotation x: bad")

    def bug(o: Any) -> str:
        raise KeyError("spec")

    target = Recorded()
    stored = obj({CHECKPOINT_ANNOTATION: "v1:same"})
    for compute in (bad_input, bug):
        fn = checkpoint.priority_function(compute, enabled=True)
        EnqueueForObject(target, priority=fn).on_add(stored, True)
    assert target.items == [(Request("default", "web"), NORMAL)] * 2


def test_custom_reader_for_groups() -> None:
    members = [obj({CHECKPOINT_ANNOTATION: "v1:g"}), obj()]
    fn = checkpoint.priority_function(lambda o: "v1:g", enabled=True,
                                      current=lambda o: checkpoint.group_stored(members))
    assert decided(_ask(fn, obj(), EventKind.INITIAL_ADD, LOW)) == LOW


@given(st.text(min_size=1), st.text())
def test_match_iff_equal_nonempty(computed: str, current: str) -> None:
    fn = _priority(lambda o: computed)
    expected = LOW if computed == current else NORMAL
    assert fn(obj({CHECKPOINT_ANNOTATION: current}), EventKind.RESYNC,
              LOW) == expected
