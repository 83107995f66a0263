"""The stand-in's ACM answers as ACM does where the controller meets it: a re-import
(ImportCertificate with CertificateArn) keeps the ARN and the tags, refuses tags and
certificates that were not imported; ListCertificates lists RSA_2048 certificates only unless
`Includes.keyTypes` asks for others (moto alone drops the tags and lists every key type)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from runtime.webhook.certs import KeyPair, issue_ca, issue_serving

DAY = 86400.0


def _pair(host: str) -> KeyPair:
    ca = issue_ca("ca", now=time.time(), validity=30 * DAY)
    return issue_serving(ca, [host], now=time.time(), validity=30 * DAY)


def _tags(acm: Any, arn: str) -> dict[str, str]:
    return {t["Key"]: t.get("Value", "")
            for t in acm.list_tags_for_certificate(CertificateArn=arn)["Tags"]}


def test_a_reimport_keeps_the_arn_and_the_tags(acm: Any) -> None:
    first = _pair("a.example.com")
    arn = acm.import_certificate(Certificate=first.cert_pem, PrivateKey=first.key_pem,
                                 Tags=[{"Key": "owner", "Value": "me"}])["CertificateArn"]
    serial = acm.describe_certificate(CertificateArn=arn)["Certificate"]["Serial"]
    second = _pair("a.example.com")
    again = acm.import_certificate(CertificateArn=arn, Certificate=second.cert_pem,
                                   PrivateKey=second.key_pem)["CertificateArn"]
    assert again == arn
    assert _tags(acm, arn) == {"owner": "me"}
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Serial"] != serial

    with pytest.raises(ClientError) as tagged:
        acm.import_certificate(CertificateArn=arn, Certificate=second.cert_pem,
                               PrivateKey=second.key_pem, Tags=[{"Key": "k", "Value": "v"}])
    assert tagged.value.response["Error"]["Code"] == "ValidationException"

    requested = acm.request_certificate(DomainName="b.example.com",
                                        ValidationMethod="DNS")["CertificateArn"]
    with pytest.raises(ClientError) as issued:
        acm.import_certificate(CertificateArn=requested, Certificate=second.cert_pem,
                               PrivateKey=second.key_pem)
    assert issued.value.response["Error"]["Code"] == "ValidationException"


def test_listing_without_key_types_lists_rsa_2048_only(acm: Any) -> None:
    pair = _pair("ec.example.com")  # an ECDSA P-256 key
    arn = acm.import_certificate(Certificate=pair.cert_pem,
                                 PrivateKey=pair.key_pem)["CertificateArn"]

    def listed(**params: Any) -> set[str]:
        return {s["CertificateArn"]
                for s in acm.list_certificates(**params)["CertificateSummaryList"]}

    assert arn not in listed()
    assert arn in listed(Includes={"keyTypes": ["EC_prime256v1"]})
    assert arn not in listed(Includes={"keyTypes": ["RSA_2048"]})
