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
- a pod waiting only for its readiness gate: registered, its target-health condition set;
- secure metrics: a scraper bound to the shipped `aiolbc-metrics-reader` role is served (the
  controller reviews its token and its access), one without the binding is refused;
- self-managed webhook TLS: an unusable Secret replaced, the CA injected into the shipped
  webhook configurations (which the API server then calls for every write of the run); after
  the run, the Secret deleted and a second, short run creating it again;
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
import contextlib
import copy
import socket
import ssl
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from controller.apis import (
    ALBTARGETCONTROLCONFIGS,
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
    TARGETGROUPBINDINGS,
    target_health_condition,
)
from controller.apis.albtargetcontrolconfig import CONFIG_NAME
from controller.app import aws_settings, build_manager
from controller.aws import AWSClientPool
from controller.config import ControllerConfig, parse_config
from controller.defaults import DEFAULT_WEBHOOK_SECRET_NAME
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.client import KubeClient
from runtime.envtest import RequestRecord, service_account_user
from runtime.errors import NotFound
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    ENDPOINTSLICES,
    INGRESSES,
    LEASES,
    MUTATINGWEBHOOKCONFIGURATIONS,
    PODS,
    SECRETS,
    SERVICES,
    VALIDATINGWEBHOOKCONFIGURATIONS,
)
from runtime.statusconditions import find_condition
from tests.support import objects
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname, ingress_path
from tests.support.rbac import (
    KINDS,
    NAMESPACE,
    SERVICE_ACCOUNT,
    account,
    authorized_server,
    baseline_rules,
    grants,
    metrics_reader_role,
    rbac_documents,
    requests_of,
    without_resource,
)
from tests.support.waiting import eventually
from tests.support.webhooks import WebhookHarness, configurations

LEASE = "aws-load-balancer-controller-leader"
IDENTITY = "aiolbc-rbac-test"
WORKLOADS = "default"
SVC = "service.beta.kubernetes.io/"
OIDC = ('{"issuer":"https://idp.example.com","authorizationEndpoint":"https://idp.example.com/'
        'auth","tokenEndpoint":"https://idp.example.com/token","userInfoEndpoint":'
        '"https://idp.example.com/userinfo","secretName":"oidc"}')
NAMESPACE_LABEL = {"aiolbc.example.com/ingress": "allowed"}
CONTROLLER_USER = service_account_user(NAMESPACE, SERVICE_ACCOUNT).with_authenticated()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def ingress_objects(c: Cluster) -> None:
    """An IngressClass with parameters, its namespace selected, an OIDC Secret, a backend
    Service and an Ingress using all of them."""
    await c.label_namespace(NAMESPACE_LABEL)
    await c.class_params("shop", {"namespaceSelector": {"matchLabels": NAMESPACE_LABEL},
                                  "scheme": "internet-facing", "targetType": "ip"})
    await c.ingress_class("alb", params="shop")
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "first"})
    await backend(c, "app", ["10.0.2.10"])
    await c.ingress("secure", {"listen-ports": '[{"HTTPS": 443}]',
                               "certificate-arn": c.seed.certificate_arn,
                               "auth-type": "oidc", "auth-idp-oidc": OIDC},
                    host="app.example.com", paths=[ingress_path("/", "app")])


async def backend(c: Cluster, name: str, ips: Sequence[str]) -> None:
    """A NodePort Service with a named target port, and its endpoints."""
    await c.service(name, target_port="http")
    await c.endpoints(name, ips)


@contextlib.asynccontextmanager
async def installation(docs: Sequence[Obj], *, seed: AwsSeed, pool: AWSClientPool,
                       aws: AwsInspector, tmp_path: Path
                       ) -> AsyncIterator[tuple[Cluster, KubeClient]]:
    """The local API server with authorization on and only `docs` granting anything to the
    controller's ServiceAccount: the cluster as an administrator sees it, and the client
    authenticated as the ServiceAccount."""
    async with authorized_server(docs, tmp_path) as (server, admin, controller):
        yield Cluster(server=server, client=admin, pool=pool, seed=seed, aws=aws,
                      namespace=WORKLOADS), controller


# Leases for runs that test something else than leader election: on a loaded machine a 1.5 s
# renew deadline can pass unnoticed by the test, and a lost lease ends the run with exit 1.
STEADY_LEASE = ("--leader-election-lease-duration", "30s",
                "--leader-election-renew-deadline", "20s")


def controller_config(seed: AwsSeed, proxy: AWSFaultProxy, *flags: str,
                      webhooks: Path | None = None) -> ControllerConfig:
    """`aiolbc run`'s flags for these tests (short leases, so a stop hands over quickly);
    `flags` last. With `webhooks` (a certificate directory) the webhook server runs, on a free
    loopback port."""
    serving = ["--webhook-bind-port", "0"] if webhooks is None else [
        "--webhook-bind-host", "127.0.0.1", "--webhook-bind-port", str(free_port()),
        "--webhook-cert-dir", str(webhooks)]
    return parse_config([
        "--cluster-name", seed.cluster_name, "--aws-region", "us-west-2",
        "--aws-vpc-id", seed.vpc_id, "--aws-endpoint-url", proxy.url,
        "--leader-election-namespace", NAMESPACE,
        "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1.5s",
        "--leader-election-retry-period", "0.2s", "--metrics-secure",
        "--metrics-bind-addr", "127.0.0.1:0", "--health-probe-bind-addr", "0",
        "--targetgroupbinding-requeue-duration", "0.2s", *serving, *flags])


@contextlib.asynccontextmanager
async def running(cluster: Cluster, controller: KubeClient, config: ControllerConfig
                  ) -> AsyncIterator[tuple[Manager, asyncio.Task[int]]]:
    """`aiolbc run`'s Manager as the ServiceAccount; killed on the way out if still running.

    The API server answers each informer's first, streaming list (`sendInitialEvents`) as one
    without the WatchList feature does (422), so every informer takes the list + watch path
    that such clusters see: the run then shows what `list` is granted for."""
    registry = CollectorRegistry()
    async with AWSClientPool(aws_settings(config), registry=registry) as pool:
        manager = build_manager(config, controller, pool, registry=registry,
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


def _status(obj: Obj | None, type_: str) -> Obj:
    return condition(obj, type_) or {}


# -- the lifecycle, part by part ----------------------------------------------------------------


async def multi_cluster_binding(c: Cluster) -> None:
    arn = await c.target_group("shared-tg")
    await backend(c, "backend", ["10.5.0.1", "10.5.0.2"])
    await c.binding("shared", service="backend", arn=arn, multi_cluster=True)

    async def state(targets: set[tuple[str, int]]) -> bool:
        return (await c.aws.registered(arn) == targets
                and await c.tracked("shared") == {f"{ip}:{port}" for ip, port in targets})

    both = {("10.5.0.1", 8080), ("10.5.0.2", 8080)}
    await eventually(lambda: state(both), message="binding: targets not registered/tracked")
    await c.endpoints("backend", ["10.5.0.2"])
    await eventually(lambda: state({("10.5.0.2", 8080)}),
                     message="binding: removed endpoint not deregistered/untracked")
    await c.delete(TARGETGROUPBINDINGS, "shared")

    async def finalized() -> bool:
        return (await c.gone(TARGETGROUPBINDINGS, "shared")
                and await c.tracked("shared") is None and await c.aws.registered(arn) == set())

    await eventually(finalized, message="binding: not finalized")


async def network_load_balancer(c: Cluster) -> None:
    await c.nlb_service("web", endpoint_ips=("10.0.1.1", "10.0.1.2"))

    async def managed() -> list[Obj]:
        listed = await c.client.list(TARGETGROUPBINDINGS, WORKLOADS,
                                     label_selector=f"{SERVICE_STACK_NAME_LABEL}=web")
        return list(listed["items"])

    async def deployed() -> tuple[Obj, str] | None:
        svc = await c.find(SERVICES, "web")
        bindings = await managed()
        if (hostname(svc) is None or _status(svc, CONDITION_TYPE).get("status") != "True"
                or len(bindings) != 1):
            return None
        arn = str(bindings[0]["spec"]["targetGroupARN"])
        if await c.aws.registered(arn) != {("10.0.1.1", 8080), ("10.0.1.2", 8080)}:
            return None
        return bindings[0], arn

    binding, arn = await eventually(deployed, message="service: NLB not deployed")
    svc = await c.find(SERVICES, "web")
    assert hostname(svc) in {lb["DNSName"] for lb in await c.aws.load_balancers()}

    # Changed while its binding has lost our labels: the cache no longer shows the binding as
    # managed, so the create finds the name taken, reads it and updates it back. (The change
    # is one the target group's name does not hash, so the binding's name stays.)
    name = str(binding["metadata"]["name"])
    await c.patch(TARGETGROUPBINDINGS, name, {"metadata": {"labels": {
        SERVICE_STACK_NAME_LABEL: None, SERVICE_STACK_NAMESPACE_LABEL: None}}})
    await c.patch(SERVICES, "web", {"metadata": {"annotations": {
        SVC + "aws-load-balancer-healthcheck-healthy-threshold": "5"}}})

    async def changed() -> bool:
        tgs = (await c.aws.elbv2("DescribeTargetGroups", TargetGroupArns=[arn]))["TargetGroups"]
        return (tgs[0]["HealthyThresholdCount"] == 5
                and [b["metadata"]["name"] for b in await managed()] == [name])

    await eventually(changed, message="service: change not deployed, binding not adopted")
    assert any(r.verb == "get" and r.user == CONTROLLER_USER.name
               and r.path.endswith(f"/targetgroupbindings/{name}")
               for r in c.server.request_log), "the taken name was not read back"

    await c.patch(SERVICES, "web", {"metadata": {"annotations": {
        SVC + "aws-load-balancer-healthcheck-interval": "ten"}}})

    async def reported() -> bool:
        cond = _status(await c.find(SERVICES, "web"), CONDITION_TYPE)
        warnings = [e for e in await c.events("web") if e["type"] == "Warning"]
        return (cond.get("status") == "False" and cond.get("reason") == "InvalidAnnotation"
                and any(e["reason"] == "FailedBuildModel"
                        and "healthcheck-interval" in e["message"] for e in warnings))

    await eventually(reported, message="service: invalid annotation not reported")

    await c.delete(SERVICES, "web")

    async def deleted() -> bool:
        return (await c.gone(SERVICES, "web") and not await managed()
                and not any(lb["Type"] == "network" for lb in await c.aws.load_balancers()))

    await eventually(deleted, message="service: NLB not cleaned up")


async def application_load_balancer(c: Cluster, proxy: AWSFaultProxy) -> None:
    await ingress_objects(c)

    async def ingress_hostname() -> str | None:
        return hostname(await c.find(INGRESSES, "secure"))

    dns = await eventually(ingress_hostname, message="ingress: no hostname")
    (lb,) = [lb for lb in await c.aws.load_balancers() if lb["Type"] == "application"]
    assert lb["DNSName"] == dns
    assert lb["Scheme"] == "internet-facing"  # from the IngressClassParams
    (listener,) = (await c.aws.elbv2("DescribeListeners",
                                 LoadBalancerArn=lb["LoadBalancerArn"]))["Listeners"]
    rules = (await c.aws.elbv2("DescribeRules", ListenerArn=listener["ListenerArn"]))["Rules"]
    oidc = [a["AuthenticateOidcConfig"] for r in rules for a in r["Actions"]
            if a["Type"] == "authenticate-oidc"]
    assert [o["ClientId"] for o in oidc] == ["my-client"]  # from the Secret

    async def checkpoint() -> str:
        return await c.checkpoint(INGRESSES, "secure")

    before = await eventually(checkpoint, message="ingress: no checkpoint")
    proxy.clear_log()
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "second"})

    async def rotated() -> bool:
        return await checkpoint() not in ("", before)

    await eventually(rotated, message="ingress: rotated secret not deployed")
    assert "ModifyRule" in [r.operation for r in proxy.log if r.mutating]

    await c.delete(INGRESSES, "secure")

    async def gone() -> bool:
        return (await c.gone(INGRESSES, "secure") and not await c.bindings()
                and not await c.aws.load_balancers())

    await eventually(gone, timeout=20, message="ingress: ALB not cleaned up")


async def readiness_gate(c: Cluster) -> None:
    arn = await c.target_group("gated-tg")
    gate = target_health_condition("gated")
    await c.service("gated")
    pod = await c.pod("gated-1", labels={"app": "gated"}, gates=[gate], ip="10.6.0.1",
                      conditions={"ContainersReady": "True", "Ready": "False"})
    endpoint = objects.endpoint("10.6.0.1", ready=False, uid=pod["metadata"]["uid"])
    endpoint["targetRef"]["name"] = "gated-1"
    await c.create(ENDPOINTSLICES, objects.endpoint_slice("gated", endpoints=[endpoint]))
    await c.binding("gated", service="gated", arn=arn)

    async def ready() -> bool:
        found = find_condition(await c.get(PODS, "gated-1"), gate) or {}
        return (found.get("status") == "True"
                and await c.aws.registered(arn) == {("10.6.0.1", 8080)})

    await eventually(ready, message="readiness gate: pod not registered or not marked")
    await c.delete(TARGETGROUPBINDINGS, "gated")
    await eventually(lambda: c.gone(TARGETGROUPBINDINGS, "gated"),
                     message="readiness gate: binding not finalized")


async def target_control_agent(c: Cluster) -> None:
    """A pod that asks for the ALB target control agent (ALBTargetControlAgent gate on): the
    webhook reads the one config by name, in the pod's namespace and then the controller's."""
    await c.client.create(ALBTARGETCONTROLCONFIGS, {
        "metadata": {"name": CONFIG_NAME, "namespace": NAMESPACE},
        "spec": {"image": "agent:1", "dataAddress": "0.0.0.0:80",
                 "controlAddress": "0.0.0.0:3000", "destinationAddress": "127.0.0.1:8080"}},
        NAMESPACE)
    pod = await c.pod("agent-1", labels={"elbv2.k8s.aws/alb-target-control-agent-inject": "true"})
    assert [x["name"] for x in pod["spec"]["containers"]][-1] == "alb-target-control-agent"


async def webhook_configurations(c: Cluster) -> None:
    """The shipped configurations, and a Secret of that name the controller cannot use."""
    for doc in configurations():
        resource = (MUTATINGWEBHOOKCONFIGURATIONS if doc["kind"].startswith("Mutating")
                    else VALIDATINGWEBHOOKCONFIGURATIONS)
        await c.client.create(resource, doc)
    await c.client.create(SECRETS, {"metadata": {"name": DEFAULT_WEBHOOK_SECRET_NAME},
                                    "type": "kubernetes.io/tls",
                                    "data": {"tls.crt": "bm90IGEgY2VydA==", "tls.key": ""}},
                          NAMESPACE)


async def webhooks_served(c: Cluster, manager: Manager) -> None:
    """The Secret replaced, the CA in every webhook; the API server routed to this replica."""
    hooks = WebhookHarness(c, None, Path())

    async def serving() -> bool:
        server = manager.webhook_server
        return server is not None and await server.ready() and bool(await hooks.secret_ca())

    await eventually(serving, message="webhooks: not serving with a certificate")
    assert manager.webhook_server is not None
    hooks.servers.append(manager.webhook_server)
    hooks.route_to(manager.webhook_server)
    await eventually(hooks.injected, message="webhooks: CA not injected")


async def secure_metrics(c: Cluster, manager: Manager) -> None:
    role = metrics_reader_role()
    await c.client.create(KINDS["ClusterRole"], role)
    scraper = c.server.add_service_account("monitoring", "prometheus")
    stranger = c.server.add_service_account("monitoring", "stranger")
    await c.client.create(KINDS["ClusterRoleBinding"], {
        "metadata": {"name": "aiolbc-metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus",
                      "namespace": "monitoring"}]})
    url = f"{manager.metrics_server.url}/metrics"
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the controller's self-signed certificate

    async def status(token: str | None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with aiohttp.ClientSession() as http, \
                http.get(url, headers=headers, ssl=insecure) as resp:
            return resp.status, await resp.text()

    assert (await status(None))[0] == 401
    assert (await status("not-a-token"))[0] == 401
    assert (await status(stranger))[0] == 403
    code, body = await status(scraper)
    assert code == 200
    assert "leader_election_master_status" in body


async def lease_holder(c: Cluster) -> str | None:
    try:
        lease = await c.client.get(LEASES, LEASE, NAMESPACE)
    except NotFound:
        return None
    return str(lease["spec"].get("holderIdentity") or "")


# -- tests ----------------------------------------------------------------------------------------


async def test_whole_lifecycle_is_refused_nothing_and_needs_every_grant(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_inspector: AwsInspector, no_retry_backoff: None, tmp_path: Path) -> None:
    docs = rbac_documents()
    # Steady leases: the run tests what is granted, and a loaded machine must not end it.
    config = controller_config(aws_seed, aws_proxy, *STEADY_LEASE,
                               "--feature-gates=ALBTargetControlAgent=true",
                               webhooks=tmp_path / "certs")
    async with installation(docs, seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                            tmp_path=tmp_path) as (c, controller):
        await webhook_configurations(c)
        async with running(c, controller, config) as (manager, task):
            await eventually(lambda: asyncio.sleep(0, manager.leading), message="never led")
            assert await lease_holder(c) == IDENTITY
            await webhooks_served(c, manager)
            await multi_cluster_binding(c)
            await network_load_balancer(c)
            await application_load_balancer(c, aws_proxy)
            await readiness_gate(c)
            await target_control_agent(c)
            await secure_metrics(c, manager)
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0
            assert await lease_holder(c) == ""  # released on the way out
        # No Secret at all: the next start creates it.
        await c.client.delete(SECRETS, DEFAULT_WEBHOOK_SECRET_NAME, NAMESPACE)
        async with running(c, controller, config) as (manager, task):
            await webhooks_served(c, manager)
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0

        denials = c.server.denials
        assert denials == [], "\n".join(f"{d.verb} {d.path}: {d.message}" for d in denials)
        requests = requests_of(c.server.request_log, CONTROLLER_USER)
        secret_requests = {(a.verb, a.namespace, a.name) for a in requests
                           if a.resource == "secrets"}
        # The referenced OIDC Secret by name; the webhook certificate's own Secret by name
        # (its create cannot name it).
        assert secret_requests == {
            ("list", WORKLOADS, "oidc"), ("watch", WORKLOADS, "oidc"),
            ("get", NAMESPACE, DEFAULT_WEBHOOK_SECRET_NAME),
            ("update", NAMESPACE, DEFAULT_WEBHOOK_SECRET_NAME), ("create", NAMESPACE, "")}
        result = account(grants(docs), requests, baseline_rules(CONTROLLER_USER))
        print(result.describe())
        assert result.refused == []
        assert result.unused == [], "granted but needed by no request:\n" + "\n".join(
            str(g) for g in result.unused)


async def test_without_secrets_only_the_referenced_secret_is_refused(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_inspector: AwsInspector, no_retry_backoff: None, tmp_path: Path) -> None:
    docs = without_resource(rbac_documents(), kind="ClusterRole", group="", resource="secrets")
    assert len(grants(docs)) == len(grants(rbac_documents())) - 2  # list and watch
    config = controller_config(aws_seed, aws_proxy, *STEADY_LEASE)
    async with installation(docs, seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                            tmp_path=tmp_path) as (c, controller):
        await ingress_objects(c)
        async with running(c, controller, config) as (manager, task):
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
            assert hostname(await c.find(INGRESSES, "secure")) is None
            assert await c.aws.load_balancers() == []
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0


async def test_secrets_narrowed_to_their_names_are_enough(
        aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_inspector: AwsInspector, no_retry_backoff: None, tmp_path: Path) -> None:
    """What the security model tells an installation with fixed OIDC Secret names: the
    Secrets rule narrowed by resourceNames still serves the Ingress, and nothing is refused."""
    docs = copy.deepcopy(rbac_documents())
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "aiolbc"]
    (rule,) = [r for r in role["rules"] if "secrets" in r["resources"]]
    assert rule["resources"] == ["secrets"], "the Secrets rule can be narrowed on its own"
    rule["resourceNames"] = ["oidc"]
    config = controller_config(aws_seed, aws_proxy, *STEADY_LEASE)
    async with installation(docs, seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                            tmp_path=tmp_path) as (c, controller):
        await ingress_objects(c)
        async with running(c, controller, config) as (manager, task):
            async def served() -> str | None:
                return hostname(await c.find(INGRESSES, "secure"))

            await eventually(served, message="the Ingress got no load balancer")
            assert c.server.denials == []
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
