"""Listener convergence: protocol, default actions, certificates (default and SNI), SSL and
ALPN policy, tags. Listeners are matched to the model by port (one listener per port)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from controller.aws import AWSError
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError
from controller.deploy.listenerrules import list_rules
from controller.deploy.normalize import api_actions, normal_actions
from controller.deploy.tags import as_api_tags, converge_tags
from controller.model import LISTENER, CertificateDiscovery, Listener, Ref

_SECURE = ("HTTPS", "TLS")
_RULED = ("HTTP", "HTTPS")


@dataclass
class ObservedListeners:
    listeners: list[dict[str, Any]] = field(default_factory=list)
    rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by listener ARN

    def arns(self) -> list[str]:
        return [*(d["ListenerArn"] for d in self.listeners),
                *(r["RuleArn"] for rules in self.rules.values() for r in rules)]


async def observe_listeners(run: DeployRun, lb_arn: str | None) -> ObservedListeners:
    if lb_arn is None:
        return ObservedListeners()
    found: list[dict[str, Any]] = []
    async for page in run.calls.paginate("DescribeListeners", LoadBalancerArn=lb_arn):
        found.extend(page.get("Listeners", []))
    # Only ALB listeners (HTTP, HTTPS) take rules besides their default action, which
    # DescribeListeners returns: an NLB listener's rules are not asked for, one call less per
    # listener of every Service stack.
    with_rules = [d for d in found if d.get("Protocol") in _RULED]
    rules = await asyncio.gather(*(list_rules(run, d["ListenerArn"]) for d in with_rules))
    return ObservedListeners(found, {d["ListenerArn"]: r
                                     for d, r in zip(with_rules, rules, strict=True)})


def _certificates(run: DeployRun, listener: Listener) -> tuple[str, ...]:
    """The listener's certificate ARNs, the stack's own (imported) ones' `$ref`s resolved."""
    if isinstance(listener.certificates, CertificateDiscovery):
        raise DeployError(f"listener on port {listener.port}: certificates were not resolved")
    arns: list[str] = []
    for cert in listener.certificates:
        arn = run.resolve(cert) if isinstance(cert, Ref) else cert
        if arn not in arns:
            arns.append(arn)
    return tuple(arns)


def _params(run: DeployRun, listener: Listener) -> dict[str, Any]:
    params: dict[str, Any] = {
        "Protocol": listener.protocol, "Port": listener.port,
        "DefaultActions": api_actions(listener.default_actions, run.resolve),
    }
    certs = _certificates(run, listener)
    if listener.protocol in _SECURE:
        if not certs:
            raise DeployError(f"{listener.protocol} listener on port {listener.port} "
                              "needs a certificate")
        params["Certificates"] = [{"CertificateArn": certs[0]}]
        if listener.ssl_policy is not None:
            params["SslPolicy"] = listener.ssl_policy
    if listener.alpn_policy is not None and listener.protocol == "TLS":
        params["AlpnPolicy"] = [listener.alpn_policy]
    return params


def _differs(params: dict[str, Any], current: dict[str, Any]) -> bool:
    if current.get("Protocol") != params["Protocol"]:
        return True
    if normal_actions(current.get("DefaultActions", [])) != normal_actions(
            params["DefaultActions"]):
        return True
    if "Certificates" in params:
        have = [c.get("CertificateArn") for c in current.get("Certificates") or []]
        if have[:1] != [params["Certificates"][0]["CertificateArn"]]:
            return True
    if "SslPolicy" in params and current.get("SslPolicy") != params["SslPolicy"]:
        return True
    return "AlpnPolicy" in params and (current.get("AlpnPolicy") or []) != params["AlpnPolicy"]


async def converge_listener(run: DeployRun, resource_id: str, listener: Listener,
                            lb_arn: str, current: dict[str, Any] | None,
                            current_tags: dict[str, str]) -> str:
    params = _params(run, listener)
    desired_tags = run.desired_tags(resource_id, listener.tags)
    fresh = current is None
    if current is None:
        resp = await run.calls.call("CreateListener", LoadBalancerArn=lb_arn,
                                    Tags=as_api_tags(desired_tags), **params)
        current = resp["Listeners"][0]
        current_tags = desired_tags
    elif _differs(params, current) or run.must_write(listener.default_actions):
        await run.calls.call("ModifyListener", ListenerArn=current["ListenerArn"], **params)
    arn: str = current["ListenerArn"]
    await converge_tags(run.calls, run.tracking, arn, current_tags, desired_tags)
    if listener.protocol in _SECURE:
        await _converge_sni(run, arn, _certificates(run, listener), fresh=fresh)
    run.set_status(LISTENER, resource_id, "listenerARN", arn)
    return arn


async def _converge_sni(run: DeployRun, arn: str, certs: tuple[str, ...], *,
                        fresh: bool) -> None:
    want = set(certs[1:])
    have: set[str] = set()
    if not fresh:
        async for page in run.calls.paginate("DescribeListenerCertificates", ListenerArn=arn):
            have |= {c["CertificateArn"] for c in page.get("Certificates", [])
                     if not c.get("IsDefault")}
    have.discard(certs[0])
    if want - have:
        await run.calls.call("AddListenerCertificates", ListenerArn=arn,
                             Certificates=[{"CertificateArn": c} for c in sorted(want - have)])
    if have - want:
        await run.calls.call("RemoveListenerCertificates", ListenerArn=arn,
                             Certificates=[{"CertificateArn": c} for c in sorted(have - want)])


async def delete_listener(run: DeployRun, arn: str) -> None:
    try:
        await run.calls.call("DeleteListener", ListenerArn=arn)
    except AWSError as exc:
        if not exc.is_not_found:
            raise
