"""RBAC in the local API server (opt-in): bearer-token authentication, the RBAC authorizer's
rules, and the real server's 401/403 answers, over plain HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from runtime.envtest import EnvTestServer, User
from tests.integration.runtime.envtest.rawhttp import Http
from tests.support.objects import service

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA_USER = "system:serviceaccount:default:robot"


@pytest.fixture
async def server() -> AsyncIterator[EnvTestServer]:
    async with EnvTestServer(rbac=True, bookmark_interval=0.5) as srv:
        yield srv


class _Clients:
    def __init__(self, url: str) -> None:
        self.url = url
        self._sessions: list[aiohttp.ClientSession] = []

    def session(self, token: str | None) -> Http:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        session = aiohttp.ClientSession(base_url=self.url, headers=headers)
        self._sessions.append(session)
        return Http(session)

    async def close(self) -> None:
        for session in self._sessions:
            await session.close()


@pytest.fixture
async def clients(server: EnvTestServer) -> AsyncIterator[_Clients]:
    made = _Clients(server.url)
    yield made
    await made.close()


@pytest.fixture
async def admin(server: EnvTestServer, clients: _Clients) -> Http:
    return clients.session(server.admin_token)


@pytest.fixture
async def robot(server: EnvTestServer, clients: _Clients) -> Http:
    """The ServiceAccount default/robot, with no permissions of its own."""
    return clients.session(server.add_service_account("default", "robot"))


async def ok(call: Any) -> Any:
    status, body = await call
    assert status < 300, (status, body)
    return body


def role(name: str, rules: list[dict[str, Any]], *, namespace: str = "default",
         cluster: bool = False) -> tuple[str, dict[str, Any]]:
    kind = "ClusterRole" if cluster else "Role"
    meta: dict[str, Any] = {"name": name}
    path = f"{RBAC}/clusterroles"
    if not cluster:
        meta["namespace"] = namespace
        path = f"{RBAC}/namespaces/{namespace}/roles"
    return path, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                  "metadata": meta, "rules": rules}


def binding(name: str, role_kind: str, role_name: str, subjects: list[dict[str, Any]], *,
            namespace: str | None = "default") -> tuple[str, dict[str, Any]]:
    meta: dict[str, Any] = {"name": name}
    if namespace is None:
        kind, path = "ClusterRoleBinding", f"{RBAC}/clusterrolebindings"
    else:
        kind, path = "RoleBinding", f"{RBAC}/namespaces/{namespace}/rolebindings"
        meta["namespace"] = namespace
    return path, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                              "name": role_name},
                  "subjects": subjects}


SA = {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}


async def grant(admin: Http, rules: list[dict[str, Any]], *, namespace: str = "default",
                subject: dict[str, Any] = SA, name: str = "grant") -> None:
    """A Role with `rules` in `namespace`, bound to `subject` there."""
    await ok(admin.post(*role(name, rules, namespace=namespace)))
    await ok(admin.post(*binding(name, "Role", name, [subject], namespace=namespace)))



SVC = "/api/v1/namespaces/default/services"
READ_SERVICES = [{"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]}]


# -- authentication ---------------------------------------------------------------------------

async def test_missing_or_unknown_token_is_401(server: EnvTestServer, clients: _Clients
                                               ) -> None:
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    for http in (clients.session(None), clients.session("nope")):
        assert await http.get(SVC) == (401, expected)
        assert await http.get("/version") == (401, expected)
    basic = clients.session(None)
    status, _ = await basic.request("GET", SVC, headers={"Authorization": "Basic YTpi"})
    assert status == 401
    # The admin endpoints stay open.
    status, state = await clients.session(None).get("/_envtest/state")
    assert status == 200
    assert state["rbac"] is True
    assert [r.status for r in server.request_log] == [401] * 5
    assert server.denials == []


async def test_admin_token_may_do_anything(server: EnvTestServer, admin: Http,
                                           tmp_path: Path) -> None:
    await ok(admin.post(SVC, service("web")))
    await ok(admin.post("/api/v1/namespaces", {"metadata": {"name": "team"}}))
    names = [i["metadata"]["name"] for i in (await ok(admin.get(f"{RBAC}/clusterroles")))
             ["items"]]
    assert {"cluster-admin", "system:discovery", "system:basic-user"} <= set(names)
    assert (await admin.get("/metrics"))[0] == 404  # allowed, and then simply not served
    assert server.denials == []
    assert {r.user for r in server.request_log} == {"envtest-admin"}
    config = yaml.safe_load(server.write_kubeconfig(tmp_path / "kc").read_text())
    assert config["users"][0]["user"] == {"token": server.admin_token}
    config = yaml.safe_load(server.write_kubeconfig(tmp_path / "kc", token="t").read_text())
    assert config["users"][0]["user"] == {"token": "t"}


async def test_rbac_off_needs_no_token(envtest: EnvTestServer, http: Http) -> None:
    assert not envtest.rbac
    await ok(http.post(SVC, service("web")))
    assert envtest.denials == []


# -- the 403 answer ---------------------------------------------------------------------------

async def test_forbidden_status_body(robot: Http, server: EnvTestServer) -> None:
    status, body = await robot.get(f"{SVC}/web")
    assert status == 403
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'services "web" is forbidden: User "{SA_USER}" cannot get resource '
                   '"services" in API group "" in the namespace "default"',
        "reason": "Forbidden", "details": {"name": "web", "kind": "services"}, "code": 403}
    cases = [
        ("GET", SVC, 'services is forbidden: User "{u}" cannot list resource "services" in API '
                     'group "" in the namespace "default"', {"kind": "services"}),
        ("GET", "/api/v1/services", 'services is forbidden: User "{u}" cannot list resource '
                                    '"services" in API group "" at the cluster scope',
         {"kind": "services"}),
        ("PUT", f"{SVC}/web/status", 'services "web" is forbidden: User "{u}" cannot update '
                                     'resource "services/status" in API group "" in the '
                                     'namespace "default"', {"name": "web", "kind": "services"}),
        ("DELETE", "/apis/apps/v1/namespaces/kube-system/deployments",
         'deployments.apps is forbidden: User "{u}" cannot deletecollection resource '
         '"deployments" in API group "apps" in the namespace "kube-system"',
         {"group": "apps", "kind": "deployments"}),
        ("GET", "/metrics", 'forbidden: User "{u}" cannot get path "/metrics"', {}),
        # Authorization comes before routing: an unknown resource is refused, not missing.
        ("GET", "/apis/nope.example.com/v1/gizmos", 'gizmos.nope.example.com is forbidden: '
         'User "{u}" cannot list resource "gizmos" in API group "nope.example.com" at the '
         'cluster scope', {"group": "nope.example.com", "kind": "gizmos"}),
    ]
    for method, path, message, details in cases:
        status, body = await robot.request(method, path, {} if method == "PUT" else None)
        assert status == 403, (method, path, body)
        assert body["message"] == message.format(u=SA_USER)
        assert body["details"] == details
        assert body["reason"] == "Forbidden"


async def test_authenticated_users_may_discover(robot: Http) -> None:
    for path in ("/api", "/api/v1", "/apis", "/apis/rbac.authorization.k8s.io/v1", "/version",
                 "/healthz", "/readyz", "/livez", "/openapi/v3", "/openapi/v3/api/v1"):
        assert (await robot.get(path))[0] == 200, path
    assert (await robot.request("POST", "/api", {}))[0] == 403


# -- rules ------------------------------------------------------------------------------------

async def test_verbs_and_wildcards(admin: Http, robot: Http) -> None:
    await ok(admin.post(SVC, service("web")))
    await grant(admin, [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}])
    assert (await robot.get(f"{SVC}/web"))[0] == 200
    assert (await robot.get(SVC))[0] == 403
    assert (await robot.delete(f"{SVC}/web"))[0] == 403
    await grant(admin, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
                name="everything")
    assert (await robot.get(SVC))[0] == 200
    assert (await robot.get("/api/v1/namespaces/default/configmaps"))[0] == 200
    assert (await robot.get("/apis/apps/v1/namespaces/default/deployments"))[0] == 200
    assert (await robot.delete(f"{SVC}/web"))[0] == 200
    # A namespaced grant never reaches cluster-scoped resources or other namespaces.
    assert (await robot.get("/api/v1/nodes"))[0] == 403
    assert (await robot.get("/api/v1/namespaces/kube-system/services"))[0] == 403


async def test_api_group_must_match(admin: Http, robot: Http) -> None:
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    await grant(admin, [{"apiGroups": [""], "resources": ["deployments"], "verbs": ["list"]}])
    assert (await robot.get(deployments))[0] == 403
    await grant(admin, [{"apiGroups": ["apps"], "resources": ["deployments"],
                         "verbs": ["list"]}], name="apps")
    assert (await robot.get(deployments))[0] == 200


async def test_subresources(admin: Http, robot: Http) -> None:
    await ok(admin.post(SVC, service("web")))
    status_body = {"status": {"loadBalancer": {"ingress": [{"hostname": "lb"}]}}}
    merge = "application/merge-patch+json"
    await grant(admin, [{"apiGroups": [""], "resources": ["services"], "verbs": ["patch"]}])
    assert (await robot.patch(f"{SVC}/web", {"metadata": {"labels": {"a": "b"}}}, merge))[0] \
        == 200
    assert (await robot.patch(f"{SVC}/web/status", status_body, merge))[0] == 403
    await grant(admin, [{"apiGroups": [""], "resources": ["*/status"], "verbs": ["patch"]}],
                name="any-status")
    assert (await robot.patch(f"{SVC}/web/status", status_body, merge))[0] == 200


async def test_status_only_grant(admin: Http, robot: Http) -> None:
    await ok(admin.post(SVC, service("web")))
    await grant(admin, [{"apiGroups": [""], "resources": ["services/status"],
                         "verbs": ["get", "update"]}])
    current = await ok(robot.get(f"{SVC}/web/status"))
    current["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}
    await ok(robot.put(f"{SVC}/web/status", current))
    assert (await robot.get(f"{SVC}/web"))[0] == 403
    assert (await robot.put(f"{SVC}/web", current))[0] == 403


async def test_resource_names(admin: Http, robot: Http) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    for name in ("mine", "theirs"):
        await ok(admin.post(cms, {"metadata": {"name": name}}))
    await grant(admin, [{"apiGroups": [""], "resources": ["configmaps"],
                         "resourceNames": ["mine", "new"],
                         "verbs": ["get", "list", "watch", "update", "delete", "create"]}])
    assert (await robot.get(f"{cms}/mine"))[0] == 200
    assert (await robot.get(f"{cms}/theirs"))[0] == 403
    assert (await robot.get(cms))[0] == 403
    # A create names no object in its URL, so resourceNames never match it.
    assert (await robot.post(cms, {"metadata": {"name": "new"}}))[0] == 403
    # A list narrowed to one name by a field selector is authorized as that name.
    listed = await ok(robot.get(cms, fieldSelector="metadata.name=mine"))
    assert [i["metadata"]["name"] for i in listed["items"]] == ["mine"]
    assert (await robot.get(cms, fieldSelector="metadata.name=theirs"))[0] == 403
    assert (await robot.delete(f"{cms}/theirs"))[0] == 403
    assert (await robot.delete(f"{cms}/mine"))[0] == 200


async def test_role_vs_cluster_role_and_bindings(admin: Http, robot: Http) -> None:
    await ok(admin.post("/api/v1/namespaces", {"metadata": {"name": "team"}}))
    await ok(admin.post(*role("read-services", READ_SERVICES, cluster=True)))
    # A ClusterRole bound by a RoleBinding grants only inside the binding's namespace.
    await ok(admin.post(*binding("read", "ClusterRole", "read-services", [SA],
                                 namespace="team")))
    assert (await robot.get("/api/v1/namespaces/team/services"))[0] == 200
    assert (await robot.get(SVC))[0] == 403
    assert (await robot.get("/api/v1/services"))[0] == 403
    # A ClusterRoleBinding grants everywhere, cluster-wide lists included.
    await ok(admin.post(*binding("read", "ClusterRole", "read-services", [SA],
                                 namespace=None)))
    assert (await robot.get(SVC))[0] == 200
    assert (await robot.get("/api/v1/services"))[0] == 200
    assert (await robot.get("/api/v1/namespaces/kube-system/services"))[0] == 200


async def test_role_binding_refers_to_its_own_namespace(admin: Http, robot: Http) -> None:
    await ok(admin.post("/api/v1/namespaces", {"metadata": {"name": "team"}}))
    await ok(admin.post(*role("reader", READ_SERVICES, namespace="team")))
    # A RoleBinding in default naming Role "reader" looks for it in default, where it is not.
    await ok(admin.post(*binding("reader", "Role", "reader", [SA])))
    status, body = await robot.get(SVC)
    assert status == 403
    assert body["message"].endswith(
        ': RBAC: role.rbac.authorization.k8s.io "reader" not found')
    assert (await robot.get("/api/v1/namespaces/team/services"))[0] == 403


async def test_subject_kinds(server: EnvTestServer, admin: Http, clients: _Clients) -> None:
    server.add_token("alice-token", User("alice", groups=("devs",)))
    alice = clients.session("alice-token")
    bob = clients.session(server.add_service_account("default", "bob"))
    other_ns_bob = clients.session(server.add_service_account("kube-system", "bob"))
    await ok(admin.post(*role("reader", READ_SERVICES)))
    assert (await alice.get(SVC))[0] == 403
    await ok(admin.post(*binding("by-group", "Role", "reader",
                                 [{"kind": "Group", "name": "devs"}])))
    assert (await alice.get(SVC))[0] == 200
    await ok(admin.post(*binding("by-user", "Role", "reader",
                                 [{"kind": "User", "name": "carol"}])))
    server.add_token("carol-token", User("carol"))
    assert (await clients.session("carol-token").get(SVC))[0] == 200
    # A ServiceAccount subject without a namespace means the binding's own namespace.
    await ok(admin.post(*binding("by-sa", "Role", "reader",
                                 [{"kind": "ServiceAccount", "name": "bob"}])))
    assert (await bob.get(SVC))[0] == 200
    assert (await other_ns_bob.get("/api/v1/namespaces/kube-system/services"))[0] == 403
    # Every service account of a namespace, by group.
    await ok(admin.post(*binding("all-sa", "Role", "reader",
                                 [{"kind": "Group",
                                   "name": "system:serviceaccounts:kube-system"}],
                                 namespace="kube-system")))
    await ok(admin.post(*role("reader", READ_SERVICES, namespace="kube-system")))
    assert (await other_ns_bob.get("/api/v1/namespaces/kube-system/services"))[0] == 200


async def test_cluster_binding_to_unqualified_service_account_matches_nobody(
        admin: Http, robot: Http) -> None:
    await ok(admin.post(*role("reader", READ_SERVICES, cluster=True)))
    await ok(admin.post(*binding("r", "ClusterRole", "reader",
                                 [{"kind": "ServiceAccount", "name": "robot"}],
                                 namespace=None)))
    assert (await robot.get(SVC))[0] == 403


async def test_changes_take_effect_on_the_next_request(admin: Http, robot: Http) -> None:
    await grant(admin, READ_SERVICES)
    assert (await robot.get(SVC))[0] == 200
    path = f"{RBAC}/namespaces/default/roles/grant"
    await ok(admin.patch(path, {"rules": [{"apiGroups": [""], "resources": ["services"],
                                           "verbs": ["get"]}]},
                         "application/merge-patch+json"))
    assert (await robot.get(SVC))[0] == 403
    await ok(admin.patch(path, {"rules": READ_SERVICES}, "application/merge-patch+json"))
    assert (await robot.get(SVC))[0] == 200
    await ok(admin.delete(f"{RBAC}/namespaces/default/rolebindings/grant"))
    assert (await robot.get(SVC))[0] == 403


async def test_namespace_object_is_authorized_in_itself(admin: Http, robot: Http) -> None:
    await grant(admin, [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}])
    assert (await robot.get("/api/v1/namespaces/default"))[0] == 200
    assert (await robot.get("/api/v1/namespaces/kube-system"))[0] == 403


async def test_watch_is_authorized_when_opened(server: EnvTestServer, admin: Http,
                                               robot: Http) -> None:
    await grant(admin, READ_SERVICES)
    assert (await robot.get(SVC, watch="true"))[0] == 403
    assert (await robot.get("/api/v1/watch/namespaces/default/services"))[0] == 403
    await ok(admin.patch(f"{RBAC}/namespaces/default/roles/grant",
                         {"rules": [{"apiGroups": [""], "resources": ["services"],
                                     "verbs": ["list", "watch"]}]},
                         "application/merge-patch+json"))
    async with robot.session.get(SVC, params={"watch": "true"}) as resp:
        assert resp.status == 200
        # Revoking access does not end a watch already open.
        await ok(admin.delete(f"{RBAC}/namespaces/default/rolebindings/grant"))
        await ok(admin.post(SVC, service("late")))
        line = await asyncio.wait_for(resp.content.readline(), 5)
        event = json.loads(line)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "late")
    assert (await robot.get(SVC, watch="true"))[0] == 403


# -- denials and reviews ----------------------------------------------------------------------

async def test_denials_are_recorded(server: EnvTestServer, admin: Http, robot: Http,
                                    clients: _Clients) -> None:
    await ok(admin.post(SVC, service("web")))
    assert (await robot.get(f"{SVC}/web"))[0] == 403
    assert (await robot.request("PUT", f"{SVC}/web/status", {}))[0] == 403
    first, second = server.denials
    assert (first.user, first.verb, first.group, first.resource, first.subresource,
            first.namespace, first.name) == (SA_USER, "get", "", "services", "", "default",
                                             "web")
    assert first.message.startswith('services "web" is forbidden')
    assert (second.verb, second.subresource) == ("update", "status")
    forbidden = [r for r in server.request_log if r.status == 403]
    assert [(r.verb, r.user) for r in forbidden] == [("get", SA_USER), ("update", SA_USER)]
    status, listed = await clients.session(None).get("/_envtest/denials")
    assert status == 200
    assert [d["verb"] for d in listed] == ["get", "update"]
    await clients.session(None).delete("/_envtest/denials")
    assert server.denials == []


async def test_self_subject_access_review(server: EnvTestServer, admin: Http,
                                          robot: Http) -> None:
    await grant(admin, READ_SERVICES)
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

    async def review(attrs: dict[str, Any], *, non_resource: bool = False) -> dict[str, Any]:
        key = "nonResourceAttributes" if non_resource else "resourceAttributes"
        status, body = await robot.post(path, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {key: attrs}})
        assert status == 201, body
        return dict(body["status"])

    assert await review({"namespace": "default", "verb": "list", "resource": "services"}) == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "grant/default" of Role '
                                   '"grant" to ServiceAccount "robot/default"'}
    assert await review({"namespace": "default", "verb": "delete", "resource": "services"}) \
        == {"allowed": False}
    assert (await review({"namespace": "default", "verb": "get", "resource": "services",
                          "subresource": "status"}))["allowed"] is False
    assert (await review({"path": "/version", "verb": "get"}, non_resource=True))["allowed"]
    assert server.denials == []  # asking is not being refused
    status, body = await robot.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                    {"apiVersion": "authentication.k8s.io/v1",
                                     "kind": "SelfSubjectReview"})
    assert status == 201
    assert body["status"]["userInfo"] == {
        "username": SA_USER, "groups": ["system:serviceaccounts",
                                        "system:serviceaccounts:default",
                                        "system:authenticated"]}
    # Reviews are create-only: a list is refused by RBAC, and by the server for the admin.
    assert (await robot.get(path))[0] == 403
    assert (await admin.get(path))[0] == 405


async def test_bootstrap_roles_are_ordinary_objects(admin: Http, robot: Http) -> None:
    assert (await robot.get("/apis"))[0] == 200
    await ok(admin.delete(f"{RBAC}/clusterrolebindings/system:discovery"))
    assert (await robot.get("/apis"))[0] == 403
    assert (await robot.get("/version"))[0] == 200  # still public info


async def test_kubernetes_asyncio_with_a_token_kubeconfig(server: EnvTestServer, admin: Http,
                                                          tmp_path: Path) -> None:
    token = server.add_service_account("default", "robot")
    kubeconfig = server.write_kubeconfig(tmp_path / "robot.kubeconfig", token=token)
    api = await config.new_client_from_config(config_file=str(kubeconfig))
    async with api:
        core = client.CoreV1Api(api)
        with pytest.raises(ApiException) as refused:
            await core.list_namespaced_service("default")
        assert refused.value.status == 403
        assert json.loads(refused.value.body or b"{}")["details"] == {"kind": "services"}
        await grant(admin, READ_SERVICES)
        assert (await core.list_namespaced_service("default")).items == []
    assert [(r.user, r.status) for r in server.request_log if r.path == SVC] == [
        (SA_USER, 403), (SA_USER, 200)]
