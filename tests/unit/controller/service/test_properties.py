"""Whatever the annotations and spec, qualifying and parsing a Service either succeed or raise
AnnotationError with one line naming a key we read; nothing else escapes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.service import (
    SERVICE_ANNOTATION_KEYS,
    parse_service_config,
    qualifies,
    relevant_annotations,
)
from controller.service.annotations import PREFIX
from controller.settings import StackDefaults

KEYS = sorted(SERVICE_ANNOTATION_KEYS)

# Values near the valid ones find more paths than uniform text does.
VALUES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "*", "true", "false", "1", "0", "ip", "instance", "external", "nlb-ip",
                     "internal", "internet-facing", "ipv4", "dualstack", "TCP", "http", "HTTPS",
                     "traffic-port", "http", "80", "0", "70000", "-1", "10", "200-399", "/",
                     "k=v", "a=b,c=d", "=", "arn:aws:acm:x", "ssl", "tcp", "None", "HTTP2Only",
                     "proxy_protocol_v2.enabled=", "preserve_client_ip.enabled=x",
                     "deletion_protection.enabled=maybe", "my-nlb", "-x", "x" * 40]),
    st.from_regex(r"[+-]?[0-9]{1,22}", fullmatch=True),
)

ANNOTATIONS = st.dictionaries(
    st.one_of(st.sampled_from(KEYS), st.text(max_size=20),
              st.text(max_size=10).map(lambda s: PREFIX + s)),
    VALUES, max_size=12)

SPEC = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["LoadBalancer", "ClusterIP", "NodePort", None, 3]),
    "loadBalancerClass": st.sampled_from(["service.k8s.aws/nlb", "other", None, ""]),
    "externalTrafficPolicy": st.sampled_from(["Local", "Cluster", None]),
    "healthCheckNodePort": st.one_of(st.integers(-5, 70000), st.none(), st.text(max_size=3)),
    "ports": st.one_of(st.none(), st.lists(st.fixed_dictionaries({}, optional={
        "name": st.one_of(st.text(max_size=6), st.none(), st.integers()),
        "port": st.integers(0, 70000)}), max_size=3)),
})

DEFAULTS = st.builds(
    StackDefaults,
    scheme=st.sampled_from(["internal", "internet-facing"]),
    target_type=st.sampled_from(["instance", "ip"]),
    tags=st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    external_managed_tags=st.frozensets(st.text(max_size=5), max_size=3),
)


def make(annotations: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "n", "annotations": annotations},
            "spec": spec}


@settings(max_examples=400, deadline=None)
@given(annotations=ANNOTATIONS, spec=SPEC, defaults=DEFAULTS)
def test_parse_raises_only_annotation_errors(annotations: dict[str, str], spec: dict[str, Any],
                                             defaults: StackDefaults) -> None:
    svc = make(annotations, spec)
    failure: AnnotationError | None = None
    try:
        cfg = parse_service_config(svc, defaults=defaults)
    except AnnotationError as exc:
        failure = exc
    if failure is not None:
        assert failure.key in SERVICE_ANNOTATION_KEYS
        assert str(failure).startswith(f"annotation {failure.key}")
        assert len(str(failure).splitlines()) == 1
    else:
        # Valid configs satisfy the invariants the model builder relies on.
        hc = cfg.health_check
        assert (hc.path is None) == (hc.protocol == "TCP")
        assert 5 <= hc.interval_seconds <= 300
        assert 2 <= hc.timeout_seconds <= 120
        assert set(defaults.tags.items()) <= set(cfg.tags.items())
        assert cfg == parse_service_config(svc, defaults=defaults)  # deterministic


@settings(max_examples=300, deadline=None)
@given(annotations=ANNOTATIONS, spec=SPEC, cls=st.text(max_size=20))
def test_qualifies_is_total(annotations: dict[str, str], spec: dict[str, Any], cls: str) -> None:
    svc = make(annotations, spec)
    result = qualifies(svc, load_balancer_class=cls)
    assert isinstance(result, bool)
    if result:
        assert spec.get("type") == "LoadBalancer"


@settings(max_examples=200, deadline=None)
@given(annotations=ANNOTATIONS, spec=SPEC, noise=st.dictionaries(
    st.text(max_size=20).filter(lambda k: k not in SERVICE_ANNOTATION_KEYS), st.text(max_size=5),
    max_size=4))
def test_other_annotations_never_change_the_outcome(annotations: dict[str, str],
                                                    spec: dict[str, Any],
                                                    noise: dict[str, str]) -> None:
    """What the checkpoint digests (relevant_annotations) decides the parse result alone."""
    base = make(annotations, spec)
    noisy = make({**noise, **annotations}, spec)
    assert relevant_annotations(base) == relevant_annotations(noisy)

    def outcome(svc: dict[str, Any]) -> object:
        try:
            return parse_service_config(svc, defaults=StackDefaults())
        except AnnotationError as exc:
            return str(exc)

    assert outcome(base) == outcome(noisy)
