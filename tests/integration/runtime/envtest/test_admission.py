"""Admission webhooks over the wire: a real HTTPS webhook server in the test, configured through
Mutating/ValidatingWebhookConfigurations, called by the API server on writes as kube-apiserver
calls them (matching, ordering, reinvocation, failure policy, TLS, answers)."""

from __future__ import annotations

import asyncio
import copy
import socket
from typing import Any

from runtime.envtest import EnvTestServer
from runtime.envtest.patch import MERGE_PATCH
from runtime.envtest.tls import self_signed
from runtime.objects import Obj
from tests.integration.runtime.envtest.rawhttp import CM, CRDS, WIDGET_CRD, Http
from tests.integration.runtime.envtest.webhooks import (
    MUTATING,
    VALIDATING,
    WebhookServer,
    allow,
    configuration,
    deny,
    hook,
    patch_response,
    patching,
    rule,
    url_client,
)


def cm(name: str, labels: dict[str, str] | None = None, **meta: Any) -> Obj:
    metadata: Obj = {"name": name, **meta}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


async def configure(http: Http, kind: str, name: str, hooks: list[Obj]) -> Obj:
    path = MUTATING if kind.startswith("Mutating") else VALIDATING
    status, body = await http.post(path, configuration(kind, name, hooks))
    assert status == 201, body
    assert isinstance(body, dict)
    return body


async def validating(http: Http, *hooks: Obj, name: str = "checks") -> Obj:
    return await configure(http, "ValidatingWebhookConfiguration", name, list(hooks))


async def mutating(http: Http, *hooks: Obj, name: str = "defaults") -> Obj:
    return await configure(http, "MutatingWebhookConfiguration", name, list(hooks))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_validating_webhook_sees_the_request_and_allows(http: Http,
                                                                hooks: WebhookServer) -> None:
    hooks.on("/allow", allow())
    await validating(http, hook("allow.example.com", url_client(hooks, "/allow"),
                                [rule(["configmaps"], operations=["CREATE"])]))
    status, created = await http.post(CM, cm("c1"), fieldManager="tests")
    assert status == 201, created
    [request] = hooks.requests("/allow")
    assert hooks.queries["/allow"] == [{"timeout": "10s"}]
    assert request["uid"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["requestKind"] == request["kind"]
    assert request["requestResource"] == request["resource"]
    assert (request["name"], request["namespace"], request["operation"]) == \
        ("c1", "default", "CREATE")
    assert request["userInfo"]["username"] == "envtest-admin"
    assert "subResource" not in request
    # Validating webhooks see the object as it will be stored.
    assert request["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                  "fieldManager": "tests"}
    # Other kinds and operations are not sent.
    await http.post(f"{CM.rsplit('/', 1)[0]}/secrets", {"metadata": {"name": "s"}})
    await http.patch(f"{CM}/c1", {"data": {"k": "w"}}, MERGE_PATCH)
    assert len(hooks.requests("/allow")) == 1


async def test_a_denial_answers_with_the_webhooks_status(http: Http,
                                                         hooks: WebhookServer) -> None:
    hooks.on("/forbid", deny("configmaps named bad are not allowed", code=403,
                             reason="Forbidden"))
    hooks.on("/refuse", deny())
    await validating(http, hook("forbid.example.com", url_client(hooks, "/forbid"),
                                [rule(["configmaps"])], objectSelector={
                                    "matchLabels": {"policy": "forbid"}}),
                     hook("refuse.example.com", url_client(hooks, "/refuse"),
                          [rule(["configmaps"])],
                          objectSelector={"matchLabels": {"policy": "refuse"}}))
    status, body = await http.post(CM, cm("bad", {"policy": "forbid"}))
    assert status == 403
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'admission webhook "forbid.example.com" denied the request: '
                               "configmaps named bad are not allowed",
                    "reason": "Forbidden", "code": 403}
    # Without a code the real server answers 400, and says when nothing was explained.
    status, body = await http.post(CM, cm("bad", {"policy": "refuse"}))
    assert status == 400
    assert body["message"] == ('admission webhook "refuse.example.com" denied the request '
                               "without explanation")
    assert "reason" not in body
    assert (await http.get(f"{CM}/bad"))[0] == 404


async def test_mutations_are_stored_and_validated_afterwards(http: Http,
                                                             hooks: WebhookServer) -> None:
    hooks.on("/mutate", patching([{"op": "add", "path": "/metadata/labels",
                                   "value": {"team": "platform"}},
                                  {"op": "replace", "path": "/data/k", "value": "mutated"}]))
    hooks.on("/check", allow())
    await mutating(http, hook("label.example.com", url_client(hooks, "/mutate"),
                              [rule(["configmaps"])]))
    await validating(http, hook("check.example.com", url_client(hooks, "/check"),
                                [rule(["configmaps"])]))
    status, created = await http.post(CM, cm("", generateName="gen-"))
    assert status == 201, created
    assert created["metadata"]["labels"] == {"team": "platform"}
    assert created["data"] == {"k": "mutated"}
    stored = (await http.get(f"{CM}/{created['metadata']['name']}"))[1]
    assert stored["metadata"]["labels"] == {"team": "platform"}
    [mutate] = hooks.requests("/mutate")
    [check] = hooks.requests("/check")
    # Mutating webhooks run first, on the object as sent (no name yet, no uid); validating
    # ones on the mutated, named, stored-to-be object.
    assert "name" not in mutate
    assert "uid" not in mutate["object"]["metadata"]
    assert mutate["object"]["metadata"]["namespace"] == "default"
    assert check["name"] == created["metadata"]["name"]
    assert check["object"]["metadata"]["labels"] == {"team": "platform"}
    assert check["object"]["metadata"]["uid"] == created["metadata"]["uid"]


async def test_a_patch_that_breaks_the_object_is_an_internal_error(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/break", patching([{"op": "replace", "path": "/metadata/labels",
                                  "value": {"n": 1}}]))
    await mutating(http, hook("break.example.com", url_client(hooks, "/break"),
                              [rule(["configmaps"])], failurePolicy="Ignore"))
    # Not a call failure: Ignore does not apply.
    status, body = await http.post(CM, cm("c", {"a": "b"}))
    assert status == 500
    assert body["reason"] == "InternalError"
    assert body["message"].startswith("Internal error occurred: ")


async def test_failure_policy_decides_for_an_unreachable_webhook(http: Http) -> None:
    port = closed_port()
    down = hook("down.example.com", {"url": f"https://127.0.0.1:{port}/x"},
                [rule(["configmaps"])])
    await validating(http, down)
    status, body = await http.post(CM, cm("c"))
    assert status == 500
    assert body["reason"] == "InternalError"
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "down.example.com": failed to call '
        f'webhook: Post "https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: '
        "connect: connection refused")
    status, config = await http.get(f"{VALIDATING}/checks")
    config["webhooks"][0]["failurePolicy"] = "Ignore"
    assert (await http.put(f"{VALIDATING}/checks", config))[0] == 200
    status, _ = await http.post(CM, cm("c"))
    assert status == 201


async def test_a_webhook_slower_than_its_timeout_fails(http: Http, hooks: WebhookServer) -> None:
    answer = asyncio.Event()

    async def slow(_: Obj) -> Obj:
        await answer.wait()  # until the API server has given up on it
        return {"allowed": True}

    hooks.on("/slow", slow)
    await validating(http, hook("slow.example.com", url_client(hooks, "/slow"),
                                [rule(["configmaps"])], timeoutSeconds=1))
    try:
        status, body = await http.post(CM, cm("c"))
    finally:
        answer.set()
    assert status == 500
    assert body["message"].endswith(
        f'Post "https://127.0.0.1:{hooks.port}/slow?timeout=1s": context deadline exceeded')


async def test_namespace_selector(http: Http, hooks: WebhookServer) -> None:
    hooks.on("/team", allow())
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team-a",
                                                        "labels": {"team": "a"}}})
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team-b"}})
    await validating(http, hook("team.example.com", url_client(hooks, "/team"),
                                [rule(["configmaps", "namespaces"])],
                                namespaceSelector={"matchLabels": {"team": "a"}}))
    await http.post("/api/v1/namespaces/team-a/configmaps", cm("in-a"))
    await http.post("/api/v1/namespaces/team-b/configmaps", cm("in-b"))
    # A Namespace is matched by its own (new) labels.
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team-c",
                                                        "labels": {"team": "a"}}})
    await http.post("/api/v1/namespaces", {"metadata": {"name": "team-d"}})
    seen = [(r["kind"]["kind"], r.get("namespace", ""), r["object"]["metadata"]["name"])
            for r in hooks.requests("/team")]
    assert seen == [("ConfigMap", "team-a", "in-a"), ("Namespace", "", "team-c")]


async def test_object_selector_matches_the_old_or_the_new_object(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/watched", allow())
    await validating(http, hook("watched.example.com", url_client(hooks, "/watched"),
                                [rule(["configmaps"])], objectSelector={"matchExpressions": [
                                    {"key": "watched", "operator": "Exists"}]}))
    await http.post(CM, cm("c"))
    await http.patch(f"{CM}/c", {"metadata": {"labels": {"watched": "yes"}}}, MERGE_PATCH)
    await http.patch(f"{CM}/c", {"metadata": {"labels": None}}, MERGE_PATCH)
    await http.patch(f"{CM}/c", {"data": {"k": "again"}}, MERGE_PATCH)
    labels = [(r["operation"], (r["oldObject"]["metadata"].get("labels") or {}).get("watched"),
               (r["object"]["metadata"].get("labels") or {}).get("watched"))
              for r in hooks.requests("/watched")]
    assert labels == [("UPDATE", None, "yes"), ("UPDATE", "yes", None)]


async def test_rules_name_subresources(http: Http, hooks: WebhookServer) -> None:
    hooks.on("/status", allow())
    hooks.on("/main", allow())
    await http.post(CRDS, WIDGET_CRD)
    await validating(http,
                     hook("status.example.com", url_client(hooks, "/status"),
                          [rule(["pods/status"], operations=["UPDATE"]),
                           rule(["*/status"], groups=["example.com"], operations=["UPDATE"])]),
                     hook("main.example.com", url_client(hooks, "/main"),
                          [rule(["*"], groups=["example.com"], operations=["UPDATE"])]))
    pods = "/api/v1/namespaces/default/pods"
    status, _ = await http.post(pods, {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i"}]}})
    assert status == 201
    await http.patch(f"{pods}/p", {"metadata": {"labels": {"a": "b"}}}, MERGE_PATCH)
    await http.patch(f"{pods}/p/status", {"status": {"phase": "Running"}}, MERGE_PATCH)
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    await http.post(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                              "metadata": {"name": "w"}})
    await http.patch(f"{widgets}/w/status", {"status": {"ready": True}}, MERGE_PATCH)
    await http.patch(f"{widgets}/w", {"spec": {"size": 2}}, MERGE_PATCH)
    on_status = [(r["resource"]["resource"], r["subResource"], r["requestSubResource"],
                  r["object"]["status"]) for r in hooks.requests("/status")]
    assert on_status == [("pods", "status", "status", {"phase": "Running"}),
                         ("widgets", "status", "status", {"ready": True})]
    # `*` names resources without their subresources.
    assert [("subResource" in r, r["object"]["spec"]) for r in hooks.requests("/main")] == \
        [(False, {"size": 2})]


def _count_calls(annotation: str) -> Any:
    calls: list[Obj] = []

    def handler(request: Obj) -> Obj:
        calls.append(request)
        meta = request["object"]["metadata"]
        value = {annotation: str(len(calls))}
        if "annotations" not in meta:
            return patch_response([{"op": "add", "path": "/metadata/annotations",
                                    "value": value}])
        return patch_response([{"op": "add", "path": f"/metadata/annotations/{annotation}",
                                "value": value[annotation]}])

    return handler, calls


async def test_reinvocation_if_needed(http: Http, hooks: WebhookServer) -> None:
    first, first_calls = _count_calls("first-calls")
    hooks.on("/first", first)
    hooks.on("/second", patching([{"op": "add", "path": "/metadata/labels",
                                   "value": {"second": "done"}}]))
    await mutating(http, hook("first.example.com", url_client(hooks, "/first"),
                              [rule(["configmaps"])], reinvocationPolicy="IfNeeded"), name="a")
    await mutating(http, hook("second.example.com", url_client(hooks, "/second"),
                              [rule(["configmaps"])]), name="b")
    status, created = await http.post(CM, cm("c"))
    assert status == 201, created
    # Configurations run in name order; the second one's change calls the first once more.
    assert len(first_calls) == 2
    assert len(hooks.requests("/second")) == 1
    assert first_calls[1]["object"]["metadata"]["labels"] == {"second": "done"}
    assert created["metadata"]["annotations"] == {"first-calls": "2"}
    assert created["metadata"]["labels"] == {"second": "done"}


async def test_no_reinvocation_by_default(http: Http, hooks: WebhookServer) -> None:
    first, first_calls = _count_calls("first-calls")
    hooks.on("/first", first)
    hooks.on("/second", patching([{"op": "add", "path": "/metadata/labels",
                                   "value": {"second": "done"}}]))
    await mutating(http, hook("first.example.com", url_client(hooks, "/first"),
                              [rule(["configmaps"])]),
                   hook("second.example.com", url_client(hooks, "/second"),
                        [rule(["configmaps"])]))
    status, created = await http.post(CM, cm("c"))
    assert status == 201
    assert len(first_calls) == 1
    assert created["metadata"]["annotations"] == {"first-calls": "1"}


async def test_tls_is_verified_against_the_ca_bundle(http: Http, hooks: WebhookServer,
                                                     envtest: EnvTestServer) -> None:
    hooks.on("/x", allow())
    other_ca = WebhookServer(self_signed()).ca_bundle
    for name, client in (("other-ca.example.com", url_client(hooks, "/x", ca_bundle=other_ca)),
                         ("system-trust.example.com", url_client(hooks, "/x", ca_bundle=""))):
        await validating(http, hook(name, client, [rule(["configmaps"])]), name=name)
        status, body = await http.post(CM, cm("c"))
        assert status == 500
        assert body["message"] == (
            f'Internal error occurred: failed calling webhook "{name}": failed to call webhook: '
            f'Post "https://127.0.0.1:{hooks.port}/x?timeout=10s": tls: failed to verify '
            "certificate: x509: certificate signed by unknown authority")
        assert (await http.delete(f"{VALIDATING}/{name}"))[0] == 200
    # A service reference is checked for <service>.<namespace>.svc, which this certificate is
    # not for.
    envtest.map_service("default", "elsewhere", 443, hooks.port)
    await validating(http, hook("name.example.com", {
        "service": {"namespace": "default", "name": "elsewhere", "path": "/x"},
        "caBundle": hooks.ca_bundle}, [rule(["configmaps"])]))
    status, body = await http.post(CM, cm("c"))
    assert body["message"].endswith(
        'Post "https://elsewhere.default.svc:443/x?timeout=10s": tls: failed to verify '
        "certificate: x509: certificate is not valid for elsewhere.default.svc")
    assert hooks.requests("/x") == []


def _service_hook(name: str, hooks: WebhookServer, service: str, *, port: int | None = None
                  ) -> Obj:
    ref: Obj = {"namespace": "default", "name": service, "path": "/svc"}
    if port is not None:
        ref["port"] = port
    return hook(name, {"service": ref, "caBundle": hooks.ca_bundle}, [rule(["configmaps"])])


async def test_a_mapped_service_reference(http: Http, hooks: WebhookServer,
                                          envtest: EnvTestServer) -> None:
    hooks.on("/svc", allow())
    envtest.map_service("default", "hooks", 443, hooks.port)
    config = await validating(http, _service_hook("svc.example.com", hooks, "hooks"))
    assert config["webhooks"][0]["clientConfig"]["service"]["port"] == 443
    status, _ = await http.post(CM, cm("c"))
    assert status == 201
    assert len(hooks.requests("/svc")) == 1
    envtest.unmap_service("default", "hooks", 443)
    status, body = await http.post(CM, cm("d"))
    assert status == 500
    assert body["message"].endswith(
        'failed to call webhook: Post "https://hooks.default.svc:443/svc?timeout=10s": '
        'service "hooks" not found')


async def test_a_service_reference_resolved_through_endpoints(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/svc", allow())
    await http.post("/api/v1/namespaces/default/services", {
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": 9443}]}})
    await validating(http, _service_hook("svc.example.com", hooks, "hooks", port=8443))
    status, body = await http.post(CM, cm("a"))
    assert body["message"].endswith('no endpoints available for service "hooks"')
    slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    await http.post(slices, {
        "metadata": {"name": "hooks-x", "labels": {"kubernetes.io/service-name": "hooks"}},
        "addressType": "IPv4", "ports": [{"name": "https", "port": hooks.port}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]})
    status, _ = await http.post(CM, cm("b"))
    assert status == 201
    # Endpoints do as well, when there is no slice; and only loopback addresses are dialled.
    await http.delete(f"{slices}/hooks-x")
    await http.post("/api/v1/namespaces/default/endpoints", {
        "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": hooks.port}]}]})
    status, _ = await http.post(CM, cm("c"))
    assert status == 201
    await http.put("/api/v1/namespaces/default/endpoints/hooks", {
        "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "10.1.2.3"}],
                     "ports": [{"name": "https", "port": hooks.port}]}]})
    status, body = await http.post(CM, cm("d"))
    assert status == 500
    assert "10.1.2.3" in body["message"]
    assert "loopback" in body["message"]
    assert len(hooks.requests("/svc")) == 2


async def test_match_policy_equivalent_calls_through_another_version(
        http: Http, hooks: WebhookServer) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    v2 = {**copy.deepcopy(crd["spec"]["versions"][0]), "name": "v2", "storage": False}
    crd["spec"]["versions"].append(v2)
    await http.post(CRDS, crd)
    hooks.on("/equivalent", patching([{"op": "add", "path": "/metadata/labels",
                                       "value": {"seen": "v1"}}]))
    hooks.on("/exact", allow())
    v1_rule = [rule(["widgets"], groups=["example.com"], versions=["v1"])]
    await mutating(http, hook("equivalent.example.com", url_client(hooks, "/equivalent"),
                              v1_rule),
                   hook("exact.example.com", url_client(hooks, "/exact"), v1_rule,
                        matchPolicy="Exact"))
    status, created = await http.post("/apis/example.com/v2/namespaces/default/widgets", {
        "apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}})
    assert status == 201, created
    assert created["apiVersion"] == "example.com/v2"
    assert created["metadata"]["labels"] == {"seen": "v1"}
    [request] = hooks.requests("/equivalent")
    assert request["kind"]["version"] == "v1"
    assert request["resource"]["version"] == "v1"
    assert request["requestKind"]["version"] == "v2"
    assert request["object"]["apiVersion"] == "example.com/v1"
    assert hooks.requests("/exact") == []


async def test_dry_run_requests_reach_webhooks_and_store_nothing(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/allow", allow())
    await validating(http, hook("allow.example.com", url_client(hooks, "/allow"),
                                [rule(["configmaps"])], sideEffects="NoneOnDryRun"))
    status, _ = await http.post(CM, cm("c"), dryRun="All")
    assert status == 201
    [request] = hooks.requests("/allow")
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]
    assert (await http.get(f"{CM}/c"))[0] == 404


async def test_delete_webhooks_see_the_old_object(http: Http, hooks: WebhookServer) -> None:
    def protect(request: Obj) -> Obj:
        labels = request["oldObject"]["metadata"].get("labels") or {}
        if labels.get("protected") == "true":
            return {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                                 "message": "this one is protected"}}
        return {"allowed": True}

    hooks.on("/protect", protect)
    await validating(http, hook("protect.example.com", url_client(hooks, "/protect"),
                                [rule(["configmaps"], operations=["DELETE"])]))
    await http.post(CM, cm("keep", {"protected": "true"}))
    await http.post(CM, cm("drop"))
    status, body = await http.request("DELETE", f"{CM}/keep", {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
    assert status == 403
    assert body["message"] == ('admission webhook "protect.example.com" denied the request: '
                               "this one is protected")
    assert (await http.get(f"{CM}/keep"))[0] == 200
    assert (await http.delete(f"{CM}/drop"))[0] == 200
    first, second = hooks.requests("/protect")
    assert second["name"] == "drop"
    assert (first["operation"], first["name"], first["object"]) == ("DELETE", "keep", None)
    assert first["oldObject"]["metadata"]["name"] == "keep"
    assert first["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                                "propagationPolicy": "Background"}
    # A collection delete admits each item on its own.
    status, body = await http.delete(CM)
    assert status == 403
    assert [r["name"] for r in hooks.requests("/protect")][2:] == ["keep"]


async def test_a_mutating_webhook_cannot_patch_a_delete(http: Http,
                                                        hooks: WebhookServer) -> None:
    hooks.on("/patch", patching([{"op": "add", "path": "/metadata/labels", "value": {}}]))
    await mutating(http, hook("patch.example.com", url_client(hooks, "/patch"),
                              [rule(["configmaps"], operations=["DELETE"])]))
    await http.post(CM, cm("c"))
    status, body = await http.delete(f"{CM}/c")
    assert status == 500
    assert body["message"] == ('Internal error occurred: admission webhook "patch.example.com" '
                               "attempted to modify the object, which is not supported for this "
                               "operation")


async def test_webhook_configurations_are_never_admitted_by_webhooks(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/no", deny("no"))
    everything = rule(["*/*"], operations=["*"], groups=["*"], versions=["*"])
    await validating(http, hook("no.example.com", url_client(hooks, "/no"), [everything]))
    assert (await http.post(CM, cm("c")))[0] == 400
    assert (await http.post(VALIDATING, configuration(
        "ValidatingWebhookConfiguration", "another", [])))[0] == 201
    assert (await http.delete(f"{VALIDATING}/checks"))[0] == 200
    assert (await http.post(CM, cm("c")))[0] == 201


async def test_review_versions_other_than_v1_cannot_be_called(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/old", allow())
    old = hook("old.example.com", url_client(hooks, "/old"), [rule(["configmaps"])],
               admissionReviewVersions=["v1beta1"])
    await validating(http, old)
    status, body = await http.post(CM, cm("c"))
    assert status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "old.example.com": could not create '
        "admission objects: webhook does not accept known AdmissionReview versions (v1)")
    await http.patch(f"{VALIDATING}/checks", [{"op": "replace",
                                               "path": "/webhooks/0/failurePolicy",
                                               "value": "Ignore"}],
                     "application/json-patch+json")
    assert (await http.post(CM, cm("c")))[0] == 201
    assert hooks.requests("/old") == []


async def test_answers_that_break_the_protocol_are_call_failures(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/uid", lambda _: {"allowed": True, "uid": "not-the-one"})
    hooks.on("/patching", patching([]))
    cases = [("uid.example.com", "/uid", 'received invalid webhook response: expected '
              'response.uid="'),
             ("patching.example.com", "/patching", "received invalid webhook response: "
              "validating webhook may not return response.patch"),
             ("missing.example.com", "/missing", "failed to call webhook: the server could "
              "not find the requested resource")]
    for name, path, text in cases:
        await validating(http, hook(name, url_client(hooks, path), [rule(["configmaps"])]),
                         name=name)
        status, body = await http.post(CM, cm("c"))
        assert status == 500
        assert body["message"].startswith(
            f'Internal error occurred: failed calling webhook "{name}": {text}'), body
        await http.delete(f"{VALIDATING}/{name}")


async def test_malformed_answers_fail_with_one_clear_message(
        http: Http, hooks: WebhookServer) -> None:
    hooks.on("/text", lambda _: b"<html>oops</html>")
    hooks.on("/typed", lambda _: {"allowed": "yes"})
    hooks.on("/bad-patch", lambda _: {"allowed": True, "patchType": "JSONPatch",
                                      "patch": "not base64!"})
    hooks.on("/odd-patch", lambda _: {"allowed": True, "patchType": "MergePatch",
                                      "patch": "e30="})
    cases = [("text.example.com", "/text", "couldn't get version/kind; json parse error: "),
             ("typed.example.com", "/typed", "couldn't decode the answer: "),
             ("bad-patch.example.com", "/bad-patch",
              "received undecodable patch in webhook response: "),
             ("odd-patch.example.com", "/odd-patch", 'unsupported patch type "MergePatch"')]
    for name, path, text in cases:
        await mutating(http, hook(name, url_client(hooks, path), [rule(["configmaps"])]),
                       name=name)
        status, body = await http.post(CM, cm("c"))
        assert status == 500
        assert body["message"].startswith(
            f'Internal error occurred: failed calling webhook "{name}": {text}'), body
        await http.delete(f"{MUTATING}/{name}")
    # A configuration with holes in it is refused, not stored.
    status, body = await http.post(VALIDATING, {"metadata": {"name": "holes"},
                                                "webhooks": [None, {"name": "x.y.z",
                                                                    "rules": [None]}]})
    assert status == 422
    assert "webhooks[0].name: Required value" in body["message"]
    assert "webhooks[1].rules[0].operations: Required value" in body["message"]
    status, body = await http.post(VALIDATING, configuration(
        "ValidatingWebhookConfiguration", "port", [hook("port.example.com", {
            "url": "https://127.0.0.1:http/x"}, [rule(["configmaps"])])]))
    assert status == 422
    assert "webhooks[0].clientConfig.url: Required value: url must be a valid URL" in \
        body["message"]


async def test_reviews_are_admitted_too(http: Http, hooks: WebhookServer) -> None:
    hooks.on("/reviews", deny("reviews are off", code=403, reason="Forbidden"))
    await validating(http, hook("reviews.example.com", url_client(hooks, "/reviews"),
                                [rule(["subjectaccessreviews"], groups=["authorization.k8s.io"],
                                      operations=["CREATE"])]))
    status, body = await http.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert status == 403
    assert body["message"] == ('admission webhook "reviews.example.com" denied the request: '
                               "reviews are off")
    [request] = hooks.requests("/reviews")
    assert request["resource"]["resource"] == "subjectaccessreviews"
    assert request["object"]["spec"]["user"] == "alice"
    assert "name" not in request


async def test_every_validating_webhook_is_asked(http: Http, hooks: WebhookServer) -> None:
    hooks.on("/yes", allow())
    hooks.on("/no", deny("second opinion: no"))
    await validating(http, hook("yes.example.com", url_client(hooks, "/yes"),
                                [rule(["configmaps"])]),
                     hook("no.example.com", url_client(hooks, "/no"), [rule(["configmaps"])]))
    status, body = await http.post(CM, cm("c"))
    assert status == 400
    assert body["message"] == 'admission webhook "no.example.com" denied the request: ' \
        "second opinion: no"
    assert len(hooks.requests("/yes")) == len(hooks.requests("/no")) == 1


async def test_an_update_overtaken_while_webhooks_run_starts_over(
        http: Http, hooks: WebhookServer, envtest: EnvTestServer) -> None:
    await http.post(CM, cm("c"))
    configmaps = next(rt for rt in envtest.api.registry
                      if not rt.group and rt.plural == "configmaps")

    def overtake(request: Obj) -> Obj:
        if len(hooks.requests("/slow")) == 1:
            # Another writer lands while this webhook is being asked.
            envtest.api.patch(configmaps, "default", "c", MERGE_PATCH,
                              {"metadata": {"labels": {"other": request["uid"]}}})
        return {"allowed": True}

    hooks.on("/slow", overtake)
    await validating(http, hook("slow.example.com", url_client(hooks, "/slow"),
                                [rule(["configmaps"], operations=["UPDATE"])]))
    status, patched = await http.patch(f"{CM}/c", {"data": {"k": "mine"}}, MERGE_PATCH)
    assert status == 200, patched
    first, second = hooks.requests("/slow")
    assert patched["metadata"]["labels"] == {"other": first["uid"]}
    assert patched["data"] == {"k": "mine"}
    assert second["oldObject"]["metadata"]["labels"] == {"other": first["uid"]}
    # With a resourceVersion precondition, the same race is a conflict.
    current = (await http.get(f"{CM}/c"))[1]
    hooks.reviews.clear()
    status, body = await http.put(f"{CM}/c", {**current, "data": {"k": "stale"}})
    assert status == 409, body
    assert (await http.get(f"{CM}/c"))[1]["data"] == {"k": "mine"}


async def test_webhook_configurations_are_validated_and_defaulted(http: Http) -> None:
    bad = {"name": "short", "clientConfig": {"url": "http://127.0.0.1/x"},
           "rules": [{"operations": ["MAKE"], "apiGroups": [""], "apiVersions": ["v1"],
                      "resources": ["*", "pods"]}], "timeoutSeconds": 31,
           "failurePolicy": "Sometimes"}
    status, body = await http.post(VALIDATING, configuration("ValidatingWebhookConfiguration",
                                                             "bad", [bad]))
    assert status == 422
    fields = [c["field"] for c in body["details"]["causes"]]
    assert fields == ["webhooks[0].name", "webhooks[0].rules[0].operations[0]",
                      "webhooks[0].rules[0].resources", "webhooks[0].failurePolicy",
                      "webhooks[0].sideEffects", "webhooks[0].timeoutSeconds",
                      "webhooks[0].clientConfig.url", "webhooks[0].admissionReviewVersions"]
    assert body["message"].startswith('ValidatingWebhookConfiguration.admissionregistration.'
                                      'k8s.io "bad" is invalid: [webhooks[0].name: Invalid '
                                      'value: "short": should be a domain with at least three '
                                      "segments separated by dots")
    status, body = await http.post(VALIDATING, {
        "metadata": {"name": "wrong-type"}, "webhooks": [{"name": "a.b.c", "timeoutSeconds":
                                                          "ten"}]})
    assert status == 400
    assert "timeoutSeconds" in body["message"]
    status, body = await http.post(MUTATING, configuration("MutatingWebhookConfiguration", "ok", [
        hook("ok.example.com", {"service": {"namespace": "default", "name": "hooks"}},
             [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
               "resources": ["pods"]}])]))
    assert status == 201, body
    [stored] = body["webhooks"]
    assert {k: stored[k] for k in ("failurePolicy", "matchPolicy", "namespaceSelector",
                                   "objectSelector", "timeoutSeconds", "reinvocationPolicy")} \
        == {"failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
            "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"}
    assert stored["rules"][0]["scope"] == "*"
    assert stored["clientConfig"]["service"]["port"] == 443
