"""The tracking ConfigMap's format (upstream's) and the deregistration filter."""

from __future__ import annotations

from controller.targetgroupbinding.multicluster import (
    configmap_name,
    decode,
    deregistrable,
    encode,
)


def test_format_is_upstreams() -> None:
    assert configmap_name("web") == "aws-lbc-targets-web"
    # upstream writes a Go set in any order, with no spaces; we read either and write sorted
    assert decode("10.0.0.2:80,10.0.0.1:80") == {"10.0.0.1:80", "10.0.0.2:80"}
    assert decode(" i-0abc:30080 , ,") == {"i-0abc:30080"}
    assert decode("") == decode(None) == frozenset()
    assert encode({"10.0.0.2:80", "10.0.0.1:80"}) == "10.0.0.1:80,10.0.0.2:80"


def test_only_tracked_targets_are_deregistered() -> None:
    candidates = ["10.0.0.1:80", "10.9.0.1:80", "10.0.0.2:80"]
    assert deregistrable(candidates, None) == []  # no ConfigMap yet: initial population
    assert deregistrable(candidates, frozenset()) == []
    assert deregistrable(candidates, frozenset({"10.0.0.1:80", "10.0.0.2:80", "x:1"})) == [
        "10.0.0.1:80", "10.0.0.2:80"]
