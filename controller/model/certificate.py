"""ACM certificates a stack owns: imported from a Kubernetes TLS Secret (the Ingress's
`spec.tls[].secretName`, when `--enable-secret-certificates` is on), or requested from ACM for
an Ingress's hosts (`create-acm-cert`, with the `EnableCertificateManagement` feature gate).

The PEM material is write-only for the model's purposes: the canonical JSON never carries it
(the private key is a secret; the certificate and chain are large and add nothing), and
`version`, the digest of the public certificate and chain, stands for all three in digests: a
key cannot change without its certificate changing. The deployer keeps the version it imported
in a tag on the certificate, so a rotation that happened while the controller was down is seen
and re-imported under the same ARN.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, FieldSerializationInfo, field_serializer

from controller.model.actions import REDACTED
from controller.model.base import Tagged


class ImportedCertificate(Tagged):
    WRITE_ONLY: ClassVar[frozenset[str]] = frozenset({"private_key"})

    # namespace/name of the kubernetes.io/tls Secret it comes from.
    secret: str = Field(min_length=3)
    # base64url sha256 of the certificate and chain PEM (public data, nothing secret).
    version: str = Field(min_length=1)
    certificate: str = ""
    chain: str = ""
    private_key: str = ""

    @field_serializer("certificate", "chain", "private_key")
    def _redact(self, value: str, info: FieldSerializationInfo) -> str:
        ctx: Any = info.context
        if isinstance(ctx, dict) and ctx.get("reveal_secrets"):
            return value
        return REDACTED if value else ""


class RequestedCertificate(Tagged):
    """A certificate ACM issues for one Ingress's hosts (upstream's `acm.Certificate`): public
    (AMAZON_ISSUED, validated through DNS records in the Route53 public hosted zone of each
    name) or private, from the ACM Private CA `certificate_authority_arn`."""

    # namespace/name of the Ingress that asks for it (each member of a group gets its own).
    ingress: str = Field(min_length=3)
    domain_name: str = Field(min_length=1, max_length=253)
    # Every host of the Ingress, the domain name included, as upstream requests them.
    subject_alternative_names: tuple[str, ...] = Field(min_length=1)
    certificate_authority_arn: str = ""

    @property
    def private(self) -> bool:
        return bool(self.certificate_authority_arn)


AnyCertificate = ImportedCertificate | RequestedCertificate

__all__ = ["AnyCertificate", "ImportedCertificate", "RequestedCertificate"]
