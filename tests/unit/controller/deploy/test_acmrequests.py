"""The pure parts of requesting certificates: upstream's hosted zone choice (the longest
suffix, in whole labels) and the idempotency token ACM accepts."""

from __future__ import annotations

import re

from controller.deploy.acmrequests import idempotency_token, zone_of

ZONES = [("example.com", "Z1"), ("api.example.com", "Z2"), ("ample.com", "Z3")]


def test_the_longest_zone_suffix_in_whole_labels_wins() -> None:
    assert zone_of("www.example.com", ZONES) == "Z1"
    assert zone_of("v1.api.example.com", ZONES) == "Z2"
    assert zone_of("api.example.com.", ZONES) == "Z2"
    assert zone_of("WWW.Example.COM", ZONES) == "Z1"
    # "ample.com" is no suffix of "example.com" in labels.
    assert zone_of("example.com", [("ample.com", "Z3")]) is None
    assert zone_of("example.org", ZONES) is None


def test_the_idempotency_token_is_what_acm_accepts_and_stable() -> None:
    token = idempotency_token("c", "default/shop", "amazon_issued/x-1-2")
    assert re.fullmatch(r"\w{1,32}", token)
    assert token == idempotency_token("c", "default/shop", "amazon_issued/x-1-2")
    assert token != idempotency_token("c", "default/shop", "private/x-1-2")
