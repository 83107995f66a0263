"""A stack's own ACM certificates (imported from Kubernetes TLS Secrets) in a deploy.

Order (a listener never points at a certificate that is not there, and no certificate goes
while a listener still serves it):
1. before the listeners converge (`converge`): each certificate of the model is found by its
   tracking tags (`elbv2.k8s.aws/cluster`, `<kind>.k8s.aws/stack`, `<kind>.k8s.aws/resource`)
   or imported with them (ImportCertificate with its chain, tags in the same call); one whose
   version tag (`elbv2.k8s.aws/certificate-version`, the digest of the public certificate and
   chain) differs from the model's is re-imported under the same ARN (ImportCertificate with
   `CertificateArn`, which keeps the ARN, its tags and its listeners), then the tag is moved;
2. after the listeners converged (`finish`): certificates of the stack the model no longer has
   are deleted. ACM refuses to delete a certificate a load balancer still uses
   (`ResourceInUseException`); that is left to the next deploy.
Deleting a stack deletes its certificates after its load balancer.

Only certificates carrying this cluster's and this stack's tags are ever re-imported or deleted:
a certificate the controller did not import is never touched. ACM cannot be asked for
certificates by tag, so the ARNs each stack owns are remembered, and learnt once per process by
listing the region's imported certificates and reading their tags (`ensure_scanned`), before the
first deploy or deletion that could find one.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.aws import AWSError, Caller, tag_dict
from controller.deploy import acmrequests
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError
from controller.deploy.ownedarns import StackKey
from controller.deploy.tags import CLUSTER_TAG, Tracking, as_api_tags, resource_tag, stack_tag
from controller.model import CERTIFICATE, ImportedCertificate, RequestedCertificate

VERSION_TAG = "elbv2.k8s.aws/certificate-version"
SECRET_TAG = "elbv2.k8s.aws/secret"
# On certificates requested for an Ingress: its namespace_name (ACM tag values refuse none of
# that); discovery skips certificates carrying it, as it skips those imported from Secrets.
REQUESTED_TAG = "elbv2.k8s.aws/ingress"
_NOT_FOUND = "ResourceNotFoundException"
_IN_USE = "ResourceInUseException"


class StackCertificates:
    def __init__(self, *, cluster: str) -> None:
        self._cluster = cluster
        # stack → resource id → ARN, for certificates tagged as the stack's.
        self._known: dict[StackKey, dict[str, str]] = {}
        self._scanned = False

    def owned(self, key: StackKey) -> dict[str, str]:
        return dict(self._known.get(key, {}))

    async def ensure_scanned(self, calls: Caller) -> None:
        """Learn every stack's certificates in the region: once per process."""
        if self._scanned:
            return
        found: dict[StackKey, dict[str, str]] = {}
        async for page in calls.paginate("ListCertificates", service="acm", Includes={
                "keyTypes": ["RSA_1024", "RSA_2048", "RSA_3072", "RSA_4096", "EC_prime256v1",
                             "EC_secp384r1", "EC_secp521r1"]}):
            for summary in page.get("CertificateSummaryList") or []:
                arn = str(summary["CertificateArn"])
                tags = await _tags(calls, arn)
                if tags is None or tags.get(CLUSTER_TAG) != self._cluster:
                    continue
                for kind in ("ingress", "service"):
                    stack_id = tags.get(stack_tag(kind))
                    rid = tags.get(resource_tag(kind))
                    if stack_id and rid:
                        found.setdefault((kind, stack_id), {})[rid] = arn
        for key, arns in found.items():
            self._known.setdefault(key, {}).update(arns)
        self._scanned = True

    async def converge(self, run: DeployRun, key: StackKey) -> None:
        """Every certificate of the model imported and current; its ARN in `run.status`."""
        certificates = run.stack.certificates
        if not certificates:
            return
        await self.ensure_scanned(run.calls)
        known = self._known.setdefault(key, {})
        for rid, cert in sorted(certificates.items()):
            arn = known.get(rid)
            tags = await _tags(run.calls, arn) if arn is not None else None
            if arn is not None and (tags is None or not run.tracking.owns(tags)):
                del known[rid]  # deleted by someone, or no longer ours: import anew
                arn = None
            if isinstance(cert, RequestedCertificate):
                if arn is None:
                    arn = await _request(run, rid, cert)
                    known[rid] = arn
                # Raises (the listeners wait, the deploy is retried) until ACM issued it.
                await acmrequests.ensure_issued(run.calls, arn, cert)
            elif arn is None:
                arn = await _import(run, rid, cert)
                known[rid] = arn
            elif tags is not None and tags.get(VERSION_TAG) != cert.version:
                await _reimport(run.calls, arn, cert)
            run.set_status(CERTIFICATE, rid, "certificateARN", arn)

    async def finish(self, run: DeployRun, key: StackKey) -> None:
        """Delete the stack's certificates the model no longer has (its listeners converged:
        none of them serves one any more). A process that has not scanned yet scans first: the
        stack may have lost its last certificate while no controller ran."""
        await self.ensure_scanned(run.calls)
        known = self._known.get(key)
        if not known:
            return
        for rid in sorted(set(known) - set(run.stack.certificates)):
            await self._delete(run.calls, run.tracking, known, rid)

    async def delete_stack(self, calls: Caller, tracking: Tracking, key: StackKey) -> None:
        await self.ensure_scanned(calls)
        known = self._known.get(key, {})
        for rid in sorted(known):
            await self._delete(calls, tracking, known, rid)
        self._known.pop(key, None)

    async def _delete(self, calls: Caller, tracking: Tracking, known: dict[str, str],
                      rid: str) -> None:
        arn = known[rid]
        tags = await _tags(calls, arn)
        if tags is not None and tracking.owns(tags):
            if tags.get(REQUESTED_TAG):
                # Every stack's certificates are known (scanned): the others' records stay.
                others = sorted({a for arns in self._known.values() for a in arns.values()
                                 if a != arn})
                keep = await acmrequests.record_names(calls, others)
                await acmrequests.delete_validation_records(calls, arn, keep=frozenset(keep))
            try:
                await calls.call("DeleteCertificate", service="acm", CertificateArn=arn)
            except AWSError as exc:
                if exc.code == _IN_USE:
                    raise DeployError(f"certificate {arn} is still in use; it is deleted on "
                                      "a later attempt") from None
                if exc.code != _NOT_FOUND:
                    raise
        del known[rid]


async def _tags(calls: Caller, arn: str) -> dict[str, str] | None:
    """The certificate's tags; None when it is gone."""
    try:
        resp = await calls.call("ListTagsForCertificate", service="acm", CertificateArn=arn)
    except AWSError as exc:
        if exc.code == _NOT_FOUND:
            return None
        raise
    return tag_dict(resp.get("Tags"))


def _pem(cert: ImportedCertificate) -> dict[str, str]:
    params = {"Certificate": cert.certificate, "PrivateKey": cert.private_key}
    if cert.chain:
        params["CertificateChain"] = cert.chain
    return params


async def _request(run: DeployRun, rid: str, cert: RequestedCertificate) -> str:
    await acmrequests.check_zones(run.calls, cert)
    tags = run.desired_tags(rid, {**cert.tags, REQUESTED_TAG: cert.ingress.replace("/", "_")})
    token = acmrequests.idempotency_token(run.tracking.cluster, run.stack.id, rid)
    return await acmrequests.request(run.calls, cert, token=token, tags=as_api_tags(tags))


def _versioned(cert: ImportedCertificate) -> Mapping[str, str]:
    return {**cert.tags, VERSION_TAG: cert.version, SECRET_TAG: cert.secret}


async def _import(run: DeployRun, rid: str, cert: ImportedCertificate) -> str:
    tags = run.desired_tags(rid, dict(_versioned(cert)))
    resp = await run.calls.call("ImportCertificate", service="acm", Tags=as_api_tags(tags),
                                **_pem(cert))
    return str(resp["CertificateArn"])


async def _reimport(calls: Caller, arn: str, cert: ImportedCertificate) -> None:
    # ACM refuses tags on a re-import: the version tag is moved after it, so a crash in
    # between only re-imports the same material again.
    await calls.call("ImportCertificate", service="acm", CertificateArn=arn, **_pem(cert))
    await calls.call("AddTagsToCertificate", service="acm", CertificateArn=arn,
                     Tags=as_api_tags({VERSION_TAG: cert.version, SECRET_TAG: cert.secret}))


__all__ = ["REQUESTED_TAG", "SECRET_TAG", "VERSION_TAG", "StackCertificates"]
