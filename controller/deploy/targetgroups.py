"""Target group convergence: create, health check, attributes, tags."""

from __future__ import annotations

from typing import Any

from controller.aws import AWSError
from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError, OwnershipConflict
from controller.deploy.normalize import api_health_check, health_check_differs
from controller.deploy.tags import as_api_tags, converge_tags
from controller.model import TARGET_GROUP, TargetGroup

# Properties AWS cannot change on an existing target group: the identity rules replace a target
# group whose values differ, so a mismatch here is a bug, reported rather than papered over.
# The port is not one of them (see identity.compatible_target_group).
_IMMUTABLE = (("Protocol", "protocol"), ("TargetType", "target_type"))


async def converge_target_group(run: DeployRun, resource_id: str, tg: TargetGroup,
                                current: dict[str, Any] | None,
                                current_tags: dict[str, str]) -> str:
    desired_tags = run.desired_tags(resource_id, tg.tags)
    health = api_health_check(tg.health_check)
    if current is None:
        current, current_tags = await _create(run, resource_id, tg, health, desired_tags)
    arn: str = current["TargetGroupArn"]
    for api_key, attr in _IMMUTABLE:
        if str(current.get(api_key)) != str(getattr(tg, attr)):
            raise DeployError(
                f"target group {tg.name}: {api_key} is {current.get(api_key)} in AWS but "
                f"{getattr(tg, attr)} in the model, and cannot be changed in place")
    if health_check_differs(health, current):
        await run.calls.call("ModifyTargetGroup", TargetGroupArn=arn, **health)
    await converge_tags(run.calls, run.tracking, arn, current_tags, desired_tags)
    if tg.attributes:
        resp = await run.calls.call("DescribeTargetGroupAttributes", TargetGroupArn=arn)
        have = {a["Key"]: a.get("Value", "") for a in resp.get("Attributes", [])}
        changed = {k: v for k, v in tg.attributes.items() if have.get(k) != v}
        if changed:
            await run.calls.call(
                "ModifyTargetGroupAttributes", TargetGroupArn=arn,
                Attributes=[{"Key": k, "Value": v} for k, v in sorted(changed.items())])
    run.set_status(TARGET_GROUP, resource_id, "targetGroupARN", arn)
    return arn


async def _create(run: DeployRun, resource_id: str, tg: TargetGroup, health: dict[str, Any],
                  tags: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    params: dict[str, Any] = {
        "Name": tg.name, "Protocol": tg.protocol, "Port": tg.port, "VpcId": run.vpc_id,
        "TargetType": tg.target_type, "IpAddressType": tg.ip_address_type,
        "Tags": as_api_tags(tags), **health,
    }
    if tg.protocol_version is not None:
        params["ProtocolVersion"] = tg.protocol_version
    if tg.target_control_port is not None:
        params["TargetControlPort"] = tg.target_control_port
    try:
        resp = await run.calls.call("CreateTargetGroup", **params)
        created: dict[str, Any] = resp["TargetGroups"][0]
        return created, tags
    except AWSError as exc:
        if exc.code != "DuplicateTargetGroupName":
            raise
    # Someone (a crashed earlier run, most likely) created it after our lookup; adopt it only if
    # its tags say it is ours.
    found = await run.reader.target_groups(names=[tg.name])
    if not found:
        raise DeployError(f"target group {tg.name}: duplicate name but not found")
    arn = found[0]["TargetGroupArn"]
    resp = await run.calls.call("DescribeTags", ResourceArns=[arn])
    tags_now = {t["Key"]: t.get("Value", "") for d in resp.get("TagDescriptions", [])
                for t in d.get("Tags", [])}
    if run.tracking.resource_id(tags_now) != resource_id:
        raise OwnershipConflict(
            f"target group name {tg.name} is taken by a target group this stack does not own")
    return found[0], tags_now
