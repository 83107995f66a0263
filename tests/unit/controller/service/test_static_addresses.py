"""Static NLB addresses (`aws-load-balancer-eip-allocations`, `-private-ipv4-addresses`,
`-ipv6-addresses`): parsing, upstream's rules in the pure stage, and the checkpoint of a
Service without them unchanged."""

from __future__ import annotations

import pytest

from controller import checkpoint
from controller.errors import InvalidInput
from controller.service import ModelSettings, build_stack
from controller.service.annotations import PREFIX
from controller.service.model import MODEL_VERSION, admission_refusal
from controller.settings import ClusterScope
from tests.support.objects import web_service

SETTINGS = ModelSettings(cluster=ClusterScope(name="prod", region="us-west-2", vpc_id="vpc-1"))
PUBLIC = {"aws-load-balancer-scheme": "internet-facing"}
TWO = {"aws-load-balancer-subnets": "subnet-b, subnet-a"}
DUAL = {"aws-load-balancer-ip-address-type": "dualstack"}


def test_addresses_reach_the_model_as_written() -> None:
    lb = build_stack(web_service({
        **PUBLIC, **TWO, "aws-load-balancer-eip-allocations": "eipalloc-2, eipalloc-1",
    }), settings=SETTINGS).load_balancers["LoadBalancer"]
    # In the order given, with the subnets in the order listed (upstream's subnet resolver
    # keeps a listed order).
    assert lb.eip_allocations == ("eipalloc-2", "eipalloc-1")
    assert lb.subnet_order == ("subnet-b", "subnet-a")
    assert tuple(lb.subnets) == ("subnet-a", "subnet-b")
    assert lb.private_ipv4_addresses is None
    assert lb.subnet_mappings is None
    internal = build_stack(web_service({
        "aws-load-balancer-private-ipv4-addresses": "10.0.3.9,10.0.2.9",
        **DUAL, "aws-load-balancer-ipv6-addresses": "2600:1f13:0:0::1, 2600:1f13:0:1::1",
    }), settings=SETTINGS).load_balancers["LoadBalancer"]
    assert internal.private_ipv4_addresses == ("10.0.3.9", "10.0.2.9")
    assert internal.ipv6_addresses == ("2600:1f13::1", "2600:1f13:0:1::1")  # normalised


def test_a_service_without_them_keeps_its_checkpoint() -> None:
    """The new fields are left out of the canonical JSON when absent: no stored checkpoint
    misses because of this feature."""
    stack = build_stack(web_service(), settings=SETTINGS)
    text = stack.load_balancers["LoadBalancer"].model_dump_json()
    for name in ("eip_allocations", "ipv6_addresses", "subnet_mappings",
                 "enable_prefix_for_ipv6_source_nat"):
        assert name not in text
    with_eips = build_stack(web_service({**PUBLIC, "aws-load-balancer-eip-allocations":
                                         "eipalloc-1"}), settings=SETTINGS)
    assert (checkpoint.compute(with_eips, version=MODEL_VERSION)
            != checkpoint.compute(build_stack(web_service(PUBLIC), settings=SETTINGS),
                                  version=MODEL_VERSION))


@pytest.mark.parametrize(("notes", "message"), [
    ({"aws-load-balancer-eip-allocations": "eipalloc-1"},
     "service shop/web: annotation service.beta.kubernetes.io/aws-load-balancer-eip-allocations"
     ": EIP allocations can be set for an internet-facing load balancer only (its scheme is "
     "internal)"),
    ({**PUBLIC, "aws-load-balancer-private-ipv4-addresses": "10.0.0.1"},
     "service shop/web: annotation service.beta.kubernetes.io/aws-load-balancer-private-ipv4-"
     "addresses: private IPv4 addresses can be set for an internal load balancer only (its "
     "scheme is internet-facing)"),
    ({"aws-load-balancer-ipv6-addresses": "2600::1"},
     "service shop/web: annotation service.beta.kubernetes.io/aws-load-balancer-ipv6-addresses"
     ": IPv6 addresses can be set for a dualstack load balancer only (its IP address type is "
     "ipv4)"),
    ({**PUBLIC, **TWO, "aws-load-balancer-eip-allocations": "eipalloc-1"},
     "service shop/web: annotation service.beta.kubernetes.io/aws-load-balancer-eip-allocations"
     ": count of EIP allocations (1) and subnets (2) must match"),
    ({**PUBLIC, "aws-load-balancer-eip-allocations": "eip-1"},
     'annotation service.beta.kubernetes.io/aws-load-balancer-eip-allocations: "eip-1" has '
     '"eip-1", which is not an Elastic IP allocation ID (eipalloc-...)'),
    ({"aws-load-balancer-private-ipv4-addresses": "10.0.0.1, 2600::1"},
     'annotation service.beta.kubernetes.io/aws-load-balancer-private-ipv4-addresses: '
     '"10.0.0.1, 2600::1" has "2600::1", which is not an IPv4 address'),
    ({"aws-load-balancer-private-ipv4-addresses": "10.0.0.1, ten"},
     'annotation service.beta.kubernetes.io/aws-load-balancer-private-ipv4-addresses: '
     '"10.0.0.1, ten" has "ten", which is not an IP address'),
    ({**DUAL, "aws-load-balancer-ipv6-addresses": "2600::1,2600::1"},
     'annotation service.beta.kubernetes.io/aws-load-balancer-ipv6-addresses: '
     '"2600::1,2600::1" lists "2600::1" twice; each subnet needs IPv6 address of its own'),
    ({**PUBLIC, "aws-load-balancer-eip-allocations": " , "},
     'annotation service.beta.kubernetes.io/aws-load-balancer-eip-allocations: " , " lists no '
     "EIP allocation"),
])
def test_upstream_rules_are_one_message_at_build_and_admission(
        notes: dict[str, str], message: str) -> None:
    service = web_service(notes)
    with pytest.raises(InvalidInput) as exc:
        build_stack(service, settings=SETTINGS)
    assert str(exc.value) == message
    assert admission_refusal(service, settings=SETTINGS) == message


def test_keys_are_acted_on() -> None:
    from controller.service import SERVICE_ANNOTATION_KEYS

    for key in ("aws-load-balancer-eip-allocations", "aws-load-balancer-private-ipv4-addresses",
                "aws-load-balancer-ipv6-addresses"):
        assert PREFIX + key in SERVICE_ANNOTATION_KEYS


# ---- IPv6 source NAT ---------------------------------------------------------------------

NAT_ON = {**DUAL, "aws-load-balancer-enable-prefix-for-ipv6-source-nat": "on"}


def test_source_nat_reaches_the_model() -> None:
    lb = build_stack(web_service({**NAT_ON, **TWO, "aws-load-balancer-source-nat-ipv6-prefixes":
                                  "2600:1f13:0:1:1::/80, auto_assigned"}),
                     settings=SETTINGS).load_balancers["LoadBalancer"]
    assert lb.enable_prefix_for_ipv6_source_nat == "on"
    assert lb.source_nat_ipv6_prefixes == ("2600:1f13:0:1:1::/80", "auto_assigned")
    assert lb.subnet_order == ("subnet-b", "subnet-a")
    off = build_stack(web_service({**DUAL, "aws-load-balancer-enable-prefix-for-ipv6-source-nat":
                                   "off"}), settings=SETTINGS).load_balancers["LoadBalancer"]
    assert off.enable_prefix_for_ipv6_source_nat == "off"
    assert off.source_nat_ipv6_prefixes is None
    # "off" on an IPv4 load balancer is allowed, as upstream.
    build_stack(web_service({"aws-load-balancer-enable-prefix-for-ipv6-source-nat": "off"}),
                settings=SETTINGS)


NAT = PREFIX + "aws-load-balancer-enable-prefix-for-ipv6-source-nat"
PREFIXES = PREFIX + "aws-load-balancer-source-nat-ipv6-prefixes"


@pytest.mark.parametrize(("notes", "message"), [
    ({"aws-load-balancer-enable-prefix-for-ipv6-source-nat": "On"},
     f'annotation {NAT}: "On" is not one of: on, off'),
    ({"aws-load-balancer-enable-prefix-for-ipv6-source-nat": "on"},
     f'service shop/web: annotation {NAT}: "on" needs a dualstack load balancer (its IP '
     "address type is ipv4)"),
    ({"aws-load-balancer-source-nat-ipv6-prefixes": "auto_assigned"},
     f"service shop/web: annotation {PREFIXES}: source NAT IPv6 prefixes can be set for a "
     "dualstack load balancer only (its IP address type is ipv4)"),
    ({**DUAL, "aws-load-balancer-source-nat-ipv6-prefixes": "auto_assigned"},
     f'service shop/web: annotation {PREFIXES}: source NAT IPv6 prefixes need annotation '
     f'{NAT}: "on"'),
    ({**NAT_ON, **TWO, "aws-load-balancer-source-nat-ipv6-prefixes": "auto_assigned"},
     f"service shop/web: annotation {PREFIXES}: count of source NAT IPv6 prefixes (1) and "
     "subnets (2) must match"),
    ({**NAT_ON, "aws-load-balancer-source-nat-ipv6-prefixes": "2600:1f13::/64"},
     f'annotation {PREFIXES}: "2600:1f13::/64" has "2600:1f13::/64", which is not '
     "auto_assigned or an IPv6 prefix of length 80 (e.g. 2600:1f13:837:8501:1::/80)"),
    ({**NAT_ON, "aws-load-balancer-source-nat-ipv6-prefixes": "10.0.0.0/80"},
     f'annotation {PREFIXES}: "10.0.0.0/80" has "10.0.0.0/80", which is not '
     "auto_assigned or an IPv6 prefix of length 80 (e.g. 2600:1f13:837:8501:1::/80)"),
])
def test_source_nat_rules_are_one_message(notes: dict[str, str], message: str) -> None:
    service = web_service(notes)
    with pytest.raises(InvalidInput) as exc:
        build_stack(service, settings=SETTINGS)
    assert str(exc.value) == message
    assert admission_refusal(service, settings=SETTINGS) == message
