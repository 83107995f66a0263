"""`aiolbc check`: a read-only scan of a live cluster (list and get only) before switching from
upstream's controller, reported object by object (`report.py`), with the exit code an operator's
script reads: 0 go, 1 something would not be honoured or would change, 2 could not check."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Final

from controller import app
from controller.apis import INGRESSCLASSPARAMS, TARGETGROUPBINDINGS
from controller.config import ControllerConfig
from controller.ingress import Settings as IngressSettings
from controller.networking.policy import NetworkingPolicy
from controller.preflight import objects, upstream
from controller.preflight.report import EXIT_CANNOT_CHECK, Finding, Report
from controller.service import Settings as ServiceSettings
from runtime.client import ApiServerUnavailable, KubeClient
from runtime.errors import ApiError
from runtime.kubeconfig import KubeConfigError
from runtime.objects import Obj
from runtime.resources import INGRESSCLASSES, INGRESSES, NAMESPACES, SERVICES, Resource

GATEWAYS: Final = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
GATEWAYCLASSES: Final = Resource("gateway.networking.k8s.io", "v1", "gatewayclasses",
                                 "GatewayClass", namespaced=False)
PAGE: Final = 500
# What the pure stage is built with when upstream's flags name no region or VPC (upstream found
# them in the instance metadata): the model needs some, and what the report says does not
# depend on them, since no AWS call is made.
PLACEHOLDER_REGION: Final = "us-east-1"
PLACEHOLDER_VPC: Final = "vpc-00000000000000000"
TIMEOUT: Final = 30.0


class CannotCheck(Exception):
    """The scan could not read what it needs: one line, exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    parser.add_argument("--context", default=None, help="the kubeconfig context to use")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text",
                        help="the report as text (default) or as JSON")
    parser.add_argument("--upstream-deployment", default=None, metavar="NAMESPACE/NAME",
                        help="upstream's controller Deployment, whose flags are compared "
                        f"(default: {upstream.DEFAULT_DEPLOYMENT}, if it exists)")


def scope_of(config: ControllerConfig) -> objects.Scope:
    """The settings `aiolbc run` would serve with (no AWS: an unknown region or VPC is a
    placeholder)."""
    cluster = dataclasses.replace(
        app.cluster_scope(config, region=config.aws.region or PLACEHOLDER_REGION),
        vpc_id=config.aws.vpc_id or PLACEHOLDER_VPC)
    ingress = IngressSettings(cluster=cluster, config=config.ingress, defaults=config.defaults,
                              backend_sg=config.networking, gates=config.gates)
    service = ServiceSettings(cluster=cluster, config=config.service, defaults=config.defaults,
                              backend_sg=config.networking, gates=config.gates)
    return objects.Scope(
        ingress=ingress.builder(), group_namespaces=config.ingress.group_namespaces,
        service=service.model,
        networking=NetworkingPolicy(
            cluster=cluster.name, vpc_id=cluster.vpc_id,
            unrestricted_namespaces=config.targetgroupbinding.networking_unrestricted_namespaces,
            backend_group_id=config.networking.group_id,
            every_port=not config.networking.restricted_rules))


class _Scan:
    def __init__(self, client: KubeClient, *, progress: Callable[[str], None]) -> None:
        self._client = client
        self._progress = progress

    async def list(self, res: Resource, namespace: str | None = None, *,
                   optional: bool = False) -> list[Obj]:
        """Every object, page by page; a CRD not installed is no objects when `optional`."""
        items: list[Obj] = []
        token: str | None = None
        while True:
            try:
                body = await self._client.list(res, namespace, limit=PAGE, continue_=token,
                                               timeout=TIMEOUT)
            except ApiError as exc:
                if optional and exc.code == 404:
                    return []
                raise CannotCheck(f"cannot list {res.plural}: {exc}") from None
            items.extend(i for i in body.get("items") or () if isinstance(i, dict))
            token = (body.get("metadata") or {}).get("continue") or None
            self._progress(f"listed {len(items)} {res.plural}")
            if not token:
                return items

    async def deployment(self, wanted: str | None) -> Obj | None:
        ref = wanted or upstream.DEFAULT_DEPLOYMENT
        namespace, sep, name = ref.partition("/")
        if not sep or not namespace or not name:
            raise CannotCheck(f"--upstream-deployment {ref!r}: expected NAMESPACE/NAME")
        try:
            return await self._client.get(upstream.DEPLOYMENTS, name, namespace,
                                          timeout=TIMEOUT)
        except ApiError as exc:
            if exc.code == 404 and wanted is None:
                return None
            raise CannotCheck(f"cannot read Deployment {ref}: {exc}") from None


async def scan(client: KubeClient, *, deployment: str | None,
               progress: Callable[[str], None]) -> Report:
    """Raises CannotCheck."""
    reader = _Scan(client, progress=progress)
    found: list[Finding] = []
    dep = await reader.deployment(deployment)
    if dep is None:
        texts: dict[str, str] = {}
        found.append(Finding("Deployment", upstream.DEFAULT_DEPLOYMENT, "note", "",
                             "not found: no upstream flags compared, aiolbc's defaults "
                             "decide what is served (name it with --upstream-deployment)"))
    else:
        flags_found = upstream.read_flags(dep)
        texts = dict(flags_found.texts)
        found.extend(flags_found.findings)
    config, problem = upstream.config_of(texts)
    if problem is not None and dep is not None:
        found.append(Finding("Deployment", f"{dep['metadata'].get('namespace')}/"
                             f"{dep['metadata'].get('name')}", "not-honoured", "",
                             f"refused together: {problem}; the scan uses aiolbc's defaults"))
    scope = scope_of(config)
    # Upstream's --watch-namespace names one namespace (list that one); several: every
    # namespace's objects are listed and those of others dropped.
    watched = config.runtime.watch_namespace
    ns = next(iter(watched)) if len(watched) == 1 else None
    ingresses = _within(watched, await reader.list(INGRESSES, ns))
    services = _within(watched, await reader.list(SERVICES, ns))
    classes = await reader.list(INGRESSCLASSES)
    params = await reader.list(INGRESSCLASSPARAMS, optional=True)
    namespaces = await reader.list(NAMESPACES)
    bindings = _within(watched, await reader.list(TARGETGROUPBINDINGS, ns, optional=True))
    gateway_classes = await reader.list(GATEWAYCLASSES, optional=True)
    gateways = (_within(watched, await reader.list(GATEWAYS, ns, optional=True))
                if gateway_classes else [])
    caches, unread = objects.ingress_caches(ingresses, services, classes, params, namespaces)
    found.extend(unread)
    progress(f"checking {len(ingresses)} ingresses")
    found.extend(objects.ingresses(caches, scope))
    found.extend(objects.class_params(params))
    progress(f"checking {len(services)} services")
    found.extend(objects.services(services, scope))
    progress(f"checking {len(bindings)} targetgroupbindings")
    found.extend(objects.bindings(bindings, scope))
    found.extend(objects.gateways(gateways, gateway_classes))
    return Report.of(found)


def _within(watched: frozenset[str], items: list[Obj]) -> list[Obj]:
    if not watched:
        return items
    return [i for i in items if isinstance(i.get("metadata"), dict)
            and i["metadata"].get("namespace") in watched]


def _stderr(message: str) -> None:
    print(f"aiolbc check: {message}", file=sys.stderr, flush=True)


async def run(args: argparse.Namespace) -> int:
    """The report on stdout, progress and a failure's one line on stderr."""
    try:
        client = await KubeClient.load(args.kubeconfig, context=args.context)
    except KubeConfigError as exc:
        _stderr(str(exc))
        return EXIT_CANNOT_CHECK
    try:
        async with client:
            report = await scan(client, deployment=args.upstream_deployment,
                                progress=_stderr)
    except (CannotCheck, ApiServerUnavailable) as exc:
        _stderr(str(exc))
        return EXIT_CANNOT_CHECK
    except OSError as exc:
        _stderr(f"cannot reach the API server: {exc}")
        return EXIT_CANNOT_CHECK
    print(report.as_json() if args.output == "json" else report.as_text())
    return report.exit_code




__all__ = ["CannotCheck", "add_arguments", "run", "scan", "scope_of"]
