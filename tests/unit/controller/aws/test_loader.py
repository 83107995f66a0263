"""The client pool's botocore data: trimmed service models and endpoint data give clients that
build the same requests, for the same endpoints, as botocore's own data, for every operation
the controller calls; and a process parses each file once."""

from __future__ import annotations

import botocore.session
import pytest
from botocore.config import Config

from controller.aws.loader import (
    ENDPOINT_SERVICES,
    TRIMMED_OPERATIONS,
    trim_model,
    with_shared_loader,
)

# Clients the pool makes, in a region of each partition.
SERVICES = ("elbv2", "ec2", "acm", "wafv2", "waf-regional", "shield",
            "resourcegroupstaggingapi", "iam")
REGIONS = ("us-west-2", "eu-central-1", "ap-southeast-4", "cn-north-1", "us-gov-west-1",
           "us-iso-east-1")


def _structure(shape: object, seen: frozenset[str] = frozenset()) -> object:
    """A shape as what a request or response of it holds: names, types, wire names and
    constraints of it and everything it reaches (documentation aside)."""
    if shape is None:
        return None
    name = shape.name  # type: ignore[attr-defined]
    if name in seen:
        return ("recursive", name)
    seen = seen | {name}
    metadata = {k: v for k, v in shape.metadata.items()  # type: ignore[attr-defined]
                if k != "documentation"}
    parts: list[object] = [name, shape.type_name, shape.serialization,  # type: ignore[attr-defined]
                           sorted(metadata.items(), key=str)]
    members = getattr(shape, "members", None)
    if members:
        parts.append([(k, _structure(v, seen)) for k, v in members.items()])
    for attr in ("member", "key", "value"):
        inner = getattr(shape, attr, None)
        if inner is not None:
            parts.append((attr, _structure(inner, seen)))
    return tuple(parts)


def _client(trimmed: bool, service: str, region: str) -> object:
    session = botocore.session.Session()  # a fresh session: its own loader unless shared
    if trimmed:
        with_shared_loader(session, trimmed=True)
    return session.create_client(service, region_name=region, aws_access_key_id="k",
                                 aws_secret_access_key="s",
                                 config=Config(retries={"max_attempts": 0}))


@pytest.mark.parametrize("service", SERVICES)
def test_trimmed_clients_have_the_endpoints_of_full_ones(service: str) -> None:
    for region in REGIONS:
        full, trimmed = _client(False, service, region), _client(True, service, region)
        assert trimmed.meta.endpoint_url == full.meta.endpoint_url, region  # type: ignore[attr-defined]
        assert trimmed.meta.region_name == full.meta.region_name  # type: ignore[attr-defined]


def test_a_trimmed_model_keeps_what_its_operations_reach_and_builds_the_same_requests() -> None:
    full = _client(False, "ec2", "us-west-2")
    trimmed = _client(True, "ec2", "us-west-2")
    model = trimmed.meta.service_model  # type: ignore[attr-defined]
    assert set(model.operation_names) == TRIMMED_OPERATIONS["ec2"]
    full_model = full.meta.service_model  # type: ignore[attr-defined]
    for name in TRIMMED_OPERATIONS["ec2"]:
        ours, theirs = model.operation_model(name), full_model.operation_model(name)
        assert _structure(ours.input_shape) == _structure(theirs.input_shape), name
        assert _structure(ours.output_shape) == _structure(theirs.output_shape), name
        assert ours.http == theirs.http
    # The same wire request for a call with nested members.
    params = {"GroupId": "sg-1", "IpPermissions": [{
        "IpProtocol": "tcp", "FromPort": 80, "ToPort": 80,
        "IpRanges": [{"CidrIp": "10.0.0.0/16", "Description": "elbv2.k8s.aws/targetGroupBinding"}],
        "UserIdGroupPairs": [{"GroupId": "sg-2"}]}]}
    requests = []
    for client in (full, trimmed):
        serializer = client._serializer  # type: ignore[attr-defined]
        op = client.meta.service_model.operation_model(  # type: ignore[attr-defined]
            "AuthorizeSecurityGroupIngress")
        requests.append(serializer.serialize_to_request(params, op)["body"])
    assert requests[0] == requests[1]


def test_untrimmed_services_lose_only_their_documentation() -> None:
    full = _client(False, "elbv2", "us-west-2").meta.service_model  # type: ignore[attr-defined]
    trimmed = _client(True, "elbv2", "us-west-2").meta.service_model  # type: ignore[attr-defined]
    assert trimmed.operation_names == full.operation_names
    assert trimmed.operation_model("CreateRule").documentation == ""
    for name in full.operation_names:
        assert _structure(trimmed.operation_model(name).input_shape) == _structure(
            full.operation_model(name).input_shape), name


def test_trim_model_follows_lists_maps_and_errors() -> None:
    payload = b"""{"version": "2.0", "metadata": {"protocol": "json"},
      "documentation": "about", "operations": {
        "Keep": {"name": "Keep", "input": {"shape": "In"}, "errors": [{"shape": "Oops"}],
                 "documentation": "d"},
        "Drop": {"name": "Drop", "input": {"shape": "Other"}}},
      "shapes": {
        "In": {"type": "structure", "members": {"Items": {"shape": "List", "documentation": "x"},
                                                 "Tags": {"shape": "Map"}}},
        "List": {"type": "list", "member": {"shape": "Item"}},
        "Map": {"type": "map", "key": {"shape": "Str"}, "value": {"shape": "Str"}},
        "Item": {"type": "structure", "members": {}, "documentation": "y"},
        "Str": {"type": "string"}, "Oops": {"type": "structure", "members": {}},
        "Other": {"type": "string"}}}"""
    model = trim_model(payload, ["Keep", "Absent"])
    assert set(model["operations"]) == {"Keep"}
    assert set(model["shapes"]) == {"In", "List", "Map", "Item", "Str", "Oops"}
    assert "documentation" not in model
    assert "documentation" not in model["operations"]["Keep"]
    assert model["shapes"]["In"]["members"]["Items"] == {"shape": "List"}
    assert model["metadata"] == {"protocol": "json"}


def test_one_loader_per_process_and_kind() -> None:
    first, second = botocore.session.Session(), botocore.session.Session()
    assert (with_shared_loader(first).get_component("data_loader")
            is with_shared_loader(second).get_component("data_loader"))
    trimmed = with_shared_loader(botocore.session.Session(), trimmed=True)
    assert (trimmed.get_component("data_loader")
            is not first.get_component("data_loader"))
    assert "elasticloadbalancing" in ENDPOINT_SERVICES
