"""Hypothesis strategies for stack documents (the plain-dict form `Stack.model_validate` reads)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from controller.model import LISTENER, LOAD_BALANCER, TARGET_GROUP, Ref
from controller.model.limits import LOAD_BALANCER_ATTRIBUTES, TARGET_GROUP_ATTRIBUTES

_word = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
_subnet = st.builds(lambda s: f"subnet-{s}", _word)
# Only keys AWS knows for an ALB and its HTTP(S) target groups pass the model.
_lb_attribute = st.sampled_from(sorted(LOAD_BALANCER_ATTRIBUTES["application"]))
_tg_attribute = st.sampled_from(sorted(TARGET_GROUP_ATTRIBUTES["application"]))


def _ref(rtype: str, rid: str, field: str) -> dict[str, str]:
    return Ref.to(rtype, rid, field).model_dump(by_alias=True)


@st.composite
def stack_documents(draw: st.DrawFn) -> dict[str, Any]:
    tg_ids = draw(st.lists(_word, min_size=1, max_size=3, unique=True))
    target_groups = {
        f"ns/{tid}:80": {
            "name": f"k8s-{tid}",
            "protocol": draw(st.sampled_from(["HTTP", "HTTPS"])),
            "protocol_version": draw(st.sampled_from([None, "HTTP1", "GRPC"])),
            "port": draw(st.integers(1, 65535)),
            "target_type": draw(st.sampled_from(["ip", "instance"])),
            "health_check": {
                "protocol": "HTTP",
                "port": draw(st.sampled_from(["traffic-port", 8080])),
                "path": draw(st.sampled_from(["/", "/healthz"])),
                "interval_seconds": draw(st.integers(10, 30)),
                "timeout_seconds": draw(st.integers(2, 9)),
                "matcher": {"http_code": draw(st.sampled_from(["200", "200-399"]))},
            },
            "attributes": draw(st.dictionaries(_tg_attribute, _word, max_size=3)),
            "tags": draw(st.dictionaries(_word, _word, max_size=3)),
        }
        for tid in tg_ids
    }
    tg_refs = [_ref(TARGET_GROUP, rid, "targetGroupARN") for rid in target_groups]
    lb_ref = _ref(LOAD_BALANCER, "LoadBalancer", "loadBalancerARN")
    subnets: Any = draw(st.one_of(
        st.lists(_subnet, min_size=1, max_size=4, unique=True),
        st.builds(lambda r: {"role": r}, st.sampled_from(["elb", "internal-elb"])),
    ))
    lb = {
        "name": draw(st.builds(lambda w: f"k8s-{w}", _word)),
        "type": "application",
        "scheme": draw(st.sampled_from(["internal", "internet-facing"])),
        "ip_address_type": draw(st.sampled_from(["ipv4", "dualstack"])),
        "subnets": subnets,
        "security_groups": draw(st.lists(st.builds(lambda w: f"sg-{w}", _word), max_size=3,
                                         unique=True)),
        "attributes": draw(st.dictionaries(_lb_attribute, _word, max_size=3)),
        "tags": draw(st.dictionaries(_word, _word, max_size=3)),
    }
    forward = {
        "type": "forward",
        "target_groups": [{"target_group_arn": r, "weight": draw(st.integers(0, 999))}
                          for r in tg_refs],
        "stickiness": draw(st.sampled_from([None, {"enabled": True, "duration_seconds": 60}])),
    }
    oidc = {
        "type": "authenticate-oidc", "issuer": "https://idp", "authorization_endpoint": "https://a",
        "token_endpoint": "https://t", "user_info_endpoint": "https://u",
        "client_id": draw(_word), "client_secret": draw(_word),
    }
    listeners = {
        "80": {"load_balancer_arn": lb_ref, "port": 80, "protocol": "HTTP",
               "default_actions": [{"type": "redirect", "protocol": "HTTPS", "port": "443",
                                    "status_code": draw(st.sampled_from(["HTTP_301",
                                                                         "HTTP_302"]))}]},
        "443": {"load_balancer_arn": lb_ref, "port": 443, "protocol": "HTTPS",
                "certificates": draw(st.lists(st.builds(lambda w: f"arn:cert/{w}", _word),
                                              min_size=1, max_size=3, unique=True)),
                "ssl_policy": "ELBSecurityPolicy-2016-08",
                "default_actions": [{"type": "fixed-response", "status_code": "404",
                                     "message_body": draw(_word)}]},
    }
    l443 = _ref(LISTENER, "443", "listenerARN")
    rules = {
        "443:1": {
            "listener_arn": l443, "priority": draw(st.integers(1, 100)),
            "conditions": [
                {"field": "host-header", "values": draw(st.lists(_word, min_size=1, max_size=2,
                                                                 unique=True))},
                {"field": "path-pattern", "values": ["/api/*"]},
                {"field": "http-header", "header_name": draw(_word), "values": ["x"]},
            ],
            "actions": [oidc, forward] if draw(st.booleans()) else [forward],
            "tags": draw(st.dictionaries(_word, _word, max_size=2)),
        },
        "443:2": {
            "listener_arn": l443, "priority": 200,
            "conditions": [{"field": "query-string",
                            "values": [{"key": draw(_word), "value": draw(_word)},
                                       {"value": "v"}]}],
            "actions": [{"type": "fixed-response", "status_code": "503"}],
        },
    }
    bindings = {
        rid: {"name": f"tgb-{i}", "namespace": "ns",
              "target_group_arn": _ref(TARGET_GROUP, rid, "targetGroupARN"),
              "target_type": target_groups[rid]["target_type"],
              "service_ref": {"name": "svc", "port": draw(st.sampled_from([80, "http"]))},
              "multi_cluster_target_group": draw(st.booleans()),
              "labels": draw(st.dictionaries(_word, _word, max_size=2))}
        for i, rid in enumerate(target_groups)
    }
    return {
        "id": draw(st.sampled_from(["ns/web", "shared-group"])),
        "kind": "ingress",
        "context": {
            "cluster_name": draw(st.sampled_from(["prod", "staging"])),
            "region": draw(st.sampled_from(["us-west-2", "eu-west-1"])),
            "vpc_id": draw(st.builds(lambda w: f"vpc-{w}", _word)),
            "external_managed_tags": draw(st.lists(_word, max_size=2, unique=True)),
        },
        "target_groups": target_groups,
        "load_balancers": {"LoadBalancer": lb},
        "listeners": listeners,
        "listener_rules": rules,
        "target_group_bindings": bindings,
    }
