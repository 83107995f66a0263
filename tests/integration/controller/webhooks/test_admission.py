"""aiolbc's admission webhooks as a cluster calls them: the shipped configurations applied with
the real kubectl, the local API server calling aiolbc's webhook server over TLS with the CA the
controller injected, kubectl printing what the server answers. A denial carries the text of the
Warning Event the reconciler writes for the same mistake."""

from __future__ import annotations

import asyncio
import json
import subprocess

from controller.apis import (
    INGRESSCLASSPARAMS,
    REGISTERED_TARGET_GROUP_ANNOTATION,
    TARGETGROUPBINDINGS,
    target_health_condition,
)
from controller.aws import Role
from runtime.objects import Obj
from runtime.resources import (
    INGRESSES,
    NAMESPACES,
    PODS,
    SERVICES,
)
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.kubectl import Kubectl
from tests.support.waiting import eventually
from tests.support.webhooks import (
    NAMESPACE,
    SERVICE,
    SERVICE_PORT,
    WebhookHarness,
    configurations,
)

A = "alb.ingress.kubernetes.io/"


async def apply(kubectl: Kubectl, obj: Obj) -> subprocess.CompletedProcess[str]:
    return await kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


def denial(webhook: str, text: str) -> str:
    return f'admission webhook "{webhook}" denied the request: {text}'


async def warning_event(cluster: Cluster, name: str, reason: str) -> str:
    async def found() -> str | None:
        return next((e["message"] for e in await cluster.events(name)
                     if e["reason"] == reason), None)
    return str(await eventually(found))


# ---- TargetGroupBindings ----------------------------------------------------------------------

async def test_bindings_are_defaulted_and_checked_as_the_reconciler_checks_them(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    instances = await cluster.target_group("instances", target_type="instance")
    shared = await cluster.target_group("shared", protocol="HTTPS", port=443)
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    await cluster.start(on_setup=hooks.setup)
    # Written before the webhooks are configured: admitted, then reported by the reconciler.
    await cluster.binding("early", service="web", arn=instances, target_type="ip")
    text = await warning_event(cluster, "early", "InvalidSpec")
    assert "does not match target group instances" in text
    await hooks.install()

    # The same mistake now: denied, with the Event's words.
    result = await apply(hooks.kubectl, objects.target_group_binding(
        "late", service="web", arn=instances, target_type="ip", namespace="default"))
    assert denial("vtargetgroupbinding.elbv2.k8s.aws", text) in result.stderr
    assert await cluster.find(TARGETGROUPBINDINGS, "late") is None
    # A name that is no target group: the text the reconciler would report.
    missing = await apply(hooks.kubectl, objects.target_group_binding(
        "other", service="web", tg_name="no-such-group", target_type=None,
        namespace="default"))
    assert 'admission webhook "mtargetgroupbinding.elbv2.k8s.aws" denied the request: ' \
           "target group no-such-group not found" in missing.stderr

    # Defaults from the target group, found by name.
    first = objects.target_group_binding("a", service="web", tg_name="shared",
                                         target_type=None, namespace="default")
    assert (await apply(hooks.kubectl, first)).returncode == 0
    spec = (await cluster.get(TARGETGROUPBINDINGS, "a"))["spec"]
    assert spec == {"serviceRef": {"name": "web", "port": 80}, "targetGroupName": "shared",
                    "targetGroupARN": shared, "targetType": "ip", "ipAddressType": "ipv4",
                    "vpcID": cluster.seed.vpc_id, "targetGroupProtocol": "HTTPS"}

    # One binding per target group (once it registered there), unless each shares it on
    # purpose: the reconciler's ownership check, word for word.
    async def holds() -> bool:
        tgb = await cluster.get(TARGETGROUPBINDINGS, "a")
        return objects.annotation(tgb, REGISTERED_TARGET_GROUP_ANNOTATION) == shared

    await eventually(holds)
    second = objects.target_group_binding("b", service="web", arn=shared, namespace="default")
    refused = await apply(hooks.kubectl, second)
    assert denial("vtargetgroupbinding.elbv2.k8s.aws",
                  "target group shared is used by TargetGroupBinding default/a; bindings share "
                  "a target group only within one namespace and with multiClusterTargetGroup: "
                  "true on each") in refused.stderr
    await cluster.patch(TARGETGROUPBINDINGS, "a", {"spec": {"multiClusterTargetGroup": True}})
    second["spec"]["multiClusterTargetGroup"] = True
    assert (await apply(hooks.kubectl, second)).returncode == 0

    # Immutable fields stay; the controller's own writes (finalizer, checkpoint, status) and
    # the finalizer's removal go through.
    async def reconciled() -> bool:
        tgb = await cluster.get(TARGETGROUPBINDINGS, "a")
        return bool(objects.annotation(tgb, "elbv2.k8s.aws/checkpoint")) and bool(
            tgb["metadata"].get("finalizers"))

    await eventually(reconciled)
    result = await hooks.kubectl("patch", "targetgroupbinding", "a", "--type", "merge",
                                 "-p", '{"spec": {"targetType": "instance"}}', check=False)
    assert denial("vtargetgroupbinding.elbv2.k8s.aws", "TargetGroupBinding update may not "
                  "change these fields: spec.targetType") in result.stderr
    await cluster.delete(TARGETGROUPBINDINGS, "a")
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "a"))
    # Each denial counted under upstream's metric, by webhook path and by the reason the
    # reconciler's condition gives the same mistake.
    assert cluster.registry.get_sample_value("awslbc_webhook_validation_failure_total", {
        "webhook_name": "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding",
        "error_category": "InvalidSpec"}) == 2  # type mismatch, then an immutable field
    assert cluster.registry.get_sample_value("awslbc_webhook_validation_failure_total", {
        "webhook_name": "/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding",
        "error_category": "TargetGroupInUse"}) == 1
    assert cluster.registry.get_sample_value("awslbc_webhook_mutation_failure_total", {
        "webhook_name": "/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding",
        "error_category": "TargetGroupNotFound"}) == 1


async def test_cross_account_bindings_are_checked_as_the_reconciler_checks_them(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    """A role's ARN or external id STS would refuse: denied with the Event's words. A binding
    naming a role is admitted without a look at the controller's own account (its target
    group is the role's account's), and registered there as the role."""
    role = "arn:aws:iam::111111111111:role/tg-management"
    far = cluster.aws.as_role(Role(arn=role, external_id="shared-secret"))
    vpc = await far.vpc()
    arn = await far.create_target_group("far-tg", vpc_id=vpc)
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    await cluster.start(on_setup=hooks.setup)
    bad = {"iamRoleArnToAssume": "arn:aws:iam::1111:role/x", "vpcID": vpc}
    await cluster.binding("early", service="web", arn=arn, extra=bad)
    text = await warning_event(cluster, "early", "InvalidSpec")
    assert "is not an IAM role ARN" in text
    await hooks.install()

    result = await apply(hooks.kubectl, objects.target_group_binding(
        "late", service="web", arn=arn, namespace="default", extra=bad))
    assert denial("mtargetgroupbinding.elbv2.k8s.aws", text) in result.stderr
    result = await apply(hooks.kubectl, objects.target_group_binding(
        "late", service="web", arn=arn, namespace="default", extra={
            "iamRoleArnToAssume": role, "assumeRoleExternalId": "not valid", "vpcID": vpc}))
    assert denial("mtargetgroupbinding.elbv2.k8s.aws", "invalid TargetGroupBinding spec: "
                  "assumeRoleExternalId: must be 2 to 1224") in result.stderr

    good = objects.target_group_binding("far", service="web", arn=arn, namespace="default",
                                        extra={"iamRoleArnToAssume": role, "vpcID": vpc,
                                               "assumeRoleExternalId": "shared-secret"})
    assert (await apply(hooks.kubectl, good)).returncode == 0

    async def registered() -> bool:
        return await far.registered(arn) == {("10.0.3.1", 8080)}

    await eventually(registered)


async def test_a_v1alpha1_binding_is_admitted_at_v1beta1_and_keeps_only_its_fields(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    """The webhooks list v1beta1 only (matchPolicy Equivalent): a v1alpha1 write reaches them
    converted, and their defaults come back converted to v1alpha1, which has no
    ipAddressType, vpcID or targetGroupProtocol (the CRD's `None` conversion, as upstream)."""
    shared = await cluster.target_group("shared", protocol="HTTPS", port=443)
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.3.1"])
    await cluster.start(on_setup=hooks.setup)
    await hooks.install()
    alpha = objects.target_group_binding("a", service="web", tg_name="shared", target_type=None,
                                         namespace="default")
    alpha["apiVersion"] = "elbv2.k8s.aws/v1alpha1"
    assert (await apply(hooks.kubectl, alpha)).returncode == 0
    spec = (await cluster.get(TARGETGROUPBINDINGS, "a"))["spec"]
    assert spec == {"serviceRef": {"name": "web", "port": 80}, "targetGroupName": "shared",
                    "targetGroupARN": shared, "targetType": "ip"}
    # Denied at v1alpha1 with the same words as at v1beta1.
    instances = await cluster.target_group("instances", target_type="instance")
    wrong = objects.target_group_binding("b", service="web", arn=instances, target_type="ip",
                                         namespace="default")
    wrong["apiVersion"] = "elbv2.k8s.aws/v1alpha1"
    result = await apply(hooks.kubectl, wrong)
    assert denial("vtargetgroupbinding.elbv2.k8s.aws", "targetType ip does not match target "
                  "group instances of type instance") in result.stderr


# ---- Ingresses and their class parameters -----------------------------------------------------

async def test_ingresses_and_class_parameters_are_checked_by_the_groups_build(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    await cluster.ingress_class()
    await cluster.backend("web")
    await cluster.start(on_setup=hooks.setup)
    bad = {A + "listen-ports": '[{"HTTP": 80}, {"QUIC": 443}]'}
    await cluster.ingress("early", bad, backend="web")
    text = await warning_event(cluster, "early", "FailedBuildModel")
    assert text.startswith("Ingress default/early: ")
    await hooks.install()

    late = objects.ingress("late", bad, paths=[objects.ingress_path("/", "web")])
    result = await apply(hooks.kubectl, late)
    assert denial("vingress.elbv2.k8s.aws", text.replace("default/early", "default/late")) \
        in result.stderr
    assert await cluster.find(INGRESSES, "late") is None
    # Another class's Ingress is none of our business.
    other = objects.ingress("nginx", bad, class_name="nginx")
    assert (await apply(hooks.kubectl, other)).returncode == 0
    # A backend that does not exist yet: admitted, with a warning kubectl prints.
    result = await apply(hooks.kubectl, objects.ingress(
        "soon", paths=[objects.ingress_path("/", "later")]))
    assert result.returncode == 0, result.stderr
    assert "Warning: Ingress default/soon: backend Service default/later not found" \
        in result.stderr

    result = await apply(hooks.kubectl, objects.class_params(
        "params", {"subnets": {"ids": ["subnet-1"], "tags": {"team": ["web"]}}}))
    assert denial("vingressclassparams.elbv2.k8s.aws", "IngressClassParams params: subnets: "
                  "give either ids or tags, not both") in result.stderr
    assert await cluster.find(INGRESSCLASSPARAMS, "params") is None
    failures = {(labels["webhook_name"], labels["error_category"]): sample.value
                for family in cluster.registry.collect()
                if family.name == "awslbc_webhook_validation_failure"
                for sample in family.samples if sample.name.endswith("_total")
                for labels in (sample.labels,)}
    # The reason of the reconciler's Event for the same mistake (FailedBuildModel, above).
    assert failures == {("/validate-networking-v1-ingress", "FailedBuildModel"): 1.0,
                        ("/validate-elbv2-k8s-aws-v1beta1-ingressclassparams",
                         "FailedBuildModel"): 1.0}


async def test_a_web_acl_name_is_looked_up_as_the_reconcile_will(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    await cluster.ingress_class()
    await cluster.backend("web")
    await cluster.start(on_setup=hooks.setup)
    await cluster.ingress("early", {A + "wafv2-acl-name": "shop-acl"}, backend="web")
    text = await warning_event(cluster, "early", "FailedDeployModel")
    assert text == "no REGIONAL WAFv2 web ACL is named 'shop-acl' in this account and region"
    await hooks.install()

    late = objects.ingress("late", {A + "wafv2-acl-name": "shop-acl"},
                           paths=[objects.ingress_path("/", "web")])
    result = await apply(hooks.kubectl, late)
    assert denial("vingress.elbv2.k8s.aws", text) in result.stderr
    assert await cluster.find(INGRESSES, "late") is None
    # A value of the wrong shape is denied with the build's text.
    result = await apply(hooks.kubectl, objects.ingress(
        "arn", {A + "wafv2-acl-arn": "arn:aws:iam::123456789012:role/x"},
        paths=[objects.ingress_path("/", "web")]))
    assert denial("vingress.elbv2.k8s.aws", "Ingress default/arn: annotation "
                  "alb.ingress.kubernetes.io/wafv2-acl-arn: ") in result.stderr
    # Once the web ACL exists (and the cached miss expired), both are served.
    await cluster.aws.call("wafv2", "CreateWebACL", Name="shop-acl", Scope="REGIONAL",
                           DefaultAction={"Allow": {}},
                           VisibilityConfig={"SampledRequestsEnabled": False,
                                             "CloudWatchMetricsEnabled": False,
                                             "MetricName": "shop-acl"})

    async def admitted() -> bool:
        return (await apply(hooks.kubectl, late)).returncode == 0
    await eventually(admitted, timeout=30, interval=1.0)


# ---- pods and Services ------------------------------------------------------------------------

def _pod(name: str, namespace: str, **labels: str) -> Obj:
    return objects.pod(name, namespace=namespace, labels={"app": "web", **labels})


async def _gates(cluster: Cluster, name: str, namespace: str) -> list[str]:
    pod = await cluster.client.get(PODS, name, namespace)
    return [g["conditionType"] for g in pod["spec"].get("readinessGates") or []]


async def test_new_pods_get_their_gates_and_load_balancers_our_class(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    arn = await cluster.target_group("web")
    instances = await cluster.target_group("nodes", target_type="instance")
    await cluster.label_namespace({"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"})
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    for namespace in ("default", "plain"):
        await cluster.client.create(SERVICES, objects.service(
            "web", namespace=namespace, selector={"app": "web"}, type_="NodePort"))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.binding("nodes", service="web", arn=instances, target_type="instance")
    await cluster.client.create(TARGETGROUPBINDINGS, objects.target_group_binding(
        "web", service="web", arn=arn, namespace="plain", multi_cluster=True))
    # The Service mutator: shipped in the configuration, on in the controller.
    await cluster.start(on_setup=lambda m: hooks.setup(m, service_mutator=True))
    await hooks.install(configs=configurations())

    assert (await apply(hooks.kubectl, _pod("web-1", "default"))).returncode == 0
    assert await _gates(cluster, "web-1", "default") == [target_health_condition("web")]
    # Not opted in; or the controller's own pods: never.
    assert (await apply(hooks.kubectl, _pod("web-1", "plain"))).returncode == 0
    assert await _gates(cluster, "web-1", "plain") == []
    own = _pod("controller", "default", **{"app.kubernetes.io/name": "aiolbc"})
    assert (await apply(hooks.kubectl, own)).returncode == 0
    assert await _gates(cluster, "controller", "default") == []

    lb = objects.service("lb", namespace="default", type_="LoadBalancer",
                         selector={"app": "lb"})
    classed = objects.service("classed", namespace="default", type_="LoadBalancer",
                              selector={"app": "lb"}, loadBalancerClass="example.com/other")
    plain = objects.service("plain", namespace="default", type_="ClusterIP",
                            selector={"app": "lb"})
    for svc in (lb, classed, plain):
        assert (await apply(hooks.kubectl, svc)).returncode == 0
    classes = {name: (await cluster.get(SERVICES, name))["spec"].get("loadBalancerClass")
               for name in ("lb", "classed", "plain")}
    assert classes == {"lb": "service.k8s.aws/nlb", "classed": "example.com/other",
                       "plain": None}


async def test_pods_of_a_namespace_not_served_get_no_gates(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    """No controller here would open the gate of a pod in a namespace it does not serve, nor
    in one let go, whose bindings the cache still holds."""
    arn = await cluster.target_group("web")
    inject = {"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled", "team": "web"}
    await cluster.label_namespace(inject)
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "other", "labels": inject}})
    for namespace in ("default", "other"):
        await cluster.client.create(SERVICES, objects.service(
            "web", namespace=namespace, selector={"app": "web"}, type_="NodePort"))
        await cluster.client.create(TARGETGROUPBINDINGS, objects.target_group_binding(
            "web", service="web", arn=arn, namespace=namespace, multi_cluster=True))
    manager = await cluster.start_app("--namespace-selector=team=web", on_setup=hooks.setup)
    await hooks.install()
    served = manager.served_namespaces()
    assert served is not None
    await cluster.client.patch(NAMESPACES, "other", {"metadata": {"labels": {"team": None}}})
    await eventually(lambda: asyncio.sleep(0, not served.serves("other")))

    assert (await apply(hooks.kubectl, _pod("web-1", "default"))).returncode == 0
    assert await _gates(cluster, "web-1", "default") == [target_health_condition("web")]
    assert (await apply(hooks.kubectl, _pod("web-1", "other"))).returncode == 0
    assert await _gates(cluster, "web-1", "other") == []


# ---- availability -----------------------------------------------------------------------------

async def test_an_unreachable_or_slow_webhook_fails_open(cluster: Cluster,
                                                        hooks: WebhookHarness) -> None:
    arn = await cluster.target_group("instances", target_type="instance")
    await cluster.service("web")
    await cluster.start(on_setup=hooks.setup)
    # With the shipped timeout: a loaded machine may take more than a second to answer, and a
    # timed-out call is admitted, which is the point of what follows, not of this first check.
    await hooks.install()
    bad = objects.target_group_binding("a", service="web", arn=arn, namespace="default")
    assert (await apply(hooks.kubectl, bad)).returncode == 1  # reachable: denied

    # A replica that accepts connections and never answers: each call times out (1 s).
    await hooks.install(configs=configurations(timeoutSeconds=1))
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    black_hole = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = black_hole.sockets[0].getsockname()[1]
    try:
        cluster.server.map_service(NAMESPACE, SERVICE, SERVICE_PORT, port)
        assert (await apply(hooks.kubectl, bad)).returncode == 0  # admitted, unchecked
    finally:
        black_hole.close()
    # Nobody listening at all: admitted too.
    cluster.server.map_service(NAMESPACE, SERVICE, SERVICE_PORT, port)
    other = objects.target_group_binding("b", service="web", arn=arn, namespace="default")
    assert (await apply(hooks.kubectl, other)).returncode == 0
    # The reconciler still reports what the webhook would have said.
    assert "does not match target group instances" in await warning_event(
        cluster, "b", "InvalidSpec")



async def test_authentication_settings_are_denied_and_warned_as_the_events_say(
        cluster: Cluster, hooks: WebhookHarness) -> None:
    await cluster.ingress_class()
    await cluster.backend("web")
    await cluster.start(on_setup=hooks.setup)
    bad = {A + "jwt-validation": '{"jwksEndpoint": "http://idp.example.com/jwks", '
                                 '"issuer": "https://idp.example.com"}'}
    await cluster.ingress("early", bad, backend="web")
    text = await warning_event(cluster, "early", "FailedBuildModel")
    assert "jwksEndpoint must be a full https:// URL" in text
    await hooks.install()

    late = objects.ingress("late", bad, paths=[objects.ingress_path("/", "web")])
    result = await apply(hooks.kubectl, late)
    assert denial("vingress.elbv2.k8s.aws", text.replace("default/early", "default/late")) \
        in result.stderr
    assert await cluster.find(INGRESSES, "late") is None
    # Valid, on HTTP and HTTPS listeners: admitted, and told that HTTP forwards without it.
    good = {A + "jwt-validation": '{"jwksEndpoint": "https://idp.example.com/jwks", '
                                  '"issuer": "https://idp.example.com"}',
            A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
            A + "certificate-arn": cluster.seed.certificate_arn}
    result = await apply(hooks.kubectl, objects.ingress(
        "both", good, paths=[objects.ingress_path("/", "web")]))
    assert result.returncode == 0, result.stderr
    assert ("Warning: Ingress default/both: authentication and JWT validation apply on HTTPS "
            "listeners only; HTTP port 80 forwards without them (set ssl-redirect)") \
        in result.stderr
