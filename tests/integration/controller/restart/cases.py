"""The restart-correctness catalogue: for every input a model reads, a change made while the
controller is down, and what to look at to see that it reached AWS.

The inputs come from the code's own catalogues (the acted-on keys of the annotation catalogue,
`controller/apis/catalogue.py`, which tests hold to upstream's list; the IngressClassParams and
TargetGroupBinding spec models; the `aiolbc run` flags); `test_matrix.py` fails when one of
them has neither a case here nor an entry in `NOT_DEPLOYED` with the reason nothing of it
reaches AWS, and a case for an annotation the catalogue does not mark acted on is refused when
it is made (it would pass while proving nothing). Values were chosen to make
a difference AWS (moto) shows, from a base that converges on its own.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from controller.apis import (
    INGRESSCLASSPARAMS,
    LEGACY_CLASS_ANNOTATION,
    TARGETGROUPBINDINGS,
    USE_ANNOTATION,
)
from controller.apis.catalogue import Kind, entry_for
from runtime.resources import CONFIGMAPS, EVENTS, INGRESSES, SERVICES
from tests.integration.controller.restart.world import ALB, SVC, World
from tests.support.objects import backend_service, endpoint_ip, ingress_path

Step = Callable[[World, str], Awaitable[None]]
Observe = Callable[[World, str], Awaitable[Any]]
Ready = Callable[[World, str], Awaitable[bool]]

OIDC_SECRET = {"clientID": "client-one", "clientSecret": "secret-one"}
POLICY = "ELBSecurityPolicy-TLS-1-2-2017-01"


@dataclass(frozen=True)
class Case:
    """`covers`: the catalogue entries this case stands for. `setup` creates the objects of
    object `name` (a DNS label), `change` is what happens while the controller is down,
    `observe` what must differ once the change reached AWS, `ready` when the first run has
    converged (by default: the object's checkpoint is written)."""

    name: str
    covers: tuple[str, ...]
    setup: Step
    change: Step
    observe: Observe
    ready: Ready | None = None
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for key in self.covers:
            if key.startswith((SVC, ALB)) or key == LEGACY_CLASS_ANNOTATION:
                kind: Kind = "ingress" if key.startswith(ALB) or key == \
                    LEGACY_CLASS_ANNOTATION else "service"
                entry = entry_for(key, kind)
                if entry is None or not entry.acted_on:
                    raise ValueError(f"case {self.name}: {key} is not an annotation the "
                                     "catalogue marks acted on")


# ---- observation helpers ---------------------------------------------------------------------

def stacks(*ids: str) -> Observe:
    async def observe(world: World, name: str) -> Any:
        return await world.snapshot([i.format(name=name) for i in ids])
    return observe


def own_stack() -> Observe:
    return stacks("default/{name}")


async def warnings(world: World, name: str) -> list[str]:
    items = (await world.client.list(EVENTS, world.namespace)).get("items") or []
    return sorted({str(e.get("reason")) for e in items if e.get("type") == "Warning"
                   and (e.get("involvedObject") or {}).get("name") == name})


def checkpointed(res: Any) -> Ready:
    async def ready(world: World, name: str) -> bool:
        return bool(await world.checkpoint(res, name))
    return ready


# ---- Services (NLB) -------------------------------------------------------------------------

def service(key: str, value: str, base: dict[str, str] | None = None, *,
            target_type: str = "ip", ports: list[dict[str, Any]] | None = None,
            name: str | None = None) -> Case:
    slug = name or "s-" + key.removeprefix("aws-load-balancer-").replace(".", "-")[:40]

    async def setup(world: World, n: str) -> None:
        await world.nlb_service(n, world.fill(base or {}, n), target_type=target_type,
                                ports=ports)

    async def change(world: World, n: str) -> None:
        await world.annotate(SERVICES, n, {SVC + key: world.fill({"v": value}, n)["v"]})

    return Case(slug, (SVC + key,), setup, change, own_stack(), checkpointed(SERVICES))


TWO_PORTS = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
             {"name": "https", "port": 443, "targetPort": 8080, "protocol": "TCP"}]
TCP_AND_UDP = [{"name": "dns-tcp", "port": 53, "targetPort": 5353, "protocol": "TCP"},
               {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"}]


def service_cases() -> list[Case]:
    world_cert = "{cert}"
    cert = {"aws-load-balancer-ssl-cert": world_cert}
    http_hc = {"aws-load-balancer-healthcheck-protocol": "HTTP"}
    logs = {"aws-load-balancer-access-log-s3-bucket-name": "logs"}
    logs_on = {**logs, "aws-load-balancer-access-log-enabled": "true"}
    return [
        _observed(service("aws-load-balancer-minimum-load-balancer-capacity", "CapacityUnits=3000",
                          {"aws-load-balancer-minimum-load-balancer-capacity":
                           "CapacityUnits=2000"}, name="s-minimum-capacity"),
                  capacity_of("service")),
        service("aws-load-balancer-type", "nlb-ip", target_type="instance"),
        service("aws-load-balancer-nlb-target-type", "instance", name="s-target-type"),
        service("aws-load-balancer-scheme", "internet-facing"),
        service("aws-load-balancer-internal", "false"),
        service("aws-load-balancer-ip-address-type", "dualstack"),
        service("aws-load-balancer-subnets", "{public_subnets}"),
        # AWS cannot change a subnet's address in place: the change is reported, not applied.
        _observed(service("aws-load-balancer-eip-allocations", "{eip3},{eip2}",
                          {"aws-load-balancer-scheme": "internet-facing",
                           "aws-load-balancer-eip-allocations": "{eip1},{eip2}"}), warnings),
        _observed(service("aws-load-balancer-private-ipv4-addresses", "10.0.2.31,10.0.3.30",
                          {"aws-load-balancer-private-ipv4-addresses": "10.0.2.30,10.0.3.30"},
                          name="s-private-ipv4"), warnings),
        _observed(service("aws-load-balancer-ipv6-addresses", "{ipv6_a},{ipv6_b}",
                          {"aws-load-balancer-ip-address-type": "dualstack"},
                          name="s-ipv6-addresses"), warnings),
        service("aws-load-balancer-enable-prefix-for-ipv6-source-nat", "on",
                {"aws-load-balancer-ip-address-type": "dualstack"}, name="s-source-nat"),
        service("aws-load-balancer-source-nat-ipv6-prefixes", "auto_assigned,{nat_prefix_b}",
                {"aws-load-balancer-ip-address-type": "dualstack",
                 "aws-load-balancer-enable-prefix-for-ipv6-source-nat": "on",
                 "aws-load-balancer-source-nat-ipv6-prefixes": "auto_assigned,auto_assigned"},
                name="s-source-nat-prefixes"),
        service("aws-load-balancer-ssl-cert", world_cert),
        service("aws-load-balancer-ssl-ports", "443", cert, ports=TWO_PORTS),
        service("aws-load-balancer-ssl-negotiation-policy", POLICY, cert),
        service("aws-load-balancer-backend-protocol", "ssl", cert),
        service("aws-load-balancer-alpn-policy", "HTTP2Preferred", cert),
        service("aws-load-balancer-healthcheck-protocol", "HTTP"),
        service("aws-load-balancer-healthcheck-port", "8081"),
        service("aws-load-balancer-healthcheck-path", "/hz", http_hc),
        service("aws-load-balancer-healthcheck-healthy-threshold", "5"),
        service("aws-load-balancer-healthcheck-unhealthy-threshold", "5"),
        service("aws-load-balancer-healthcheck-timeout", "5"),
        service("aws-load-balancer-healthcheck-interval", "30"),
        service("aws-load-balancer-healthcheck-success-codes", "200-299", http_hc),
        service("aws-load-balancer-target-group-attributes",
                "deregistration_delay.timeout_seconds=30", name="s-tg-attributes"),
        dataclasses.replace(service("aws-load-balancer-target-group-attributes.80",
                                    "deregistration_delay.timeout_seconds=30",
                                    name="s-tg-attributes-port"),
                            covers=(SVC + "aws-load-balancer-target-group-attributes.*",)),
        service("aws-load-balancer-proxy-protocol-per-target-group", "80",
                name="s-proxy-protocol-per-tg"),
        service("aws-load-balancer-target-node-labels", "pool=a", target_type="instance"),
        service("aws-load-balancer-attributes", "load_balancing.cross_zone.enabled=true"),
        dataclasses.replace(service("aws-load-balancer-listener-attributes.TCP-80",
                                    "tcp.idle_timeout.seconds=120", name="s-listener-attributes"),
                            covers=(SVC + "aws-load-balancer-listener-attributes.*",)),
        service("aws-load-balancer-additional-resource-tags", "team=x", name="s-tags"),
        service("aws-load-balancer-proxy-protocol", "*"),
        service("aws-load-balancer-multi-cluster-target-group", "true", name="s-multi-cluster"),
        service("aws-load-balancer-access-log-enabled", "true", logs),
        service("aws-load-balancer-access-log-s3-bucket-name", "logs2", logs_on,
                name="s-access-log-bucket"),
        service("aws-load-balancer-access-log-s3-bucket-prefix", "p", logs_on,
                name="s-access-log-prefix"),
        service("aws-load-balancer-cross-zone-load-balancing-enabled", "true",
                name="s-cross-zone"),
        service("aws-load-balancer-security-groups", "{security_group}", name="s-sg"),
        service("aws-load-balancer-security-group-prefix-lists", "{prefix_list}",
                name="s-sg-prefix-lists"),
        # Upstream's key (not under aws-load-balancer-): admits only 10.0.0.0/8 once changed.
        service("load-balancer-source-ranges", "10.0.0.0/8"),
        service("aws-load-balancer-manage-backend-security-group-rules", "true",
                {"aws-load-balancer-security-groups": "{security_group}"},
                name="s-manage-backend-rules"),
        # AWS keeps an NLB's last security group: the change is reported, not applied.
        _observed(service("aws-load-balancer-disable-nlb-sg", "true"), warnings),
        service("aws-load-balancer-enable-icmp-for-path-mtu-discovery", "on",
                name="s-icmp"),
        service("aws-load-balancer-inbound-sg-rules-on-private-link-traffic", "off",
                name="s-private-link"),
        # Turned off, TCP and UDP on one port are refused and the NLB is left as it is: the
        # refusal's Warning shows the change was read.
        _observed(service("aws-load-balancer-enable-tcp-udp-listener", "false",
                          {"aws-load-balancer-enable-tcp-udp-listener": "true"},
                          ports=TCP_AND_UDP, name="s-tcp-udp"), warnings),
        _weighted_action_case(),
        _weighted_backend_case(),
        # UDP 443 becomes a QUIC listener and target group (its targets need server IDs).
        service("aws-load-balancer-quic-enabled-ports", "quic", ports=[
            {"name": "quic", "port": 443, "targetPort": 8443, "protocol": "UDP"}],
            name="s-quic"),
    ]


def _weighted_action_case() -> Case:
    """`actions.TCP-80`: the listener's forward weighted to a target group by ARN."""
    async def setup(world: World, n: str) -> None:
        await world.target_group(f"{n}-b", protocol="TCP", port=8080)
        await world.nlb_service(n, {})

    async def change(world: World, n: str) -> None:
        await world.annotate(SERVICES, n, {SVC + "actions.TCP-80": json.dumps({
            "type": "forward", "forwardConfig": {"baseServiceWeight": 10, "targetGroups": [
                {"targetGroupARN": world.values(n)["tg_b"], "weight": 20}]}})})

    return Case("s-weighted-action", (SVC + "actions.*",), setup, change, own_stack(),
                checkpointed(SERVICES))


def _weighted_backend_case() -> Case:
    """A backend Service a weighted action names by serviceName changes its target port."""
    async def setup(world: World, n: str) -> None:
        await world.create(SERVICES, backend_service(f"{n}-b", port=81, target_port=9090))
        await world.nlb_service(n, {"actions.TCP-80": json.dumps({
            "type": "forward", "forwardConfig": {"baseServiceWeight": 10, "targetGroups": [
                {"serviceName": f"{n}-b", "servicePort": 81, "weight": 20}]}})})

    async def change(world: World, n: str) -> None:
        await world.patch(SERVICES, f"{n}-b", {"spec": {"ports": [
            {"name": "http", "port": 81, "targetPort": 9191, "protocol": "TCP"}]}})

    return Case("s-weighted-backend", (SVC + "actions.*",), setup, change, own_stack(),
                checkpointed(SERVICES))


def _observed(case: Case, observe: Observe) -> Case:
    return Case(case.name, case.covers, case.setup, case.change, observe, case.ready)


async def _lb_arn(world: World, kind: str, name: str) -> str | None:
    lbs = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    tags = await world.aws.tags(lbs) if lbs else {}
    found = [a for a, t in tags.items() if t.get(f"{kind}.k8s.aws/stack") == f"default/{name}"]
    return str(found[0]) if found else None


async def ipam_pool_of(world: World, name: str) -> Any:
    """The case's ALB's IPAM pools (DescribeLoadBalancers)."""
    arn = await _lb_arn(world, "ingress", name)
    if arn is None:
        return None
    [lb] = (await world.aws.elbv2("DescribeLoadBalancers", LoadBalancerArns=[arn]))[
        "LoadBalancers"]
    return lb.get("IpamPools")


def capacity_of(kind: str) -> Observe:
    """The case's load balancer's capacity reservation (DescribeCapacityReservation): no stack
    snapshot shows it."""
    async def observe(world: World, name: str) -> Any:
        arn = await _lb_arn(world, kind, name)
        if arn is None:
            return None
        answer = await world.aws.elbv2("DescribeCapacityReservation", LoadBalancerArn=arn)
        return answer.get("MinimumLoadBalancerCapacity")
    return observe


# ---- Ingresses (ALB) ------------------------------------------------------------------------

def _ingress_setup(base: dict[str, str], *, backend_annotations: dict[str, str] | None = None,
                   class_name: str | None = "alb", raw: dict[str, str] | None = None,
                   with_secret: bool = False) -> Step:
    async def setup(world: World, n: str) -> None:
        await world.backend(f"{n}-be", backend_annotations)
        if with_secret:
            await world.secret(f"{n}-oidc", OIDC_SECRET)
        await world.ingress(n, {"target-type": "ip", **world.fill(base, n), **(raw or {})},
                            backend=f"{n}-be", class_name=class_name)
    return setup


def ingress(key: str, value: str, base: dict[str, str] | None = None, *,
            name: str | None = None, with_secret: bool = False,
            observe: Observe | None = None) -> Case:
    slug = name or "i-" + key.replace(".", "-")[:40]

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + key: world.fill({"v": value}, n)["v"]})

    return Case(slug, (ALB + key,), _ingress_setup(base or {}, with_secret=with_secret),
                change, observe or own_stack(), checkpointed(INGRESSES))


HTTPS = {"listen-ports": '[{"HTTPS": 443}]', "certificate-arn": "{cert}"}
HTTP_AND_HTTPS = {"listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]', "certificate-arn": "{cert}"}
OIDC_ON = {**HTTPS, "auth-type": "oidc", "auth-idp-oidc": "{oidc}"}
_POOL = "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abcDEF123"
COGNITO_ON = {**HTTPS, "auth-type": "cognito", "auth-idp-cognito": json.dumps(
    {"userPoolARN": _POOL, "userPoolClientID": "client1", "userPoolDomain": "shop-auth"})}
JWT_ON = {**HTTPS, "jwt-validation": json.dumps(
    {"jwksEndpoint": "https://idp.example.com/jwks", "issuer": "https://idp.example.com"})}


FRONTEND_NLB = {"enable-frontend-nlb": "true"}


def frontend_nlb_cases() -> list[Case]:
    """The frontend NLB turned on, and each of its keys changed with it on."""
    def case(key: str, value: str, short: str) -> Case:
        return ingress("frontend-nlb-" + key, value, FRONTEND_NLB, name="i-fnlb-" + short)

    return [
        ingress("enable-frontend-nlb", "true", name="i-fnlb-enable"),
        case("scheme", "internet-facing", "scheme"),
        case("subnets", "{public_subnets}", "subnets"),
        case("security-groups", "{security_group}", "sgs"),
        case("listener-port-mapping", "9000=80", "port-mapping"),
        case("healthcheck-port", "8081", "hc-port"),
        case("healthcheck-protocol", "HTTPS", "hc-protocol"),
        case("healthcheck-path", "/hz", "hc-path"),
        case("healthcheck-interval-seconds", "30", "hc-interval"),
        case("healthcheck-timeout-seconds", "10", "hc-timeout"),
        case("healthcheck-healthy-threshold-count", "5", "hc-healthy"),
        case("healthcheck-unhealthy-threshold-count", "5", "hc-unhealthy"),
        case("healthcheck-success-codes", "200-299", "hc-codes"),
        case("attributes", "load_balancing.cross_zone.enabled=true", "attributes"),
        case("tags", "team=x", "tags"),
        # AWS cannot change a subnet's Elastic IP in place: the change is reported, not applied.
        _observed(ingress("frontend-nlb-eip-allocations", "{eip6},{eip5}",
                          {**FRONTEND_NLB, "frontend-nlb-scheme": "internet-facing",
                           "frontend-nlb-eip-allocations": "{eip4},{eip5}"},
                          name="i-fnlb-eips"), warnings),
    ]


def _target_control_port_case() -> Case:
    """`target-control-port.<service>.<port>` set while down: the target group is replaced."""
    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + f"target-control-port.{n}-be.80": "9000"})

    return Case("i-target-control-port", (ALB + "target-control-port.*",),
                _ingress_setup({}), change, own_stack(), checkpointed(INGRESSES))


def _group_order_case() -> Case:
    async def setup(world: World, n: str) -> None:
        for member, order in ((n, "1"), (f"{n}-b", "2")):
            await world.backend(f"{member}-be")
            await world.ingress(member, {"target-type": "ip", "group.name": f"{n}-grp",
                                         "group.order": order}, backend=f"{member}-be",
                                host=f"{member}.example.com")

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + "group.order": "3"})

    return Case("i-group-order", (ALB + "group.order",), setup, change,
                stacks("{name}-grp"), checkpointed(INGRESSES))


def _actions_case() -> Case:
    def action(code: str) -> str:
        return json.dumps({"type": "fixed-response",
                           "fixedResponseConfig": {"statusCode": code}})

    async def setup(world: World, n: str) -> None:
        await world.ingress(n, {"actions.fixed": action("200")}, backend="fixed",
                            backend_port=USE_ANNOTATION)

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + "actions.fixed": action("503")})

    return Case("i-actions", (ALB + "actions.*",), setup, change, own_stack(),
                checkpointed(INGRESSES))


def _target_group_name_case() -> Case:
    """A forward by target group name (upstream's `targetGroupName`) moved to another name."""
    def action(name: str) -> str:
        return json.dumps({"type": "forward", "targetGroupName": name})

    async def setup(world: World, n: str) -> None:
        for tg in (f"{n}-a", f"{n}-b"):
            await world.target_group(tg, protocol="HTTP")
        await world.ingress(n, {"actions.named": action(f"{n}-a")}, backend="named",
                            backend_port=USE_ANNOTATION)

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + "actions.named": action(f"{n}-b")})

    return Case("i-target-group-name", (ALB + "actions.*",), setup, change, own_stack(),
                checkpointed(INGRESSES))


def _conditions_case() -> Case:
    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + f"conditions.{n}-be": json.dumps([
            {"field": "http-header",
             "httpHeaderConfig": {"httpHeaderName": "X-Team", "values": ["a"]}}])})

    return Case("i-conditions", (ALB + "conditions.*",), _ingress_setup({}), change,
                own_stack(), checkpointed(INGRESSES))


# Requested certificates (the matrix runs the Ingress cases with EnableCertificateManagement):
# issued by a Private CA, which moto (as ACM) issues at once, so no DNS validation is needed.
ACM_PCA = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/restart-1"
ACM_PCA2 = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/restart-2"
ACM_FLAGS = ("--feature-gates=EnableCertificateManagement=true",)


def _acm_case(key: str, value: str, base: dict[str, str]) -> Case:
    async def setup(world: World, n: str) -> None:
        host = f"{n}.acm.example.com"
        # A certificate discovery finds for the host until the Ingress asks for its own.
        await world.aws.call("acm", "RequestCertificate", DomainName=host,
                             CertificateAuthorityArn=ACM_PCA)
        await world.backend(f"{n}-be")
        await world.ingress(n, {"target-type": "ip", "listen-ports": '[{"HTTPS": 443}]',
                                **base}, backend=f"{n}-be", host=host)

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + key: value})

    return Case("i-" + key, (ALB + key,), setup, change, own_stack(), checkpointed(INGRESSES))


def _regex_path_case() -> Case:
    """An ImplementationSpecific path becomes a regular expression (upstream's leading `/`
    dropped)."""
    async def setup(world: World, n: str) -> None:
        await world.backend(f"{n}-be")
        await world.ingress(n, {"target-type": "ip"}, paths=[ingress_path(
            "/^/api/(.+)$", f"{n}-be", path_type="ImplementationSpecific")])

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + "use-regex-path-match": "true"})

    return Case("i-use-regex-path-match", (ALB + "use-regex-path-match",), setup, change,
                own_stack(), checkpointed(INGRESSES))


def _transforms_case() -> Case:
    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + f"transforms.{n}-be": json.dumps([
            {"type": "url-rewrite",
             "urlRewriteConfig": {"rewrites": [{"regex": "^/api/(.+)$", "replace": "/$1"}]}}])})

    return Case("i-transforms", (ALB + "transforms.*",), _ingress_setup({}), change,
                own_stack(), checkpointed(INGRESSES))


def _group_name_case() -> Case:
    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {ALB + "group.name": f"{n}-joined"})

    return Case("i-group-name", (ALB + "group.name",), _ingress_setup({}), change,
                stacks("default/{name}", "{name}-joined"), checkpointed(INGRESSES))


def _legacy_class_case() -> Case:
    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, n, {LEGACY_CLASS_ANNOTATION: "nginx"})

    return Case("i-legacy-class", (LEGACY_CLASS_ANNOTATION,),
                _ingress_setup({}, class_name=None, raw={LEGACY_CLASS_ANNOTATION: "alb"}),
                change, own_stack(), checkpointed(INGRESSES))


def _service_side_case() -> Case:
    """Target-group settings are read from the backend Service first."""
    async def change(world: World, n: str) -> None:
        await world.annotate(SERVICES, f"{n}-be", {ALB + "healthcheck-path": "/svc-hz"})

    return Case("i-service-annotation", ("backend Service annotations",),
                _ingress_setup({}), change, own_stack(), checkpointed(INGRESSES))


def _service_tags_case() -> Case:
    """A backend Service's `tags` reach its target groups (upstream)."""
    async def change(world: World, n: str) -> None:
        await world.annotate(SERVICES, f"{n}-be", {ALB + "tags": "team=svc"})

    return Case("i-service-tags", (ALB + "tags",), _ingress_setup({}), change, own_stack(),
                checkpointed(INGRESSES))


def ingress_cases() -> list[Case]:
    return [
        ingress("minimum-load-balancer-capacity", "CapacityUnits=300",
                {"minimum-load-balancer-capacity": "CapacityUnits=200"},
                observe=capacity_of("ingress")),
        ingress("ipam-ipv4-pool-id", "ipam-pool-0b2", {"ipam-ipv4-pool-id": "ipam-pool-0a1"},
                observe=ipam_pool_of),
        ingress("scheme", "internet-facing"),
        ingress("ip-address-type", "dualstack"),
        ingress("subnets", "{public_subnets}"),
        ingress("security-groups", "{security_group}"),
        ingress("inbound-cidrs", "10.0.0.0/8"),
        ingress("security-group-prefix-lists", "{prefix_list}", name="i-sg-prefix-lists"),
        ingress("manage-backend-security-group-rules", "true",
                {"security-groups": "{security_group}"}, name="i-manage-backend-rules"),
        ingress("load-balancer-attributes", "idle_timeout.timeout_seconds=120",
                name="i-lb-attributes"),
        ingress("ssl-redirect", "443", HTTP_AND_HTTPS),
        ingress("ssl-policy", POLICY, HTTPS),
        ingress("mutual-authentication", '[{"port": 443, "mode": "passthrough"}]', HTTPS,
                name="i-mutual-auth"),
        dataclasses.replace(ingress("listener-attributes.HTTPS-443",
                                    "routing.http.response.server.enabled=false", HTTPS,
                                    name="i-listener-attributes"),
                            covers=(ALB + "listener-attributes.*",)),
        ingress("listen-ports", '[{"HTTP": 8080}]'),
        ingress("certificate-arn", "{cert2}", HTTPS),
        ingress("tags", "team=x"),
        _actions_case(),
        _target_group_name_case(),
        _conditions_case(),
        _regex_path_case(),
        # A certificate requested instead of the discovered one.
        _acm_case("create-acm-cert", "true", {"acm-pca-arn": ACM_PCA}),
        # Another issuer: a new certificate replaces the first on the listener.
        _acm_case("acm-pca-arn", ACM_PCA2, {"create-acm-cert": "true",
                                            "acm-pca-arn": ACM_PCA}),
        _transforms_case(),
        _group_name_case(),
        _group_order_case(),
        ingress("target-type", "instance"),
        _target_control_port_case(),
        ingress("backend-protocol", "HTTPS"),
        ingress("backend-protocol-version", "HTTP2", name="i-protocol-version"),
        ingress("target-group-attributes", "deregistration_delay.timeout_seconds=30",
                name="i-tg-attributes"),
        ingress("healthcheck-port", "8081"),
        ingress("healthcheck-protocol", "HTTPS"),
        ingress("healthcheck-path", "/hz"),
        ingress("healthcheck-interval-seconds", "30", name="i-hc-interval"),
        ingress("healthcheck-timeout-seconds", "10", name="i-hc-timeout"),
        ingress("healthy-threshold-count", "5"),
        ingress("unhealthy-threshold-count", "5"),
        ingress("success-codes", "200-299"),
        ingress("multi-cluster-target-group", "true", name="i-multi-cluster"),
        ingress("target-node-labels", "pool=b", {"target-type": "instance"}),
        ingress("auth-type", "oidc", {**HTTPS, "auth-idp-oidc": "{oidc}"}, with_secret=True),
        ingress("auth-idp-oidc", "{oidc2}", OIDC_ON, with_secret=True),
        ingress("auth-scope", "openid email", OIDC_ON, with_secret=True),
        ingress("auth-session-cookie", "cookie2", OIDC_ON, with_secret=True),
        ingress("auth-session-timeout", "3600", OIDC_ON, with_secret=True),
        ingress("auth-on-unauthenticated-request", "deny", OIDC_ON, with_secret=True,
                name="i-auth-on-unauthenticated"),
        ingress("auth-idp-cognito", json.dumps(
            {"userPoolARN": _POOL, "userPoolClientID": "client2",
             "userPoolDomain": "auth.example.com"}), COGNITO_ON),
        ingress("jwt-validation", json.dumps(
            {"jwksEndpoint": "https://idp.example.com/jwks", "issuer": "https://idp.example.com",
             "additionalClaims": [{"name": "role", "format": "single-string",
                                   "values": ["admin"]}]}), JWT_ON),
        _legacy_class_case(),
        _service_side_case(),
        _service_tags_case(),
        *frontend_nlb_cases(),
    ]


# ---- IngressClassParams ---------------------------------------------------------------------

def params(field_name: str, value: Any, base: dict[str, Any] | None = None, *,
           annotations: dict[str, str] | None = None,
           observe: Observe | None = None) -> Case:
    slug = "p-" + field_name.lower()[:30]

    async def setup(world: World, n: str) -> None:
        await world.class_params(n, world.fill_obj(base or {}))
        await world.ingress_class(n, params=n)
        await world.backend(f"{n}-be")
        await world.ingress(n, {"target-type": "ip", **world.fill(annotations or {}, n)},
                            backend=f"{n}-be", class_name=n)

    async def change(world: World, n: str) -> None:
        await world.patch(INGRESSCLASSPARAMS, n, {"spec": {field_name: world.fill_obj(value)}})

    return Case(slug, ("params:" + field_name,), setup, change, observe or own_stack(),
                checkpointed(INGRESSES))


def _namespace_selector_case() -> Case:
    case = params("namespaceSelector", {"matchLabels": {"team": "b"}},
                  {"namespaceSelector": {"matchLabels": {"team": "a"}}}, observe=warnings)

    async def setup(world: World, n: str) -> None:
        await world.label_namespace({"team": "a"})
        await case.setup(world, n)

    return Case(case.name, case.covers, setup, case.change, case.observe, case.ready)


def params_cases() -> list[Case]:
    return [
        params("minimumLoadBalancerCapacity", {"capacityUnits": 300},
               {"minimumLoadBalancerCapacity": {"capacityUnits": 200}},
               observe=capacity_of("ingress")),
        params("ipamConfiguration", {"ipv4IPAMPoolId": "ipam-pool-0b2"},
               {"ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-0a1"}}, observe=ipam_pool_of),
        _namespace_selector_case(),
        params("group", {"name": "p-group-enforced"},
               observe=stacks("default/{name}", "p-group-enforced")),
        params("scheme", "internet-facing"),
        params("sslPolicy", POLICY, annotations=HTTPS),
        params("sslRedirectPort", "443", annotations=HTTP_AND_HTTPS),
        params("listeners", [{"protocol": "HTTPS", "port": 443, "listenerAttributes": [
            {"key": "routing.http.response.server.enabled", "value": "false"}]}],
            annotations=HTTPS),
        params("subnets", {"ids": "{public_subnet_list}"}),
        params("ipAddressType", "dualstack"),
        params("tags", [{"key": "team", "value": "x"}]),
        params("loadBalancerAttributes", [{"key": "idle_timeout.timeout_seconds",
                                           "value": "120"}]),
        params("certificateArn", ["{cert2}"], annotations=HTTPS),
        params("targetType", "instance"),
        params("inboundCIDRs", ["10.0.0.0/8"]),
        params("prefixListsIDs", ["{prefix_list}"]),
        _legacy_prefix_lists_case(),
    ]


def _legacy_prefix_lists_case() -> Case:
    """Upstream's legacy `PrefixListsIDs` spelling (its own name: the slugs of both spellings
    would be the same)."""
    case = params("PrefixListsIDs", ["{prefix_list}"])
    return dataclasses.replace(case, name="p-prefixlistsids-legacy")


# ---- TargetGroupBindings (user-made, on target groups the test creates) ----------------------

def binding(field_name: str, change_spec: dict[str, Any], *, target_group: str = "ip",
            base: dict[str, Any] | None = None, observe: Observe | None = None,
            two_ports: bool = False) -> Case:
    slug = "b-" + field_name.lower().replace(".", "-")[:30]

    async def setup(world: World, n: str) -> None:
        await world.nlb_service(f"{n}-svc", load_balancer_class="example.com/other",
                                ports=TWO_PORTS if two_ports else None,
                                endpoint_ips=("10.0.4.10",))
        await world.nlb_service(f"{n}-alt", load_balancer_class="example.com/other",
                                endpoint_ips=("10.0.4.20",))
        arn = await world.target_group(f"{n}-a", target_type=target_group)
        await world.target_group(f"{n}-b", target_type=target_group)
        await world.binding(n, service=f"{n}-svc", arn=arn, target_type=None,
                            extra=world.fill_obj(base or {}, n))

    async def change(world: World, n: str) -> None:
        await world.patch(TARGETGROUPBINDINGS, n, {"spec": world.fill_obj(change_spec, n)})

    async def targets(world: World, n: str) -> Any:
        return [sorted(await world.aws.registered(world.extra[f"tg:{n}-{x}"])) for x in "ab"]

    return Case(slug, ("tgb:" + field_name,), setup, change, observe or targets,
                checkpointed(TARGETGROUPBINDINGS))


async def _tracking_configmap(world: World, n: str) -> bool:
    return await world.find(CONFIGMAPS, f"aws-lbc-targets-{n}") is not None


def binding_cases() -> list[Case]:
    return [
        binding("targetGroupARN", {"targetGroupARN": "{tg_b}"}),
        binding("targetGroupName", {"targetGroupARN": None, "targetGroupName": "{tg_b_name}"}),
        binding("targetType", {"targetType": "instance"}, observe=warnings),
        binding("serviceRef.name", {"serviceRef": {"name": "{name}-alt", "port": 80}}),
        binding("serviceRef.port", {"serviceRef": {"name": "{name}-svc", "port": 443}},
                two_ports=True),
        binding("nodeSelector", {"nodeSelector": {"matchLabels": {"pool": "a"}}},
                target_group="instance", base={"targetType": "instance"}),
        # Refused (the target groups are IPv4): the change shows as a Warning, and the targets
        # stay where they are.
        binding("ipAddressType", {"ipAddressType": "ipv6"}, observe=warnings),
        binding("vpcID", {"vpcID": "vpc-0123456789abcdef0"}, observe=warnings),
        # Another account's role: the target group is looked for there (and not found).
        binding("iamRoleArnToAssume",
                {"iamRoleArnToAssume": "arn:aws:iam::111111111111:role/elsewhere"},
                observe=warnings),
        # A role of the controller's own account, registered as; an external id STS would
        # refuse (one character) then shows as a Warning, and the targets stay.
        binding("assumeRoleExternalId", {"assumeRoleExternalId": "x"},
                base={"iamRoleArnToAssume": "arn:aws:iam::123456789012:role/same-account",
                      "assumeRoleExternalId": "shared-secret"}, observe=warnings),
        binding("multiClusterTargetGroup", {"multiClusterTargetGroup": True},
                observe=_tracking_configmap),
        binding("networking", {"networking": {"ingress": [{
            "from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}], "ports": [{"port": 8080}]}]}},
            observe=_node_rules),
    ]


async def _node_rules(world: World, n: str) -> Any:
    return sorted(r for r in await world.aws.group_rules(world.seed.node_security_group_id)
                  if r[3] == "192.0.2.0/24")


# ---- other inputs: Secret data, Service ports, endpoints, membership, deletion --------------

def _rotate_secret() -> Case:
    async def change(world: World, n: str) -> None:
        await world.secret(f"{n}-oidc", {**OIDC_SECRET, "clientSecret": "secret-two"})

    return Case("o-secret-rotation", ("input:Secret data",),
                _ingress_setup(OIDC_ON, with_secret=True), change, own_stack(),
                checkpointed(INGRESSES))


def _backend_target_port() -> Case:
    async def change(world: World, n: str) -> None:
        svc = await world.find(SERVICES, f"{n}-be")
        assert svc is not None
        svc["spec"]["ports"][0]["targetPort"] = 9090
        await world.client.update(SERVICES, svc)
        await world.endpoints(f"{n}-be", [endpoint_ip(f"{n}-be")], ports=(("http", 9090),))

    return Case("o-backend-target-port", ("input:backend Service ports/targetPort",),
                _ingress_setup({}), change, own_stack(), checkpointed(INGRESSES))


def _nlb_port() -> Case:
    async def setup(world: World, n: str) -> None:
        await world.nlb_service(n)

    async def change(world: World, n: str) -> None:
        await world.patch(SERVICES, n, {"spec": {"ports": [
            {"name": "http", "port": 81, "targetPort": 8080, "protocol": "TCP"}]}})

    return Case("o-service-port", ("input:Service ports",), setup, change, own_stack(),
                checkpointed(SERVICES))


def _endpoints() -> Case:
    async def setup(world: World, n: str) -> None:
        await world.nlb_service(n)

    async def change(world: World, n: str) -> None:
        await world.endpoints(n, [endpoint_ip(n), "10.0.9.11"])  # one endpoint more

    return Case("o-endpoints", ("input:EndpointSlice endpoints",), setup, change,
                own_stack(), checkpointed(SERVICES))


def _group_leave() -> Case:
    async def setup(world: World, n: str) -> None:
        for member in (n, f"{n}-b"):
            await world.backend(f"{member}-be")
            await world.ingress(member, {"target-type": "ip", "group.name": f"{n}-grp"},
                                backend=f"{member}-be", host=f"{member}.example.com")

    async def change(world: World, n: str) -> None:
        await world.annotate(INGRESSES, f"{n}-b", {ALB + "group.name": None})

    return Case("o-group-leave", ("input:group membership",), setup, change,
                stacks("{name}-grp", "default/{name}-b"), checkpointed(INGRESSES))


def _deleted(kind: str) -> Case:
    async def setup(world: World, n: str) -> None:
        if kind == "service":
            await world.nlb_service(n)
        else:
            await _ingress_setup({})(world, n)

    async def change(world: World, n: str) -> None:
        await world.delete(SERVICES if kind == "service" else INGRESSES, n)

    return Case(f"o-deleted-{kind}", (f"input:deletion of a {kind}",), setup, change,
                own_stack(), checkpointed(SERVICES if kind == "service" else INGRESSES))


def _deleted_binding() -> Case:
    base = binding("deleted", {})

    async def change(world: World, n: str) -> None:
        await world.delete(TARGETGROUPBINDINGS, n)

    return Case("o-deleted-binding", ("input:deletion of a TargetGroupBinding",),
                base.setup, change, base.observe, base.ready)


def _deleted_managed_binding() -> Case:
    async def setup(world: World, n: str) -> None:
        await world.nlb_service(n)

    async def change(world: World, n: str) -> None:
        for item in (await world.client.list(TARGETGROUPBINDINGS, world.namespace))["items"]:
            labels = item["metadata"].get("labels") or {}
            if labels.get("service.k8s.aws/stack-name") == n:
                await world.delete(TARGETGROUPBINDINGS, item["metadata"]["name"])

    async def observe(world: World, n: str) -> Any:
        items = (await world.client.list(TARGETGROUPBINDINGS, world.namespace))["items"]
        return sorted(str(i["metadata"]["uid"]) for i in items
                      if (i["metadata"].get("labels") or {}).get(
                          "service.k8s.aws/stack-name") == n
                      and not i["metadata"].get("deletionTimestamp"))

    return Case("o-deleted-managed-binding", ("input:deletion of a managed binding",),
                setup, change, observe, checkpointed(SERVICES))


def other_cases() -> list[Case]:
    return [_rotate_secret(), _backend_target_port(), _nlb_port(), _endpoints(),
            _group_leave(), _deleted("service"), _deleted("ingress"), _deleted_binding(),
            _deleted_managed_binding()]


# ---- ALB addons: WAFv2 (moto), WAF Classic (the fault proxy's stand-in), Shield -------------

async def _lb_of(world: World, name: str) -> str:
    lbs = [lb["LoadBalancerArn"] for lb in await world.aws.load_balancers()]
    tags = await world.aws.tags(lbs) if lbs else {}
    found = [a for a, t in tags.items() if t.get("ingress.k8s.aws/stack") == f"default/{name}"]
    return str(found[0]) if found else ""


async def web_acls_of(world: World, name: str) -> Any:
    """The case's load balancer's WAFv2 web ACL, WAF Classic web ACL and Shield protection
    (WAF Classic asked of the fault proxy, which answers it)."""
    arn = await _lb_of(world, name)
    if not arn:
        return None
    wafv2 = await world.aws.call("wafv2", "GetWebACLForResource", ResourceArn=arn)
    classic = await world.pool.call("waf-regional", "GetWebACLForResource", ResourceArn=arn)
    try:
        shield = (await world.aws.call("shield", "DescribeProtection", ResourceArn=arn)
                  )["Protection"]["Name"]
    except Exception as exc:
        if "ResourceNotFound" not in str(exc):
            raise
        shield = None
    return ((wafv2.get("WebACL") or {}).get("ARN"),
            (classic.get("WebACLSummary") or {}).get("WebACLId"), shield)


async def make_web_acls(world: World) -> None:
    """`{web_acl}`, `{web_acl2}` (WAFv2, in moto, named `first` and `second`), `{waf_id}`,
    `{waf_id2}` (WAF Classic, through the fault proxy), and a Shield subscription."""
    if "web_acl" in world.extra:
        return
    for key, name in (("web_acl", "first"), ("web_acl2", "second")):
        world.extra[key] = str((await world.aws.call(
            "wafv2", "CreateWebACL", Name=name, Scope="REGIONAL", DefaultAction={"Allow": {}},
            VisibilityConfig={"SampledRequestsEnabled": False,
                              "CloudWatchMetricsEnabled": False, "MetricName": name}))[
            "Summary"]["ARN"])
    for key, name in (("waf_id", "first"), ("waf_id2", "second")):
        token = (await world.pool.call("waf-regional", "GetChangeToken"))["ChangeToken"]
        world.extra[key] = str((await world.pool.call(
            "waf-regional", "CreateWebACL", Name=name, MetricName=name,
            DefaultAction={"Type": "ALLOW"}, ChangeToken=token))["WebACL"]["WebACLId"])
    await world.aws.call("shield", "CreateSubscription")


def _addon(key: str, value: str, base: dict[str, str], name: str) -> Case:
    case = ingress(key, value, base, name=name, observe=web_acls_of)

    async def setup(world: World, n: str) -> None:
        await make_web_acls(world)
        await case.setup(world, n)

    return Case(case.name, case.covers, setup, case.change, case.observe, case.ready)


def _addon_params(field_name: str, value: str, base: dict[str, str]) -> Case:
    case = params(field_name, value, base, observe=web_acls_of)

    async def setup(world: World, n: str) -> None:
        await make_web_acls(world)
        await case.setup(world, n)

    return Case(case.name, case.covers, setup, case.change, case.observe, case.ready)


def addon_cases() -> list[Case]:
    """Run through the fault proxy (it answers WAF Classic)."""
    return [
        _addon("wafv2-acl-arn", "{web_acl2}", {"wafv2-acl-arn": "{web_acl}"}, "a-wafv2-arn"),
        _addon("wafv2-acl-name", "second", {"wafv2-acl-arn": "{web_acl}"}, "a-wafv2-name"),
        _addon("waf-acl-id", "{waf_id2}", {"waf-acl-id": "{waf_id}"}, "a-waf-acl-id"),
        _addon("web-acl-id", "none", {"web-acl-id": "{waf_id}"}, "a-web-acl-id"),
        _addon("shield-advanced-protection", "true", {}, "a-shield"),
        _addon_params("wafv2AclArn", "{web_acl2}", {"wafv2AclArn": "{web_acl}"}),
        _addon_params("wafv2AclName", "second", {"wafv2AclArn": "{web_acl}"}),
    ]


# Inputs the model reads whose changes, today, reach nothing in AWS: a change still gets NORMAL
# priority (it changes the checkpoint), but there is nothing to see.
_NAME_ONLY_AT_CREATION = ("used only to create a load balancer: an existing one keeps its own "
                          "name, as upstream's (identity is by tags); the takeover tests "
                          "restart with a changed name")
NOT_DEPLOYED: dict[str, str] = {
    SVC + "aws-load-balancer-name": _NAME_ONLY_AT_CREATION,
    ALB + "load-balancer-name": _NAME_ONLY_AT_CREATION,
    "params:loadBalancerName": _NAME_ONLY_AT_CREATION,
    ALB + "customer-owned-ipv4-pool": "given at creation only: AWS cannot change it in place, "
                                      "so a change is a Warning Event and the load balancer "
                                      "keeps its pool (the Ingress tests)",
    # The controller's own output (IngressPlanAnnotation), never read by the model.
    ALB + "dry-run-plan": "an output: the group's model written with the IngressPlanAnnotation "
                          "gate; nothing of it reaches AWS or the checkpoint",
}


# ---- aiolbc run flags ------------------------------------------------------------------------

# Flags that do not shape what is deployed, and why. A new flag must be added here or to the
# flag cases of `test_matrix.py`.
NON_MODEL_FLAGS: dict[str, str] = {
    "--kubeconfig": "which API server the controller talks to",
    "--watch-namespace": "which objects are seen at all; objects outside it keep their "
                         "resources, untouched",
    "--controller-id": "which of the cluster's controllers this is, chosen at install: a "
                       "controller under another id is another owner (its own rules, backend "
                       "group, bindings and classes), not a change of what one deploys; the "
                       "default id changes nothing deployed",
    "--namespace-selector": "which objects are seen at all; objects of a namespace that "
                            "stops matching keep their resources, untouched",
    "--ingress-group-namespaces": "which Ingresses are members of a group: what is deployed "
                                  "follows from the members (a change of policy is a change "
                                  "of membership, the o-group-leave case), and every policy "
                                  "admits the same members in the one namespace these "
                                  "cases use",
    "--aws-api-throttle": "how fast AWS is called, not what is deployed",
    "--aws-api-endpoints": "where AWS calls go (the region decides what is deployed where)",
    "--aws-endpoint-url": "where AWS calls go (the region decides what is deployed where)",
    "--aws-max-retries": "how AWS calls are retried",
    "--enable-leader-election": "which replica acts",
    "--leader-election-id": "which replica acts",
    "--leader-election-namespace": "which replica acts",
    "--leader-election-lease-duration": "which replica acts, and when",
    "--leader-election-renew-deadline": "which replica acts, and when",
    "--leader-election-retry-period": "which replica acts, and when",
    "--metrics-bind-addr": "what the process serves",
    "--health-probe-bind-addr": "what the process serves",
    "--metrics-secure": "how the process serves its metrics",
    "--metrics-cert-dir": "how the process serves its metrics",
    "--api-server-startup-timeout": "how long start-up waits for the API server",
    "--ingress-max-concurrent-reconciles": "how many reconciles run at once",
    "--service-max-concurrent-reconciles": "how many reconciles run at once",
    "--targetgroupbinding-max-concurrent-reconciles": "how many reconciles run at once",
    "--targetgroupbinding-max-exponential-backoff-delay": "how failed reconciles are retried",
    "--targetgroupbinding-requeue-duration": "how soon target health is read again while pods "
                                             "wait for their readiness gates",
    "--sync-period": ("how often unchanged objects are replayed (as LOW verifications), and so "
                      "how long a resync trusts a binding's last comparison and full look"),
    "--log-level": "what is logged",
    "--enable-checkpoints": "whether unchanged objects are told apart, not what is deployed",
    "--checkpoint-verify-qps": "the pace of verifications",
    "--checkpoint-verify-burst": "the pace of verifications",
    "--checkpoint-max-wait": "the pace of verifications",
    "--checkpoint-verify-aws-qps": "the AWS budget of verifications",
    "--checkpoint-verify-aws-burst": "the AWS budget of verifications",
    **{flag: "how admission webhooks are served, not what is deployed" for flag in (
        "--webhook-bind-port", "--webhook-cert-dir", "--webhook-cert-file",
        "--webhook-key-file", "--webhook-tls-mode", "--webhook-secret-name",
        "--webhook-service-name", "--webhook-configuration-name", "--webhook-bind-host")},
    "--enable-pod-readiness-gate-inject": "what new pods are given at admission; a pod's "
                                          "target is registered the same either way",
    "--enable-service-mutator-webhook": "what new Services are given at admission; a Service "
                                        "with a class deploys the same either way",
    "--disable-ingress-class-annotation": "what admission accepts, not what is deployed",
    "--disable-ingress-group-name-annotation": "what admission accepts, not what is deployed",
    "--required-secrets-label": "which Secrets can be read: a Secret read deploys the same "
                                "either way",
    "--kube-ca-pem-filepath": "how the API server is trusted",
    "--max-targets-per-target-group": "how many targets a binding registers (targets, not "
                                      "the load balancer stack; the target-limit tests)",
    "--enable-endpoint-slices": "only true is accepted",
    "--aws-vpc-tags": "finds the VPC at start when --aws-vpc-id is not given; the model reads "
                      "the VPC found, as it reads --aws-vpc-id's (the --aws-vpc-id flag case)",
    "--aws-vpc-tag-key": "deprecated, as upstream's: read by nothing",
    **{flag: "a capability not built yet, its feature gate pinned off" for flag in (
        "--gateway-class-max-concurrent-reconciles", "--alb-gateway-max-concurrent-reconciles",
        "--nlb-gateway-max-concurrent-reconciles",
        "--globalaccelerator-max-concurrent-reconciles",
        "--globalaccelerator-max-exponential-backoff-delay",
    )},
    "--lb-stabilization-monitor-interval": "when a load balancer still provisioning is looked "
                                           "at again, not what is deployed",
    "--quic-environment-variable-name": "which variable a QUIC pod's server ID is injected "
                                        "into and read from: targets' server IDs, not the "
                                        "load balancer stack",
}
