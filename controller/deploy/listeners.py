"""Listener convergence: protocol, default actions, certificates (default and SNI), SSL and
ALPN policy, mutual TLS, attributes, tags. Listeners are matched to the model by port (one
listener per port)."""

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
# AWS has no attributes for TLS listeners (upstream leaves them alone too).
_NO_ATTRIBUTES = ("TLS",)


@dataclass
class ObservedListeners:
    listeners: list[dict[str, Any]] = field(default_factory=list)
    rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by listener ARN

    def arns(self, *, tagged: bool = True) -> list[str]:
        """The listeners' and rules' ARNs, whose tags a deploy reads; none when the stack's
        listeners and rules are untagged (ListenerRulesTagging off)."""
        if not tagged:
            return []
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
    if listener.mutual_authentication is not None:
        params["MutualAuthentication"] = _mutual_authentication(listener)
    return params


def _mutual_authentication(listener: Listener) -> dict[str, Any]:
    mtls = listener.mutual_authentication
    assert mtls is not None
    if not mtls.trust_store_resolved:
        raise DeployError(f"listener on port {listener.port}: trust store {mtls.trust_store!r} "
                          "was not resolved")
    api: dict[str, Any] = {"Mode": mtls.mode}
    if mtls.mode == "verify":
        api["TrustStoreArn"] = mtls.trust_store
        api["IgnoreClientCertificateExpiry"] = bool(mtls.ignore_client_certificate_expiry)
        api["AdvertiseTrustStoreCaNames"] = mtls.advertise_trust_store_ca_names or "off"
    return api


def _mutual_authentication_differs(want: dict[str, Any], have: dict[str, Any] | None) -> bool:
    """Upstream's comparison: nothing configured is mode "off"; in mode "verify" the trust
    store and its two options count, not the association status of a shared trust store."""
    have = have or {}
    if want["Mode"] != (have.get("Mode") or "off"):
        return True
    if want["Mode"] != "verify":
        return False
    return bool(have.get("TrustStoreArn") != want["TrustStoreArn"]
                or bool(have.get("IgnoreClientCertificateExpiry"))
                != want["IgnoreClientCertificateExpiry"]
                or (have.get("AdvertiseTrustStoreCaNames") or "off")
                != want["AdvertiseTrustStoreCaNames"])


def _alpn(policy: list[str] | None) -> list[str]:
    # AWS answers no ALPN policy as [] or ["None"]: the same thing.
    return [] if not policy or policy == ["None"] else list(policy)


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
    if "MutualAuthentication" in params and _mutual_authentication_differs(
            params["MutualAuthentication"], current.get("MutualAuthentication")):
        return True
    return "AlpnPolicy" in params and _alpn(current.get("AlpnPolicy")) != _alpn(
        params["AlpnPolicy"])


async def converge_listener(run: DeployRun, resource_id: str, listener: Listener,
                            lb_arn: str, current: dict[str, Any] | None,
                            current_tags: dict[str, str]) -> str:
    params = _params(run, listener)
    desired_tags = run.desired_tags(resource_id, listener.tags)
    fresh = current is None
    if current is None:
        tagged: dict[str, Any] = (
            {"Tags": as_api_tags(desired_tags)} if run.tags_listeners else {})
        resp = await run.calls.call("CreateListener", LoadBalancerArn=lb_arn,
                                    **tagged, **params)
        current = resp["Listeners"][0]
        current_tags = desired_tags
    elif _differs(params, current) or run.must_write(listener.default_actions):
        await run.calls.call("ModifyListener", ListenerArn=current["ListenerArn"], **params)
    arn: str = current["ListenerArn"]
    if run.tags_listeners:
        await converge_tags(run.calls, run.tracking, arn, current_tags, desired_tags)
    if listener.protocol in _SECURE:
        await _converge_sni(run, arn, _certificates(run, listener), fresh=fresh)
    if listener.attributes and listener.protocol not in _NO_ATTRIBUTES:
        await _converge_attributes(run, arn, listener.attributes)
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


async def _converge_attributes(run: DeployRun, arn: str, wanted: dict[str, str]) -> None:
    """Only the attributes the model names, and only those that differ (upstream: an attribute
    no longer named keeps its value)."""
    resp = await run.calls.call("DescribeListenerAttributes", ListenerArn=arn)
    have = {a["Key"]: a.get("Value", "") for a in resp.get("Attributes", [])}
    changed = {k: v for k, v in wanted.items() if have.get(k) != v}
    if changed:
        await run.calls.call("ModifyListenerAttributes", ListenerArn=arn,
                             Attributes=[{"Key": k, "Value": v}
                                         for k, v in sorted(changed.items())])


async def delete_listener(run: DeployRun, arn: str) -> None:
    try:
        await run.calls.call("DeleteListener", ListenerArn=arn)
    except AWSError as exc:
        if not exc.is_not_found:
            raise
