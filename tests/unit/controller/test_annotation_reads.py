"""The keys the parsers read are exactly the catalogue's acted-on ones: objects carrying every
key are parsed with `recording()` on, for an Ingress (with and without IngressClassParams), its
backend Service (`found_in()`: the keys read from the Service itself) and an NLB Service. A key
added to a parser without its catalogue entry (or marked acted on and never read) fails here."""

from __future__ import annotations

from controller.annotations import found_in, recording
from controller.apis import LEGACY_CLASS_ANNOTATION
from controller.apis.catalogue import (
    INGRESS_ANNOTATION_KEYS,
    INGRESS_BACKEND_KEYS,
    SERVICE_ANNOTATION_KEYS,
)
from controller.service.model import build_stack
from runtime.reconcile import Request
from tests.unit.controller.annotation_objects import (
    INGRESS,
    INGRESS_GROUP,
    INGRESS_JWT,
    REQUEST,
    SERVICE,
    SERVICE_INTERNAL,
    SERVICE_PUBLIC_DUALSTACK,
    TARGET_GROUP,
    build,
    ingress_world,
    namespace_only_params,
    nlb,
)
from tests.unit.controller.service.test_model import SETTINGS as SERVICE_SETTINGS
from tests.unit.controller.upstream_keys import INGRESS_PREFIX, SERVICE_PREFIX


def _ours(reads: set[str], prefix: str) -> set[str]:
    return {k for k in reads if k.startswith(prefix)}


def _ingress_reads(*, params: bool) -> set[str]:
    reads: set[str] = set()
    named = Request("", INGRESS_GROUP["group.name"])
    for notes, request in ((INGRESS, REQUEST), ({**INGRESS, **INGRESS_GROUP}, named),
                           (INGRESS_JWT, REQUEST)):
        c, _ = ingress_world(notes, params=namespace_only_params() if params else None)
        with recording() as seen:
            built = build(c, request)
        assert built.stack.load_balancers
        reads |= seen
    return reads


def test_an_ingress_without_class_parameters_reads_exactly_the_acted_on_keys() -> None:
    reads = _ingress_reads(params=False)
    assert _ours(reads, INGRESS_PREFIX) == INGRESS_ANNOTATION_KEYS
    assert LEGACY_CLASS_ANNOTATION in reads


def test_an_ingress_with_class_parameters_reads_exactly_the_acted_on_keys() -> None:
    reads = _ingress_reads(params=True)
    assert _ours(reads, INGRESS_PREFIX) == INGRESS_ANNOTATION_KEYS


def test_a_backend_service_is_read_for_exactly_its_acted_on_keys() -> None:
    every = {**INGRESS, **{"transforms.web": "{}", "tags": "team=web"}}
    c, _ = ingress_world({"listen-ports": '[{"HTTPS": 443}]', "certificate-arn":
                          INGRESS["certificate-arn"]}, every)
    svc = c.services.get("default/web")
    assert svc is not None
    with found_in() as found:
        build(c)
    assert found[id(svc["metadata"]["annotations"])] == INGRESS_BACKEND_KEYS
    assert {INGRESS_PREFIX + k.replace(".web.80", ".*") for k in TARGET_GROUP
            } == INGRESS_BACKEND_KEYS


def test_an_nlb_service_reads_exactly_the_acted_on_keys() -> None:
    reads: set[str] = set()
    for notes in (SERVICE, SERVICE_INTERNAL, SERVICE_PUBLIC_DUALSTACK):
        with recording() as seen:
            stack = build_stack(nlb(notes), settings=SERVICE_SETTINGS)
        assert stack.load_balancers
        reads |= seen
    assert _ours(reads, SERVICE_PREFIX) == SERVICE_ANNOTATION_KEYS


def test_the_rich_objects_carry_every_acted_on_key() -> None:
    """The objects above are what makes the tests above mean anything."""
    assert {INGRESS_PREFIX + k.replace(".web.80", ".*").replace(".web", ".*")
            .replace(".HTTPS-443", ".*")
            for k in {**INGRESS, **INGRESS_GROUP, **INGRESS_JWT}} == INGRESS_ANNOTATION_KEYS
    assert {SERVICE_PREFIX + k.replace(".TLS-443", ".*").replace(".443", ".*")
            for k in {**SERVICE, **SERVICE_INTERNAL, **SERVICE_PUBLIC_DUALSTACK}
            } == SERVICE_ANNOTATION_KEYS
