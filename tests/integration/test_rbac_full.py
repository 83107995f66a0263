"""The shipped RBAC is exactly what the whole controller needs.

`aiolbc run`'s Manager (every controller, built by `controller.app.build_manager` from flags)
runs as ServiceAccount aiolbc-system/aiolbc against the local API server with authorization on
and only the installation's RBAC (the ClusterRole, the leader-election Role, their bindings), and
against moto behind the fault proxy. One lifecycle touches every code path that writes or reads
the API server:

- leader election acquires the Lease (created) and renews it;
- a multi-cluster TargetGroupBinding: targets registered and tracked in its ConfigMap, an
  endpoint removed (deregistered, ConfigMap updated), the binding deleted (finalizer);
- a Service asking for an NLB with ip targets: hostname and condition in its status, its
  managed binding, its targets; then changed while its managed binding has lost its labels (the
  create finds the name taken, reads the binding and adopts it back: the create-race path);
  an invalid annotation (Warning Event, condition False); deleted (finalizer, bindings, NLB);
- an IngressClass with IngressClassParams, an Ingress with OIDC authentication from a Secret:
  ALB hostname in its status; the Secret rotated (rule modified); the Ingress deleted;
- a graceful stop releases the Lease.

Not one request is refused, and, from the same run's request log, every granted rule triple was
needed: for each, some request is allowed only through it. The API server answers each informer's
first streaming list as one without the WatchList feature does, so the run takes the list + watch
path such clusters see and `list` shows up next to `watch`. Secrets are read one by one, by
name: every Secret request is a list or watch of the referenced Secret alone. A second, short
run without `secrets` in the ClusterRole shows the converse: only that Secret is refused, the
controller runs, and the Ingress that needs it reports why instead of getting a load balancer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from controller.apis import (
    CHECKPOINT_ANNOTATION,
    INGRESSCLASSPARAMS,
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
    TARGETGROUPBINDINGS,
)
from controller.app import aws_settings, build_manager
from controller.aws import AWSClientPool
from controller.config import ControllerConfig, parse_config
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer, RequestRecord, service_account_user
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    EVENTS,
    INGRESSCLASSES,
    INGRESSES,
    LEASES,
    NAMESPACES,
    SECRETS,
    SERVICES,
)
from tests.integration.rbac_support import (
    NAMESPACE,
    SERVICE_ACCOUNT,
    account,
    authorized_server,
    baseline_rules,
    grants,
    rbac_documents,
    requests_of,
    without_resource,
)
from tests.waiting import eventually

LEASE = "aws-load-balancer-controller-leader"
IDENTITY = "aiolbc-rbac-test"
WORKLOADS = "default"
NLB_CLASS = "service.k8s.aws/nlb"
SVC = "service.beta.kubernetes.io/"
ALB = "alb.ingress.kubernetes.io/"
OIDC = ('{"issuer":"https://idp.example.com","authorizationEndpoint":"https://idp.example.com/'
        'auth","tokenEndpoint":"https://idp.example.com/token","userInfoEndpoint":'
        '"https://idp.example.com/userinfo","secretName":"oidc"}')
NAMESPACE_LABEL = {"aiolbc.example.com/ingress": "allowed"}
CONTROLLER_USER = service_account_user(NAMESPACE, SERVICE_ACCOUNT).with_authenticated()


@dataclass
class Installation:
    server: EnvTestServer
    admin: KubeClient
    controller: KubeClient  # authenticated as the ServiceAccount
    aws: AWSClientPool  # the test's own AWS calls
    seed: AwsSeed

    async def get(self, resource: Any, name: str, namespace: str | None = WORKLOADS
                  ) -> Obj | None:
        try:
            return await self.admin.get(resource, name, namespace)
        except NotFound:
            return None

    async def elbv2(self, op: str, **params: Any) -> Any:
        return await self.aws.call("elbv2", op, **params)

    async def registered(self, arn: str) -> set[tuple[str, int]]:
        resp = await self.elbv2("DescribeTargetHealth", TargetGroupArn=arn)
        return {(d["Target"]["Id"], int(d["Target"]["Port"]))
                for d in resp["TargetHealthDescriptions"]}

    async def load_balancers(self) -> list[Obj]:
        return list((await self.elbv2("DescribeLoadBalancers"))["LoadBalancers"])

    async def events(self, name: str) -> list[Obj]:
        listed = await self.admin.list(EVENTS, WORKLOADS,
                                       field_selector=f"involvedObject.name={name}")
        return list(listed["items"])

    async def endpoints(self, service: str, ips: Sequence[str]) -> None:
        """Create or replace the one EndpointSlice of `service` (port `http` 8080)."""
        body: Obj = {
            "metadata": {"name": f"{service}-abc", "namespace": WORKLOADS,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "name": f"pod-{ip}", "uid": f"uid-{ip}"}}
                          for ip in ips]}
        current = await self.get(ENDPOINTSLICES, f"{service}-abc")
        if current is None:
            await self.admin.create(ENDPOINTSLICES, body, WORKLOADS)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await self.admin.update(ENDPOINTSLICES, body)

    async def backend(self, name: str, ips: Sequence[str], *, node_port: int) -> None:
        await self.admin.create(SERVICES, {
            "metadata": {"name": name},
            "spec": {"type": "NodePort", "selector": {"app": name}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http", "nodePort": node_port}]}},
            WORKLOADS)
        await self.endpoints(name, ips)

    async def secret(self, name: str, data: dict[str, str]) -> None:
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        current = await self.get(SECRETS, name)
        if current is None:
            await self.admin.create(SECRETS, {"metadata": {"name": name}, "data": encoded},
                                    WORKLOADS)
            return
        current["data"] = encoded
        await self.admin.update(SECRETS, current)

    async def ingress_objects(self) -> None:
        """An IngressClass with parameters, its namespace selected, an OIDC Secret, a backend
        Service and an Ingress using all of them."""
        await self.admin.patch(NAMESPACES, WORKLOADS, {"metadata": {"labels": NAMESPACE_LABEL}})
        await self.admin.create(INGRESSCLASSPARAMS, {
            "apiVersion": INGRESSCLASSPARAMS.api_version, "kind": INGRESSCLASSPARAMS.kind,
            "metadata": {"name": "shop"},
            "spec": {"namespaceSelector": {"matchLabels": NAMESPACE_LABEL},
                     "scheme": "internet-facing", "targetType": "ip"}})
        await self.admin.create(INGRESSCLASSES, {"metadata": {"name": "alb"}, "spec": {
            "controller": "ingress.k8s.aws/alb",
            "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams",
                           "name": "shop"}}})
        await self.secret("oidc", {"clientID": "my-client", "clientSecret": "first"})
        await self.backend("app", ["10.0.2.10"], node_port=30080)
        await self.admin.create(INGRESSES, {
            "metadata": {"name": "secure", "annotations": {
                ALB + "listen-ports": '[{"HTTPS": 443}]',
                ALB + "certificate-arn": self.seed.certificate_arn,
                ALB + "auth-type": "oidc", ALB + "auth-idp-oidc": OIDC}},
            "spec": {"ingressClassName": "alb", "rules": [{"host": "app.example.com", "http": {
                "paths": [{"path": "/", "pathType": "Prefix", "backend": {
                    "service": {"name": "app", "port": {"number": 80}}}}]}}]}}, WORKLOADS)


@contextlib.asynccontextmanager
async def installation(docs: Sequence[Obj], *, seed: AwsSeed, aws: AWSClientPool,
                       tmp_path: Path) -> AsyncIterator[Installation]:
    """The local API server with authorization on and only `docs` granting anything to the
    controller's ServiceAccount."""
    async with authorized_server(docs, tmp_path) as (server, admin, controller):
        yield Installation(server=server, admin=admin, controller=controller, aws=aws, seed=seed)


def controller_config(seed: AwsSeed, proxy: AWSFaultProxy) -> ControllerConfig:
    return parse_config([
        "--cluster-name", seed.cluster_name, "--aws-region", "us-west-2",
        "--aws-vpc-id", seed.vpc_id, "--aws-endpoint-url", proxy.url,
        "--leader-election-namespace", NAMESPACE,
        "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1.5s",
        "--leader-election-retry-period", "0.2s",
        "--metrics-bind-addr", "0", "--health-probe-bind-addr", "0"])


@contextlib.asynccontextmanager
async def running(cluster: Installation, config: ControllerConfig
                  ) -> AsyncIterator[tuple[Manager, asyncio.Task[int]]]:
    """`aiolbc run`'s Manager as the ServiceAccount; killed on the way out if still running.

    The API server answers each informer's first, streaming list (`sendInitialEvents`) as one
    without the WatchList feature does (422), so every informer takes the list + watch path
    that such clusters see: the run then shows what `list` is granted for."""
    registry = CollectorRegistry()
    async with AWSClientPool(aws_settings(config), registry=registry) as pool:
        manager = build_manager(config, cluster.controller, pool, registry=registry,
                                identity=IDENTITY)
        for informer in manager.informers.informers:
            cluster.server.faults.fail_next(1, verb="watch", resource=informer.resource.plural,
                                            status=422)
        # The referenced Secret is watched by an informer of its own, by name.
        cluster.server.faults.fail_next(1, verb="watch", resource="secrets", status=422)
        task = asyncio.create_task(manager.run())
        try:
            yield manager, task
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _hostname(obj: Obj | None) -> str | None:
    items = ((obj or {}).get("status") or {}).get("loadBalancer", {}).get("ingress") or []
    return str(items[0]["hostname"]) if items and items[0].get("hostname") else None


def _condition(obj: Obj | None, type_: str) -> Obj:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


# -- the lifecycle, part by part ----------------------------------------------------------------


async def multi_cluster_binding(c: Installation) -> None:
    created = await c.elbv2("CreateTargetGroup", Name="shared-tg", Protocol="HTTP", Port=80,
                            VpcId=c.seed.vpc_id, TargetType="ip")
    arn = str(created["TargetGroups"][0]["TargetGroupArn"])
    await c.backend("backend", ["10.5.0.1", "10.5.0.2"], node_port=30081)
    await c.admin.create(TARGETGROUPBINDINGS, {
        "apiVersion": TARGETGROUPBINDINGS.api_version, "kind": TARGETGROUPBINDINGS.kind,
        "metadata": {"name": "shared"},
        "spec": {"serviceRef": {"name": "backend", "port": 80}, "targetGroupARN": arn,
                 "targetType": "ip", "multiClusterTargetGroup": True}}, WORKLOADS)

    async def tracked() -> set[str] | None:
        cm = await c.get(CONFIGMAPS, "aws-lbc-targets-shared")
        if cm is None:
            return None
        return {t for t in str((cm.get("data") or {}).get("targets") or "").split(",") if t}

    async def state(targets: set[tuple[str, int]]) -> bool:
        return (await c.registered(arn) == targets
                and await tracked() == {f"{ip}:{port}" for ip, port in targets})

    both = {("10.5.0.1", 8080), ("10.5.0.2", 8080)}
    await eventually(lambda: state(both), message="binding: targets not registered/tracked")
    await c.endpoints("backend", ["10.5.0.2"])
    await eventually(lambda: state({("10.5.0.2", 8080)}),
                     message="binding: removed endpoint not deregistered/untracked")
    await c.admin.delete(TARGETGROUPBINDINGS, "shared", WORKLOADS)

    async def finalized() -> bool:
        return (await c.get(TARGETGROUPBINDINGS, "shared") is None
                and await tracked() is None and await c.registered(arn) == set())

    await eventually(finalized, message="binding: not finalized")


async def network_load_balancer(c: Installation) -> None:
    await c.admin.create(SERVICES, {
        "metadata": {"name": "web", "annotations": {
            SVC + "aws-load-balancer-nlb-target-type": "ip"}},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": NLB_CLASS,
                 "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                            "protocol": "TCP"}]}}, WORKLOADS)
    await c.endpoints("web", ["10.0.1.1", "10.0.1.2"])

    async def managed() -> list[Obj]:
        listed = await c.admin.list(TARGETGROUPBINDINGS, WORKLOADS,
                                    label_selector=f"{SERVICE_STACK_NAME_LABEL}=web")
        return list(listed["items"])

    async def deployed() -> tuple[Obj, str] | None:
        svc = await c.get(SERVICES, "web")
        bindings = await managed()
        if (_hostname(svc) is None or _condition(svc, CONDITION_TYPE).get("status") != "True"
                or len(bindings) != 1):
            return None
        arn = str(bindings[0]["spec"]["targetGroupARN"])
        if await c.registered(arn) != {("10.0.1.1", 8080), ("10.0.1.2", 8080)}:
            return None
        return bindings[0], arn

    binding, arn = await eventually(deployed, message="service: NLB not deployed")
    svc = await c.get(SERVICES, "web")
    assert _hostname(svc) in {lb["DNSName"] for lb in await c.load_balancers()}

    # Changed while its binding has lost our labels: the cache no longer shows the binding as
    # managed, so the create finds the name taken, reads it and updates it back.
    name = str(binding["metadata"]["name"])
    await c.admin.patch(TARGETGROUPBINDINGS, name, {"metadata": {"labels": {
        SERVICE_STACK_NAME_LABEL: None, SERVICE_STACK_NAMESPACE_LABEL: None}}}, WORKLOADS)
    await c.admin.patch(SERVICES, "web", {"metadata": {"annotations": {
        SVC + "aws-load-balancer-healthcheck-interval": "20"}}}, WORKLOADS)

    async def changed() -> bool:
        tgs = (await c.elbv2("DescribeTargetGroups", TargetGroupArns=[arn]))["TargetGroups"]
        return (tgs[0]["HealthCheckIntervalSeconds"] == 20
                and [b["metadata"]["name"] for b in await managed()] == [name])

    await eventually(changed, message="service: change not deployed, binding not adopted")
    assert any(r.verb == "get" and r.user == CONTROLLER_USER.name
               and r.path.endswith(f"/targetgroupbindings/{name}")
               for r in c.server.request_log), "the taken name was not read back"

    await c.admin.patch(SERVICES, "web", {"metadata": {"annotations": {
        SVC + "aws-load-balancer-healthcheck-interval": "ten"}}}, WORKLOADS)

    async def reported() -> bool:
        cond = _condition(await c.get(SERVICES, "web"), CONDITION_TYPE)
        warnings = [e for e in await c.events("web") if e["type"] == "Warning"]
        return (cond.get("status") == "False" and cond.get("reason") == "InvalidAnnotation"
                and any(e["reason"] == "FailedBuildModel"
                        and "healthcheck-interval" in e["message"] for e in warnings))

    await eventually(reported, message="service: invalid annotation not reported")

    await c.admin.delete(SERVICES, "web", WORKLOADS)

    async def deleted() -> bool:
        return (await c.get(SERVICES, "web") is None and not await managed()
                and not any(lb["Type"] == "network" for lb in await c.load_balancers()))

    await eventually(deleted, message="service: NLB not cleaned up")


async def application_load_balancer(c: Installation, proxy: AWSFaultProxy) -> None:
    await c.ingress_objects()

    async def hostname() -> str | None:
        return _hostname(await c.get(INGRESSES, "secure"))

    dns = await eventually(hostname, message="ingress: no hostname")
    (lb,) = [lb for lb in await c.load_balancers() if lb["Type"] == "application"]
    assert lb["DNSName"] == dns
    assert lb["Scheme"] == "internet-facing"  # from the IngressClassParams
    (listener,) = (await c.elbv2("DescribeListeners",
                                 LoadBalancerArn=lb["LoadBalancerArn"]))["Listeners"]
    rules = (await c.elbv2("DescribeRules", ListenerArn=listener["ListenerArn"]))["Rules"]
    oidc = [a["AuthenticateOidcConfig"] for r in rules for a in r["Actions"]
            if a["Type"] == "authenticate-oidc"]
    assert [o["ClientId"] for o in oidc] == ["my-client"]  # from the Secret

    async def checkpoint() -> str:
        ing = await c.get(INGRESSES, "secure")
        return str(((ing or {}).get("metadata") or {}).get("annotations", {}).get(
            CHECKPOINT_ANNOTATION) or "")

    before = await eventually(checkpoint, message="ingress: no checkpoint")
    proxy.clear_log()
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "second"})

    async def rotated() -> bool:
        return await checkpoint() not in ("", before)

    await eventually(rotated, message="ingress: rotated secret not deployed")
    assert "ModifyRule" in [r.operation for r in proxy.log if r.mutating]

    await c.admin.delete(INGRESSES, "secure", WORKLOADS)

    async def gone() -> bool:
        bindings = (await c.admin.list(TARGETGROUPBINDINGS, WORKLOADS))["items"]
        return (await c.get(INGRESSES, "secure") is None and not bindings
                and not await c.load_balancers())

    await eventually(gone, timeout=20, message="ingress: ALB not cleaned up")


async def lease_holder(c: Installation) -> str | None:
    lease = await c.get(LEASES, LEASE, NAMESPACE)
    return None if lease is None else str(lease["spec"].get("holderIdentity") or "")


# -- tests ----------------------------------------------------------------------------------------


async def test_whole_lifecycle_is_refused_nothing_and_needs_every_grant(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        no_retry_backoff: None, tmp_path: Path) -> None:
    docs = rbac_documents()
    config = controller_config(aws_seed, aws_proxy)
    async with installation(docs, seed=aws_seed, aws=aws_pool, tmp_path=tmp_path) as c, \
            running(c, config) as (manager, task):
        await eventually(lambda: asyncio.sleep(0, manager.leading), message="never led")
        assert await lease_holder(c) == IDENTITY
        await multi_cluster_binding(c)
        await network_load_balancer(c)
        await application_load_balancer(c, aws_proxy)
        manager.stop()
        assert await asyncio.wait_for(task, 15) == 0
        assert await lease_holder(c) == ""  # released on the way out

        denials = c.server.denials
        assert denials == [], "\n".join(f"{d.verb} {d.path}: {d.message}" for d in denials)
        requests = requests_of(c.server.request_log, CONTROLLER_USER)
        secret_requests = {(a.verb, a.namespace, a.name) for a in requests
                           if a.resource == "secrets"}
        assert secret_requests == {("list", WORKLOADS, "oidc"), ("watch", WORKLOADS, "oidc")}
        result = account(grants(docs), requests, baseline_rules(CONTROLLER_USER))
        print(result.describe())
        assert result.refused == []
        assert result.unused == [], "granted but needed by no request:\n" + "\n".join(
            str(g) for g in result.unused)


async def test_without_secrets_only_the_referenced_secret_is_refused(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        no_retry_backoff: None, tmp_path: Path) -> None:
    docs = without_resource(rbac_documents(), kind="ClusterRole", group="", resource="secrets")
    assert len(grants(docs)) == len(grants(rbac_documents())) - 2  # list and watch
    config = controller_config(aws_seed, aws_proxy)
    async with installation(docs, seed=aws_seed, aws=aws_pool, tmp_path=tmp_path) as c:
        await c.ingress_objects()
        async with running(c, config) as (manager, task):
            await eventually(lambda: asyncio.sleep(0, manager.leading), message="never led")

            async def reported() -> list[Obj]:
                return [e for e in await c.events("secure")
                        if e["type"] == "Warning" and e["reason"] == "SecretUnreadable"]

            (event,) = await eventually(reported, message="the Ingress was not told")
            assert "default/oidc" in event["message"]
            assert "cannot" in event["message"]
            denials = c.server.denials
            assert denials
            assert {(d.verb, d.resource, d.namespace) for d in denials} <= {
                ("list", "secrets", WORKLOADS), ("watch", "secrets", WORKLOADS)}, denials
            assert all("cannot" in d.message and "secrets" in d.message for d in denials)
            assert _hostname(await c.get(INGRESSES, "secure")) is None
            assert await c.load_balancers() == []
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0


# -- the account itself ---------------------------------------------------------------------------


def test_account_finds_a_grant_no_request_needs() -> None:
    """The analysis above can fail: an extra verb, a redundant rule and a Role rule shadowed by
    the ClusterRole are reported; a request nothing grants is reported as refused."""
    user = CONTROLLER_USER
    docs: list[Obj] = [
        {"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [
            {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "delete"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]},
        {"kind": "Role", "metadata": {"name": "le", "namespace": NAMESPACE}, "rules": [
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": ["a", "b"], "verbs": ["get"]}]},
    ]
    log = [RequestRecord("list", "/api/v1/services", {}, 200, user.name),
           RequestRecord("create", f"/api/v1/namespaces/{NAMESPACE}/events", {}, 201,
                         user.name),
           RequestRecord("create", "/api/v1/namespaces/default/events", {}, 201, user.name),
           RequestRecord("get", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/a",
                         {}, 200, user.name),
           RequestRecord("get", "/api/v1/namespaces/default/secrets/x", {}, 403, user.name),
           RequestRecord("get", "/api", {}, 200, user.name),
           RequestRecord("delete", "/api/v1/namespaces/default/services/x", {}, 200, "other")]
    result = account(grants(docs), requests_of(log, user), baseline_rules(user))
    assert sorted(str(g) for g in result.unused) == [
        "ClusterRole r rule 0: delete core/services",
        f"Role {NAMESPACE}/le rule 0: create core/events",
        f"Role {NAMESPACE}/le rule 1: get coordination.k8s.io/leases 'b'",
    ]
    assert [(a.verb, a.resource, a.name) for a in result.refused] == [("get", "secrets", "x")]
    assert {str(g) for g in result.needed} == {
        "ClusterRole r rule 0: list core/services", "ClusterRole r rule 1: create core/events",
        f"Role {NAMESPACE}/le rule 1: get coordination.k8s.io/leases 'a'"}
