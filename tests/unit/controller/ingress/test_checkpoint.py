"""Group checkpoints: stable under everything that does not change the model, sensitive to
everything that does (members, Services, Secrets, class parameters)."""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller import checkpoint
from controller.apis import CHECKPOINT_ANNOTATION
from controller.ingress.model import BUILDER_VERSION, build_group
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    secret,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
G = {A + "group.name": "g"}
OIDC = ('{"issuer":"https://i","authorizationEndpoint":"https://i/a","tokenEndpoint":'
        '"https://i/t","userInfoEndpoint":"https://i/u","secretName":"oidc"}')


def world() -> list[dict[str, Any]]:
    return [
        ingress_class("alb", params="p"), class_params("p", {"tags": [{"key": "k",
                                                                       "value": "v"}]}),
        backend_service("web"), backend_service("api", port=81),
        secret("oidc", {"clientID": "id", "clientSecret": "one"}),
        ingress("a", paths=[ingress_path("/a", "web"), ingress_path("/api", "api", 81)],
                annotations={**G, A + "group.order": "1", A + "tags": "x=1,y=2"}),
        ingress("b", host="b.example.com", paths=[ingress_path("/b", "web")],
                annotations={**G, A + "auth-type": "oidc", A + "auth-idp-oidc": OIDC,
                             A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
                             A + "certificate-arn": "arn:aws:acm:r:1:certificate/c"}),
    ]


def value(objs: list[dict[str, Any]]) -> str:
    c = caches(*objs)
    built = build_group(loader(c).load(Request("", "g")), c, SETTINGS)
    return checkpoint.compute(built.stack, version=BUILDER_VERSION)


def test_value_format() -> None:
    v = value(world())
    assert v.startswith(f"v{BUILDER_VERSION}:")
    assert len(v.split(":", 1)[1]) == 43


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_stable_under_order_and_irrelevant_fields(seed: int) -> None:
    base = value(world())
    rng = random.Random(seed)
    objs = copy.deepcopy(world())
    rng.shuffle(objs)
    for obj in objs:
        meta = obj["metadata"]
        if "data" not in obj:  # a Secret's resourceVersion stands for its data (below)
            meta["resourceVersion"] = str(rng.randint(1, 10**6))
        meta["labels"] = {"noise": str(rng.random())}
        if "annotations" in meta:
            items = list(meta["annotations"].items())
            rng.shuffle(items)
            meta["annotations"] = dict(items)
            meta["annotations"][CHECKPOINT_ANNOTATION] = "v1:old"
        obj["status"] = {"loadBalancer": {"ingress": [{"hostname": str(rng.random())}]}}
    assert value(objs) == base


def _changed(mutate: Any) -> str:
    objs = copy.deepcopy(world())
    mutate({str(o["metadata"]["name"]) + ("/svc" if "ports" in (o.get("spec") or {}) else ""):
            o for o in objs})
    return value(objs)


def test_sensitive_to_what_the_model_reads() -> None:
    base = value(world())
    changes = {
        # Any write to the Secret gives it a new resourceVersion: that, not the secret itself,
        # is what the checkpoint covers.
        "secret version": lambda o: o["oidc"]["metadata"].update(resourceVersion="999"),
        "secret recreated": lambda o: o["oidc"]["metadata"].update(uid="uid-new"),
        "service port": lambda o: o["web/svc"]["spec"]["ports"][0].update(targetPort=9090),
        "service uid": lambda o: o["web/svc"]["metadata"].update(uid="other"),
        "service annotation": lambda o: o["web/svc"]["metadata"]["annotations"].update(
            {A + "healthcheck-path": "/hc"}),
        "member annotation": lambda o: o["a"]["metadata"]["annotations"].update(
            {A + "tags": "x=2"}),
        "group order": lambda o: o["a"]["metadata"]["annotations"].update(
            {A + "group.order": "-1"}),
        "path": lambda o: o["b"]["spec"]["rules"][0]["http"]["paths"][0].update(path="/c"),
        "class params": lambda o: o["p"]["spec"].update(scheme="internet-facing"),
    }
    seen = {base}
    for what, change in changes.items():
        v = _changed(change)
        assert v not in seen, what
        seen.add(v)
