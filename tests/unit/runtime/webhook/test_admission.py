"""AdmissionReview decoding (hostile bodies are one clear ReviewError) and encoding of the
answers, checked against what the API server reads from them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from runtime.envtest.admission.review import verdict
from runtime.webhook.admission import (
    ReviewError,
    allowed,
    denied,
    encode_review,
    errored,
    parse_review,
    patched,
)


def review(api_version: str = "admission.k8s.io/v1", **request: Any) -> bytes:
    body = {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "name": "c", "namespace": "default",
            "userInfo": {"username": "alice"}, "object": {"metadata": {"name": "c"}},
            "oldObject": None, "dryRun": False, **request}
    return json.dumps({"apiVersion": api_version, "kind": "AdmissionReview",
                       "request": body}).encode()


def test_a_v1_review_is_decoded() -> None:
    version, req = parse_review(review())
    assert version == "admission.k8s.io/v1"
    assert (req.uid, req.operation, req.name, req.namespace) == ("u-1", "CREATE", "c",
                                                                "default")
    assert req.kind.kind == "ConfigMap"
    assert req.resource.resource == "configmaps"
    assert req.object == {"metadata": {"name": "c"}}
    assert req.old_object is None
    assert req.user_info == {"username": "alice"}
    assert req.request_kind is None


def test_a_v1beta1_review_keeps_its_version() -> None:
    version, _ = parse_review(review("admission.k8s.io/v1beta1"))
    assert version == "admission.k8s.io/v1beta1"


@pytest.mark.parametrize(("body", "message"), [
    (b"", "request body is empty"),
    (b"{not json", "couldn't decode the AdmissionReview"),
    (b"[1, 2]", "the body is not a JSON object"),
    (b"[" * 100_000 + b"]" * 100_000, "couldn't decode the AdmissionReview"),
    (json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(),
     "expected an AdmissionReview of admission.k8s.io/v1 or admission.k8s.io/v1beta1, got "
     "v1, Kind=Pod"),
    (json.dumps({"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview"}).encode(),
     "got admission.k8s.io/v2, Kind=AdmissionReview"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
     "the AdmissionReview has no request"),
    (review(uid=""), "request.uid is required"),
    (review(uid=7), "request.uid must be a string"),
    (review(operation="PATCH"), "request.operation must be one of"),
    (review(kind=None), "request.kind is required"),
    (review(kind="ConfigMap"), "request.kind must be an object"),
    (review(resource={"group": 1}), "request.resource.group must be a string"),
    (review(object=[1]), "request.object must be an object"),
    (review(dryRun="yes"), "request.dryRun must be a boolean"),
])
def test_hostile_bodies_are_one_clear_error(body: bytes, message: str) -> None:
    with pytest.raises(ReviewError) as info:
        parse_review(body)
    assert message in str(info.value)
    assert info.value.code == 400


def answer(response: Any, *, mutating: bool = False) -> Any:
    return verdict(encode_review("admission.k8s.io/v1", "u-1", response), "u-1",
                   mutating=mutating)


def test_a_denial_is_forbidden_with_its_message() -> None:
    got = answer(denied("no", warnings=["careful"]))
    assert got.allowed is False
    assert got.status == {"code": 403, "reason": "Forbidden", "message": "no"}
    assert got.warnings == ("careful",)


def test_allowed_and_errored() -> None:
    assert answer(allowed()).allowed is True
    got = answer(errored(500, "boom"))
    assert (got.allowed, got.status) == (False, {"code": 500, "message": "boom"})


def test_patched_carries_a_base64_json_patch() -> None:
    response = patched({"metadata": {}}, {"metadata": {"labels": {"a": "b"}}})
    raw = json.loads(encode_review("admission.k8s.io/v1", "u-1", response))["response"]
    assert raw["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(raw["patch"])) == [
        {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    assert answer(response, mutating=True).patch == [
        {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]


def test_an_unchanged_object_patches_nothing() -> None:
    raw = json.loads(encode_review("admission.k8s.io/v1", "u", patched({"a": 1}, {"a": 1})))
    assert "patch" not in raw["response"]
    assert "patchType" not in raw["response"]
