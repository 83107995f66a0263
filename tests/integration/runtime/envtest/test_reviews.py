"""TokenReview and SubjectAccessReview: what a server that delegates authentication and
authorization (secure metrics) asks the API server, answered from its tokens and its RBAC
authorizer, and itself subject to RBAC (`system:auth-delegator`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from runtime.envtest import EnvTestServer, User
from tests.integration.runtime.envtest.rawhttp import Http
from tests.support.kubectl import Kubectl

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
REVIEWER = "system:serviceaccount:kube-system:reviewer"


def token_review(token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def access_review(user: str, groups: list[str], **attributes: dict[str, str]
                  ) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, **attributes}}


def cluster_binding(name: str, role: str, namespace: str, account: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}


METRICS_READER = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": "metrics-reader"},
                  "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}


@pytest.fixture
async def server() -> AsyncIterator[EnvTestServer]:
    # kubectl sends tokens only over TLS.
    async with EnvTestServer(rbac=True, tls=True) as srv:
        yield srv


@pytest.fixture
async def admin(server: EnvTestServer) -> AsyncIterator[Http]:
    context = server.client_ssl_context()
    assert context is not None
    async with aiohttp.ClientSession(
            base_url=server.url, headers={"Authorization": f"Bearer {server.admin_token}"},
            connector=aiohttp.TCPConnector(ssl=context)) as session:
        yield Http(session)


def _kubectl(server: EnvTestServer, tmp_path: Path, name: str, token: str) -> Kubectl:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    return Kubectl(server.write_kubeconfig(tmp_path / f"{name}.kubeconfig", token=token), home)


@pytest.fixture
def reviewer(server: EnvTestServer, tmp_path: Path) -> Kubectl:
    """kubectl as the ServiceAccount kube-system/reviewer, with no permissions of its own."""
    return _kubectl(server, tmp_path, "reviewer",
                    server.add_service_account("kube-system", "reviewer"))


async def _create(kubectl: Kubectl, tmp_path: Path, name: str, review: dict[str, Any],
                  ) -> dict[str, Any]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(review))
    answer = yaml.safe_load((await kubectl("create", "-f", str(path), "-o", "yaml")).stdout)
    assert isinstance(answer, dict)
    return answer


async def test_token_review_needs_auth_delegator(server: EnvTestServer, admin: Http,
                                                 reviewer: Kubectl, tmp_path: Path) -> None:
    token = server.add_service_account("kube-system", "metrics")
    _, account = await admin.post("/api/v1/namespaces/kube-system/serviceaccounts",
                                  {"metadata": {"name": "metrics"}})
    path = tmp_path / "review.yaml"
    path.write_text(yaml.safe_dump(token_review(token)))
    refused = await reviewer("create", "-f", str(path), check=False)
    assert refused.returncode == 1
    assert (f'tokenreviews.authentication.k8s.io is forbidden: User "{REVIEWER}" cannot create '
            'resource "tokenreviews" in API group "authentication.k8s.io" at the cluster '
            "scope") in refused.stderr
    # The bootstrap role exists, unbound, as on a real cluster.
    status, role = await admin.get(f"{RBAC}/clusterroles/system:auth-delegator")
    assert status == 200
    assert role["rules"] == [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
         "verbs": ["create"]}]
    await admin.post(f"{RBAC}/clusterrolebindings",
                     cluster_binding("reviewer", "system:auth-delegator", "kube-system",
                                     "reviewer"))
    answer = await _create(reviewer, tmp_path, "allowed", token_review(token))
    assert answer["kind"] == "TokenReview"
    assert answer["spec"] == {"token": token}
    assert answer["status"] == {
        "authenticated": True, "audiences": [API_AUDIENCE],
        "user": {"username": "system:serviceaccount:kube-system:metrics",
                 "uid": account["metadata"]["uid"],
                 "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                            "system:authenticated"]}}
    assert (await reviewer("auth", "can-i", "create", "subjectaccessreviews")).stdout == "yes\n"


async def test_token_review_answers(server: EnvTestServer, admin: Http) -> None:
    server.add_token("alice-token", User("alice", ("devs",)))

    async def status_of(review: dict[str, Any]) -> Any:
        code, body = await admin.post(TOKEN_REVIEWS, review)
        assert code == 201, body
        return body["status"]

    alice = {"username": "alice", "groups": ["devs", "system:authenticated"]}
    assert await status_of(token_review("alice-token")) == {
        "authenticated": True, "user": alice, "audiences": [API_AUDIENCE]}
    assert await status_of(token_review("nobody")) == {"user": {}}
    # The server's tokens are good for its own audience only.
    assert await status_of(token_review("alice-token", ["https://other.example"])) == \
        {"user": {}}
    assert await status_of(token_review("alice-token", ["https://other.example",
                                                        API_AUDIENCE])) == {
        "authenticated": True, "user": alice, "audiences": [API_AUDIENCE]}
    server.remove_token("alice-token")
    assert await status_of(token_review("alice-token")) == {"user": {}}
    code, body = await admin.post(TOKEN_REVIEWS, token_review(""))
    assert code == 400
    assert body["message"] == "token is required for TokenReview in authentication"


async def test_subject_access_review_for_a_metrics_reader(
        server: EnvTestServer, admin: Http, reviewer: Kubectl, tmp_path: Path) -> None:
    await admin.post(f"{RBAC}/clusterrolebindings",
                     cluster_binding("reviewer", "system:auth-delegator", "kube-system",
                                     "reviewer"))
    await admin.post(f"{RBAC}/clusterroles", METRICS_READER)
    await admin.post(f"{RBAC}/clusterrolebindings",
                     cluster_binding("metrics-reader", "metrics-reader", "monitoring",
                                     "prometheus"))
    prometheus = "system:serviceaccount:monitoring:prometheus"
    groups = ["system:serviceaccounts", "system:serviceaccounts:monitoring",
              "system:authenticated"]
    review = access_review(prometheus, groups,
                           nonResourceAttributes={"path": "/metrics", "verb": "get"})
    answer = await _create(reviewer, tmp_path, "metrics", review)
    assert answer["spec"] == review["spec"]
    assert answer["status"] == {
        "allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "metrics-reader" of '
                                   'ClusterRole "metrics-reader" to ServiceAccount '
                                   '"prometheus/monitoring"'}
    other_path = access_review(prometheus, groups,
                               nonResourceAttributes={"path": "/debug", "verb": "get"})
    assert (await _create(reviewer, tmp_path, "debug", other_path))["status"] == \
        {"allowed": False}
    secrets = access_review(prometheus, groups, resourceAttributes={
        "verb": "list", "resource": "secrets", "namespace": "default"})
    assert (await _create(reviewer, tmp_path, "secrets", secrets))["status"] == \
        {"allowed": False}
    # Groups count as given: system:masters is allowed everything.
    masters = access_review("someone", ["system:masters"], resourceAttributes={
        "verb": "delete", "resource": "nodes"})
    assert (await _create(reviewer, tmp_path, "masters", masters))["status"] == \
        {"allowed": True}


async def test_subject_access_review_validation(admin: Http) -> None:
    code, body = await admin.post(ACCESS_REVIEWS, access_review(
        "", [], resourceAttributes={"verb": "get", "resource": "pods"}))
    assert code == 422
    assert body["message"] == ('SubjectAccessReview.authorization.k8s.io "" is invalid: '
                               'spec.user: Invalid value: "": at least one of user or group '
                               "must be specified")
    code, body = await admin.post(ACCESS_REVIEWS, access_review(
        "alice", [], resourceAttributes={"verb": "get", "resource": "pods"},
        nonResourceAttributes={"verb": "get", "path": "/metrics"}))
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.nonResourceAttributes"
    code, body = await admin.post(ACCESS_REVIEWS, access_review("alice", []))
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.resourceAttributes"


async def test_reviews_without_rbac(envtest: EnvTestServer, http: Http) -> None:
    envtest.add_token("alice-token", User("alice"))
    code, body = await http.post(TOKEN_REVIEWS, token_review("alice-token"))
    assert code == 201
    assert body["status"]["user"]["username"] == "alice"
    # With RBAC off the server allows everything, and says so.
    code, body = await http.post(ACCESS_REVIEWS, access_review(
        "alice", [], resourceAttributes={"verb": "delete", "resource": "nodes"}))
    assert (code, body["status"]) == (201, {"allowed": True})


async def test_review_kinds_are_discoverable(server: EnvTestServer, reviewer: Kubectl,
                                             admin: Http) -> None:
    await admin.post(f"{RBAC}/clusterrolebindings",
                     cluster_binding("reviewer", "system:auth-delegator", "kube-system",
                                     "reviewer"))
    rows = (await reviewer("api-resources", "--verbs=create", "-o", "wide",
                           "--no-headers")).stdout.splitlines()
    found = {row.split()[0]: row.split() for row in rows}
    assert found["tokenreviews"][1:4] == ["authentication.k8s.io/v1", "false", "TokenReview"]
    assert found["subjectaccessreviews"][1:4] == ["authorization.k8s.io/v1", "false",
                                                  "SubjectAccessReview"]
    assert found["tokenreviews"][4] == "create"
