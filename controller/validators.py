"""One rule per AWS field, shared by every parser that reads it (Service and Ingress annotations,
IngressClassParams). Each validator is a `(full key, raw value) -> value` parser in the shape of
`controller.annotations.AnnotationReader.get`, and fails with one `AnnotationError` line.

The rules are AWS's documented limits, so a value AWS would refuse is refused before anything
is created (upstream passes most of these strings through and lets the AWS call fail).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable
from typing import Final

from controller.annotations import AnnotationError, parse_int, parse_string_map, quote, split_list

# ELBv2 load balancer names: 1..32 of [A-Za-z0-9-], not starting or ending with "-", and not
# starting with "internal-" (CreateLoadBalancer's Name).
_LB_NAME: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?")
# arn:partition:service:region:account:resource
_ARN: Final = re.compile(r"arn:[^:\s]+:[^:\s]+:[^:\s]*:[^:\s]*:\S+")
_CERTIFICATE_SERVICES: Final = ("acm", "iam")
# HealthCheckPath: "/" then up to 1,023 printable ASCII characters.
_HEALTH_PATH: Final = re.compile(r"/[\x21-\x7e]{0,1023}")
_CODE: Final = re.compile(r"([0-9]{1,3})(?:-([0-9]{1,3}))?")

# Matcher ranges (ModifyTargetGroup): ALB HTTP(S) 200..499, ALB gRPC 0..99, NLB 200..599.
ALB_HTTP_CODES: Final = (200, 499, "HTTP", "200-399 or 200,202")
ALB_GRPC_CODES: Final = (0, 99, "gRPC", "0-99 or 12")
NLB_HTTP_CODES: Final = (200, 599, "HTTP", "200-399 or 200,202")
CodeRange = tuple[int, int, str, str]  # lowest, highest, kind, example
# IpamPools.Ipv4IpamPoolId and CustomerOwnedIpv4Pool (CreateLoadBalancer).
_IPAM_POOL: Final = re.compile(r"ipam-pool-[a-zA-Z0-9]{1,990}")
_COIP_POOL: Final = re.compile(r"ipv4pool-coip-[a-zA-Z0-9]{1,242}")
# ModifyCapacityReservation's MinimumLoadBalancerCapacity.CapacityUnits: an int32.
CAPACITY_UNITS_MAX: Final = 2**31 - 1


def load_balancer_name(key: str, raw: str) -> str:
    if len(raw) > 32:
        raise AnnotationError(key, raw, "is longer than 32 characters")
    if _LB_NAME.fullmatch(raw) is None:
        raise AnnotationError(key, raw, "must be letters, digits and '-', "
                              "not starting or ending with '-'")
    if raw.startswith("internal-"):
        raise AnnotationError(key, raw, 'must not start with "internal-"')
    return raw


def _items(raw: str) -> tuple[str, ...]:
    return tuple(split_list(raw))


def subnets(key: str, raw: str) -> tuple[str, ...]:
    """Subnet IDs or Name tags (the resolve stage looks names up); at least one."""
    found = _items(raw)
    if not found:
        raise AnnotationError(key, raw, "lists no subnet ID or name")
    return found


def security_groups(key: str, raw: str) -> tuple[str, ...]:
    """Security group IDs or names; at least one."""
    found = _items(raw)
    if not found:
        raise AnnotationError(key, raw, "lists no security group")
    return found


_EIP_ALLOCATION: Final = re.compile(r"eipalloc-[0-9a-f]{1,32}")


def eip_allocations(key: str, raw: str) -> tuple[str, ...]:
    """Elastic IP allocation IDs, one per subnet of a network load balancer: at least one, each
    once (AWS refuses one allocation on two subnets)."""
    items = split_list(raw)
    for item in items:
        if _EIP_ALLOCATION.fullmatch(item) is None:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not an Elastic IP "
                                  "allocation ID (eipalloc-...)")
    if not items:
        raise AnnotationError(key, raw, "lists no EIP allocation")
    for index, item in enumerate(items):
        if item in items[:index]:
            raise AnnotationError(key, raw, f"lists {quote(item)} twice; each subnet needs "
                                  "EIP allocation of its own")
    return tuple(items)


_PREFIX_LIST_ID: Final = re.compile(r"pl-[0-9a-f]{1,32}")


def prefix_lists(key: str, raw: str) -> tuple[str, ...]:
    """Managed prefix list IDs (`pl-...`); at least one."""
    found = _items(raw)
    for item in found:
        if _PREFIX_LIST_ID.fullmatch(item) is None:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not a prefix list ID "
                                            "(pl-...)")
    if not found:
        raise AnnotationError(key, raw, "lists no prefix list")
    return found


def cidrs(key: str, raw: str) -> tuple[str, ...]:
    found = _items(raw)
    for item in found:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not a CIDR") from None
    if not found:
        raise AnnotationError(key, raw, "lists no CIDR")
    return found


def arns(key: str, raw: str) -> tuple[str, ...]:
    found = _items(raw)
    for item in found:
        if _ARN.fullmatch(item) is None:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not an ARN")
    return found


def certificate_arns(key: str, raw: str) -> tuple[str, ...]:
    """ACM or IAM server certificate ARNs, the first being the default certificate."""
    found = _items(raw)
    for item in found:
        if _ARN.fullmatch(item) is None or item.split(":")[2] not in _CERTIFICATE_SERVICES:
            raise AnnotationError(key, raw, f"has {quote(item)}, which is not a certificate "
                                            "ARN (ACM or IAM)")
    return found


# arn:<partition>:acm-pca:<region>:<account>:certificate-authority/<id> (ACM PCA API reference).
_PCA_ARN: Final = re.compile(
    r"arn:aws[a-z-]*:acm-pca:[a-z0-9-]+:[0-9]{12}:certificate-authority/[0-9A-Za-z-]{1,64}")


def pca_arn_problem(value: str) -> str | None:
    """Why `value` is not an ACM Private CA ARN (None when it is one)."""
    if _PCA_ARN.fullmatch(value) is None:
        return (f"{quote(value)} is not an ACM Private CA ARN "
                "(arn:aws:acm-pca:<region>:<account>:certificate-authority/<id>)")
    return None


def pca_arn(key: str, raw: str) -> str:
    """An ACM Private CA ARN; empty (blank) means "not set", so it does not override
    --default-pca-arn (as upstream)."""
    value = raw.strip()
    if value:
        problem = pca_arn_problem(value)
        if problem is not None:
            raise AnnotationError(key, raw, f"has {problem}")
    return value


def health_check_path(key: str, raw: str) -> str:
    if _HEALTH_PATH.fullmatch(raw) is None:
        raise AnnotationError(key, raw, 'must start with "/" and be at most 1024 printable '
                                        "ASCII characters")
    return raw


def success_codes(codes: CodeRange) -> Callable[[str, str], str]:
    """A Matcher: "200", "200,202" or "200-299", every code within `codes` (one of the
    ranges above)."""
    return functools.partial(_success_codes, codes=codes)


def _success_codes(key: str, raw: str, *, codes: CodeRange) -> str:
    low_limit, high_limit, kind, example = codes
    for item in raw.split(","):
        m = _CODE.fullmatch(item)
        low = int(m.group(1)) if m else -1
        high = int(m.group(2)) if m and m.group(2) else low
        if not low_limit <= low <= high <= high_limit:
            raise AnnotationError(key, raw, f"is not a list of {kind} codes or ranges within "
                                            f"{low_limit}..{high_limit} (e.g. {example})")
    return raw


def minimum_capacity(key: str, raw: str) -> int | None:
    """`CapacityUnits=N` (the minimum-load-balancer-capacity annotations): the capacity units
    to reserve, 0 to reset the reservation; an empty value asks for nothing (upstream). The one
    key upstream takes; a negative count AWS would refuse is refused here."""
    units: int | None = None
    for name, value in parse_string_map(key, raw).items():
        if name != "CapacityUnits":
            raise AnnotationError(key, raw, f"has key {quote(name)}; the only key is "
                                            "CapacityUnits")
        try:
            units = parse_int(key, value, minimum=0, maximum=CAPACITY_UNITS_MAX)
        except AnnotationError as exc:
            raise AnnotationError(key, raw, f"has CapacityUnits {quote(value)}, which "
                                            f"{exc.reason}") from None
    return units


def ipam_pool_problem(value: str) -> str | None:
    if _IPAM_POOL.fullmatch(value) is None:
        return "is not an IPAM pool ID (ipam-pool- and letters or digits)"
    return None


def ipam_pool(key: str, raw: str) -> str | None:
    """An IPv4 IPAM pool ID (`ipam-ipv4-pool-id`); empty asks for none, as upstream reads it."""
    if not raw:
        return None
    problem = ipam_pool_problem(raw)
    if problem is not None:
        raise AnnotationError(key, raw, problem)
    return raw


def customer_owned_pool(key: str, raw: str) -> str:
    """A customer-owned IPv4 pool ID (`customer-owned-ipv4-pool`); empty is an error, as
    upstream's."""
    if not raw:
        raise AnnotationError(key, raw, "is empty; name a customer-owned IPv4 pool or remove "
                                        "the annotation")
    if _COIP_POOL.fullmatch(raw) is None:
        raise AnnotationError(key, raw, "is not a customer-owned IPv4 pool ID (ipv4pool-coip- "
                                        "and letters or digits)")
    return raw
