"""One rule per AWS field, whichever annotation or parameter carries it."""

from __future__ import annotations

import pytest

from controller import validators
from controller.annotations import AnnotationError

K = "example.com/field"


@pytest.mark.parametrize(("codes", "good", "bad"), [
    (validators.NLB_HTTP_CODES, ["200", "200,202", "200-599", "599"], ["199", "200-600", "600"]),
    (validators.ALB_HTTP_CODES, ["200", "200-499", "404,418"], ["500", "200-500", "199"]),
    (validators.ALB_GRPC_CODES, ["0", "12", "0-99", "1,2,3"], ["100", "0-100", "-1"]),
])
def test_success_codes_follow_the_target_group_kind(codes: validators.CodeRange,
                                                    good: list[str], bad: list[str]) -> None:
    parse = validators.success_codes(codes)
    for value in good:
        assert parse(K, value) == value
    for value in [*bad, "", "abc", "300-200", "200,", "2000"]:
        with pytest.raises(AnnotationError, match=rf"within {codes[0]}\.\.{codes[1]}"):
            parse(K, value)


def test_load_balancer_names() -> None:
    assert validators.load_balancer_name(K, "a" * 32) == "a" * 32
    assert validators.load_balancer_name(K, "web-1") == "web-1"
    for value, reason in (("a" * 33, "longer than 32"), ("-web", "letters, digits"),
                          ("web-", "letters, digits"), ("my_lb", "letters, digits"),
                          ("", "letters, digits"), ("internal-web", "internal-")):
        with pytest.raises(AnnotationError, match=reason):
            validators.load_balancer_name(K, value)


def test_certificate_arns_are_acm_or_iam() -> None:
    acm = "arn:aws:acm:eu-west-1:123456789012:certificate/abc"
    iam = "arn:aws-cn:iam::123456789012:server-certificate/web"
    assert validators.certificate_arns(K, f"{acm}, {iam}") == (acm, iam)
    for value in ("arn:aws:s3:::bucket", "my-cert", "arn:aws:acm:x"):
        with pytest.raises(AnnotationError, match="not a certificate ARN"):
            validators.certificate_arns(K, value)
    assert validators.arns(K, "arn:aws:s3:::bucket/key") == ("arn:aws:s3:::bucket/key",)


def test_paths_lists_and_cidrs() -> None:
    assert validators.health_check_path(K, "/healthz?x=1") == "/healthz?x=1"
    for value in ("healthz", "/a b", "/" + "x" * 1024, "/\u00e9"):
        with pytest.raises(AnnotationError, match="printable ASCII"):
            validators.health_check_path(K, value)
    assert validators.subnets(K, " subnet-1 , public-a ,") == ("subnet-1", "public-a")
    assert validators.security_groups(K, "sg-1,web") == ("sg-1", "web")
    assert validators.cidrs(K, "10.0.0.0/8, ::/0") == ("10.0.0.0/8", "::/0")
    for parse, value, reason in ((validators.subnets, " , ", "no subnet"),
                                 (validators.security_groups, "", "no security group"),
                                 (validators.cidrs, ",", "no CIDR"),
                                 (validators.cidrs, "10.0.0.0/33", "not a CIDR")):
        with pytest.raises(AnnotationError, match=reason):
            parse(K, value)
