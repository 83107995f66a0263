"""Where the controller runs when the flags do not say (`controller/aws/discovery.py`): the VPC
with `--aws-vpc-tags`, else from the instance metadata service (IMDSv2, the local stand-in),
and the region from it; each failure one line naming the flag that settles it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from controller import app
from controller.aws import AWSClientPool
from controller.aws.discovery import (
    DiscoveryError,
    InstanceMetadata,
    MetadataUnavailable,
    discover_vpc,
    vpc_by_tags,
)
from controller.config import ConfigError, parse_config
from controller.standins import AwsSeed
from controller.standins.imds import Instance, InstanceMetadataStandIn
from runtime.clock import FakeClock
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.waiting import eventually


@pytest.fixture
async def imds(aws_seed: AwsSeed, monkeypatch: pytest.MonkeyPatch
               ) -> AsyncIterator[InstanceMetadataStandIn]:
    """The instance's metadata service, on (the AWS fixtures turn it off, so that botocore
    never looks for credentials there)."""
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    async with InstanceMetadataStandIn(Instance(vpc_id=aws_seed.vpc_id,
                                                region=aws_seed.region)) as standin:
        yield standin


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        yield c


async def test_the_stand_in_requires_a_token_as_imdsv2_does() -> None:
    clock = FakeClock()
    async with InstanceMetadataStandIn(Instance(vpc_id="vpc-0123456789abcdef0"),
                                       clock=clock) as standin, aiohttp.ClientSession() as http:
        mac = standin.url + "/latest/meta-data/mac"
        async with http.get(mac) as answer:
            assert answer.status == 401  # IMDSv1: no token, no answer
        token_url = standin.url + "/latest/api/token"
        async with http.put(token_url) as answer:
            assert answer.status == 400  # no TTL
        async with http.put(token_url, headers={
                "X-aws-ec2-metadata-token-ttl-seconds": "21601"}) as answer:
            assert answer.status == 400
        async with http.put(token_url, headers={"X-aws-ec2-metadata-token-ttl-seconds": "60",
                                                "X-Forwarded-For": "10.0.0.1"}) as answer:
            assert answer.status == 403
        async with http.put(token_url, headers={
                "X-aws-ec2-metadata-token-ttl-seconds": "60"}) as answer:
            assert answer.status == 200
            assert answer.headers["X-aws-ec2-metadata-token-ttl-seconds"] == "60"
            token = await answer.text()
        async with http.get(mac, headers={"X-aws-ec2-metadata-token": token}) as answer:
            assert (answer.status, await answer.text()) == (200, "0e:12:34:56:78:9a")
        await clock.advance(61)
        async with http.get(mac, headers={"X-aws-ec2-metadata-token": token}) as answer:
            assert answer.status == 401  # expired


async def test_the_vpc_and_region_come_from_the_metadata_service(
        imds: InstanceMetadataStandIn, aws_seed: AwsSeed) -> None:
    metadata = InstanceMetadata.configured({"ec2imds": imds.url})
    assert metadata is not None
    assert await metadata.vpc_id() == aws_seed.vpc_id
    assert await metadata.region() == aws_seed.region
    assert [m for m, _ in imds.requests if m == "PUT"]  # a token first, every time
    assert ("GET", "/latest/meta-data/network/interfaces/macs/0e:12:34:56:78:9a/vpc-id") \
        in imds.requests


async def test_a_metadata_service_that_does_not_answer_is_one_line(
        aws_pool: AWSClientPool, imds: InstanceMetadataStandIn) -> None:
    imds.unavailable = True
    metadata = InstanceMetadata(endpoint=imds.url)
    with pytest.raises(MetadataUnavailable, match="answered 503"):
        await metadata.vpc_id()
    with pytest.raises(DiscoveryError) as info:
        await discover_vpc(aws_pool, tags={}, metadata=metadata)
    assert str(info.value) == (
        "--aws-vpc-id: not given, and the instance metadata service did not tell the VPC "
        "(PUT /latest/api/token answered 503); give --aws-vpc-id or --aws-vpc-tags")
    closed = InstanceMetadata(endpoint="http://127.0.0.1:9", timeout=0.5)
    with pytest.raises(MetadataUnavailable, match=r"127\.0\.0\.1:9"):
        await closed.vpc_id()


async def test_hostile_answers_are_refused(aws_seed: AwsSeed) -> None:
    async with InstanceMetadataStandIn(Instance(vpc_id="vpc-../../x")) as standin:
        with pytest.raises(MetadataUnavailable, match="is not a VPC id"):
            await InstanceMetadata(endpoint=standin.url).vpc_id()


async def test_the_one_vpc_with_the_tags(aws_pool: AWSClientPool, aws_seed: AwsSeed,
                                         aws_inspector: AwsInspector) -> None:
    """As upstream: a DescribeVpcs filter per tag; exactly one VPC must match."""
    mark = uuid.uuid4().hex
    await aws_inspector.call("ec2", "CreateTags", Resources=[aws_seed.vpc_id],
                             Tags=[{"Key": "lbc-test", "Value": mark},
                                   {"Key": "team", "Value": "web"}])
    assert await vpc_by_tags(aws_pool, {"lbc-test": mark, "team": "web"}) == aws_seed.vpc_id
    with pytest.raises(DiscoveryError, match=f"^--aws-vpc-tags: no VPC has the tags "
                       f"lbc-test={mark},team=db$"):
        await vpc_by_tags(aws_pool, {"lbc-test": mark, "team": "db"})
    other = await aws_inspector.call("ec2", "CreateVpc", CidrBlock="10.99.0.0/16")
    await aws_inspector.call("ec2", "CreateTags", Resources=[other["Vpc"]["VpcId"]],
                             Tags=[{"Key": "lbc-test", "Value": mark}])
    with pytest.raises(DiscoveryError, match=r"^--aws-vpc-tags: several VPCs have the tags"):
        await vpc_by_tags(aws_pool, {"lbc-test": mark})
    # the tags win over the metadata service, as upstream's order has it
    assert await discover_vpc(aws_pool, tags={"lbc-test": mark, "team": "web"},
                              metadata=InstanceMetadata(endpoint="http://127.0.0.1:9")
                              ) == aws_seed.vpc_id


def _without_vpc_and_region(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--aws-vpc-id", "--aws-region"):
            skip = True
        else:
            out.append(arg)
    return out


async def test_aiolbc_run_finds_its_region_and_vpc_in_the_metadata_service(
        cluster: Cluster, imds: InstanceMetadataStandIn,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    argv = _without_vpc_and_region(cluster.argv(f"--aws-api-endpoints=ec2imds={imds.url}"))
    config = await app.locate_region(parse_config(argv))
    assert config.aws.region == cluster.seed.region
    async with AWSClientPool(app.aws_settings(config)) as pool:
        config = await app.locate_vpc(config, pool)
    assert config.aws.vpc_id == cluster.seed.vpc_id

    # And the controller so started serves a Service in that VPC.
    await cluster.nlb_service("echo")
    run = await cluster.run(f"--aws-api-endpoints=ec2imds={imds.url}")
    try:
        async def deployed() -> bool:
            lbs = await cluster.aws.load_balancers()
            return any(lb.get("VpcId") == cluster.seed.vpc_id for lb in lbs)
        await eventually(deployed, timeout=60)
    finally:
        await run.kill()


async def test_aiolbc_run_without_a_vpc_it_can_find_is_one_line(
        cluster: Cluster, imds: InstanceMetadataStandIn) -> None:
    imds.unavailable = True
    argv = _without_vpc_and_region(cluster.argv(f"--aws-api-endpoints=ec2imds={imds.url}",
                                                "--aws-region", cluster.seed.region))
    config = await app.locate_region(parse_config(argv))
    async with AWSClientPool(app.aws_settings(config)) as pool:
        with pytest.raises(ConfigError, match=r"^--aws-vpc-id: not given, and the instance "
                           r"metadata service did not tell the VPC \(PUT /latest/api/token "
                           r"answered 503\); give --aws-vpc-id or --aws-vpc-tags$"):
            await app.locate_vpc(config, pool)
