"""Certificates requested from ACM for a stack (`RequestedCertificate`), as upstream's
certificate manager (`pkg/deploy/acm/certificate_manager.go`) requests, validates and deletes
them.

- Request: every name's Route53 public hosted zone is found first (the zone whose name is the
  longest suffix of the name, as upstream's `GetHostedZoneID`), so no certificate is left
  pending that could never validate; then RequestCertificate with the tracking tags and an
  idempotency token derived from the resource's identity (a crash between the request and
  remembering its ARN does not request a second one within ACM's hour).
- Validation (public certificates only; a Private CA issues at once): the CNAME records ACM
  names in `DomainValidationOptions` are created in those zones (TTL 60, as upstream; a record
  that already exists, from another certificate of the same name, is left as it is).
- A listener uses the certificate only once ACM says ISSUED: until then the deploy stops
  before the listeners with a message saying so, and is retried.
- Delete: the validation records upstream created (but those another certificate of the
  controller still relies on), then the certificate.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from controller.aws import AWSError, Caller
from controller.deploy.errors import DeployError
from controller.model import RequestedCertificate

VALIDATION_TTL: Final = 60
_ISSUED = "ISSUED"
_PENDING = "PENDING_VALIDATION"


class CertificatePending(DeployError):
    """The certificate is not issued yet: the listeners wait for it (retried)."""


def idempotency_token(cluster: str, stack: str, rid: str) -> str:
    # ACM: \w+, at most 32 characters.
    return hashlib.sha256(f"{cluster}\n{stack}\n{rid}".encode()).hexdigest()[:32]


async def public_zones(calls: Caller) -> list[tuple[str, str]]:
    """(name without the trailing dot, id) of every public hosted zone of the account."""
    zones: list[tuple[str, str]] = []
    async for page in calls.paginate("ListHostedZones", service="route53"):
        for zone in page.get("HostedZones") or []:
            if (zone.get("Config") or {}).get("PrivateZone"):
                continue
            zones.append((str(zone.get("Name", "")).rstrip(".").lower(), str(zone["Id"])))
    return zones


def zone_of(name: str, zones: list[tuple[str, str]]) -> str | None:
    """The zone whose name is the longest suffix (in labels) of `name` (upstream's rule)."""
    labels = name.rstrip(".").lower().split(".")
    best: tuple[int, str] | None = None
    for zone_name, zone_id in zones:
        zone_labels = zone_name.split(".")
        if len(zone_labels) > len(labels) or labels[len(labels) - len(zone_labels):] != zone_labels:
            continue
        if best is None or len(zone_labels) > best[0]:
            best = (len(zone_labels), zone_id)
    return None if best is None else best[1]


async def check_zones(calls: Caller, cert: RequestedCertificate) -> dict[str, str]:
    """Every name's zone id; DeployError naming the first name without one."""
    if cert.private:
        return {}
    zones = await public_zones(calls)
    found: dict[str, str] = {}
    for name in (cert.domain_name, *cert.subject_alternative_names):
        zone = zone_of(name.removeprefix("*."), zones)
        if zone is None:
            raise DeployError(f"no Route53 public hosted zone for {name!r}: the certificate "
                              "requested for it could not be validated through DNS")
        found[name] = zone
    return found


async def request(calls: Caller, cert: RequestedCertificate, *, token: str,
                  tags: list[dict[str, str]]) -> str:
    params: dict[str, Any] = {"DomainName": cert.domain_name,
                              "SubjectAlternativeNames": list(cert.subject_alternative_names),
                              "IdempotencyToken": token, "Tags": tags}
    if cert.private:
        params["CertificateAuthorityArn"] = cert.certificate_authority_arn
    else:
        params["ValidationMethod"] = "DNS"
    try:
        resp = await calls.call("RequestCertificate", service="acm", **params)
    except AWSError as exc:
        if exc.code == "LimitExceededException":
            raise DeployError(f"ACM refused the certificate for {cert.domain_name!r}: too many "
                              f"names ({exc.message})") from None
        raise
    return str(resp["CertificateArn"])


async def ensure_issued(calls: Caller, arn: str, cert: RequestedCertificate) -> None:
    """Return once ACM says ISSUED; meanwhile create the validation records (public) and raise
    CertificatePending."""
    desc = (await calls.call("DescribeCertificate", service="acm",
                             CertificateArn=arn)).get("Certificate") or {}
    status = str(desc.get("Status", ""))
    if status == _ISSUED:
        return
    if status != _PENDING:
        raise DeployError(f"certificate {arn} for {cert.domain_name!r} is {status}; it cannot "
                          "be served")
    if not cert.private:
        records = await _validation_records(desc)
        if records is None:
            raise CertificatePending(f"certificate {arn} for {cert.domain_name!r} is pending: "
                                     "ACM has not named its DNS validation records yet")
        zones = await check_zones(calls, cert)
        for domain, record in records:
            zone = zones.get(domain) or zone_of(domain.removeprefix("*."),
                                                await public_zones(calls))
            if zone is None:
                raise DeployError(f"no Route53 public hosted zone for {domain!r}")
            await _change(calls, zone, "CREATE", record)
    raise CertificatePending(f"certificate {arn} for {cert.domain_name!r} is pending "
                             "validation; the HTTPS listener uses it once ACM has issued it")


async def _validation_records(desc: dict[str, Any]
                              ) -> list[tuple[str, dict[str, Any]]] | None:
    options = desc.get("DomainValidationOptions") or []
    if not options:
        return None
    found: list[tuple[str, dict[str, Any]]] = []
    for opt in options:
        if opt.get("ValidationMethod") != "DNS":
            continue
        record = opt.get("ResourceRecord")
        if not record:
            return None
        found.append((str(opt.get("DomainName", "")), record))
    return found


async def _change(calls: Caller, zone: str, action: str, record: dict[str, Any]) -> None:
    try:
        await calls.call("ChangeResourceRecordSets", service="route53", HostedZoneId=zone,
                         ChangeBatch={"Changes": [{"Action": action, "ResourceRecordSet": {
                             "Name": record["Name"], "Type": record["Type"],
                             "TTL": VALIDATION_TTL,
                             "ResourceRecords": [{"Value": record["Value"]}]}}]})
    except AWSError as exc:
        text = exc.message.lower()
        # CREATE: another certificate of the same name made it (upstream ignores that too).
        # DELETE: gone already, or now someone else's value.
        if exc.code == "InvalidChangeBatch" and (
                "exist" in text or "not found" in text or "do not match" in text):
            return
        raise


async def _describe(calls: Caller, arn: str) -> dict[str, Any] | None:
    try:
        desc = (await calls.call("DescribeCertificate", service="acm",
                                 CertificateArn=arn)).get("Certificate") or {}
    except AWSError as exc:
        if exc.code == "ResourceNotFoundException":
            return None
        raise
    return dict(desc)


async def record_names(calls: Caller, arns: list[str]) -> set[str]:
    """The validation record names the public certificates `arns` rely on."""
    names: set[str] = set()
    for arn in arns:
        desc = await _describe(calls, arn)
        if desc is None or desc.get("Type") != "AMAZON_ISSUED":
            continue
        for _, record in await _validation_records(desc) or []:
            names.add(str(record["Name"]).lower())
    return names


async def delete_validation_records(calls: Caller, arn: str, *,
                                    keep: frozenset[str] = frozenset()) -> None:
    """Upstream's DeleteWithValidationRecords, before the certificate goes; better than
    upstream, a record another of the controller's certificates still relies on (ACM names
    the same record for the same name in one account) is kept: `keep`."""
    desc = await _describe(calls, arn)
    if desc is None or desc.get("Type") != "AMAZON_ISSUED":
        return
    records = [(d, r) for d, r in await _validation_records(desc) or []
               if str(r["Name"]).lower() not in keep]
    zones = await public_zones(calls) if records else []
    for domain, record in records:
        zone = zone_of(domain.removeprefix("*."), zones)
        if zone is not None:
            await _change(calls, zone, "DELETE", record)


__all__ = ["VALIDATION_TTL", "CertificatePending", "check_zones", "delete_validation_records",
           "ensure_issued", "idempotency_token", "public_zones", "record_names", "request",
           "zone_of"]
