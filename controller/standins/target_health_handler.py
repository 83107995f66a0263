"""The fault proxy's take-over of ELBv2 target health: RegisterTargets and DeregisterTargets go
to moto and, when moto accepts them, move the `TargetHealth` model; DescribeTargetHealth is
answered from the model, in the query protocol, as AWS would.

What the model needs to know about a target group (its port, health-check settings, whether a
load balancer forwards to it, its deregistration delay) is asked of moto with an aiobotocore
client of the proxy's own, so those look-ups never show in the proxy's log. Whether a group is
in use is worked out from the listeners and rules of every load balancer (moto's
`LoadBalancerArns` never forgets a listener and misses modified ones), cached until a
listener, rule or load balancer changes through the proxy.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.exceptions import ClientError

from controller.aws.loader import with_shared_loader
from controller.standins.aws_wire import (
    AWSRequest,
    error_response,
    query_response,
    target_members,
)
from controller.standins.target_health import (
    DEFAULT_DEREGISTRATION_DELAY,
    GroupFacts,
    Health,
    TargetDescription,
    TargetHealth,
    TargetSpec,
)

TAKEN_OVER = frozenset({"DescribeTargetHealth", "RegisterTargets", "DeregisterTargets"})
# Successful calls after which the load balancers may forward to other target groups.
_CHANGES_ROUTING = re.compile(r"(Create|Modify|Delete)(Listener|Rule|LoadBalancer)|"
                              r"DeleteTargetGroup|SetRulePriorities")
_DEREGISTRATION_DELAY = "deregistration_delay.timeout_seconds"


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    outcome: str  # "ok" or the error code


class TargetHealthHandler:
    def __init__(self, model: TargetHealth, upstream_url: str) -> None:
        self.model = model
        self._upstream = upstream_url
        self._session = with_shared_loader(AioSession())
        self._clients: dict[tuple[str, str], Any] = {}
        self._exits = contextlib.AsyncExitStack()
        self._in_use: dict[tuple[str, str], frozenset[str]] = {}
        self._routing_generation = 0

    @staticmethod
    def handles(aws: AWSRequest) -> bool:
        return aws.service == "elbv2" and aws.operation in TAKEN_OVER

    async def close(self) -> None:
        self._clients.clear()
        await self._exits.aclose()

    def routing_changed(self) -> None:
        """Forget which target groups are in use (after changes made around the proxy)."""
        self._in_use.clear()
        self._routing_generation += 1

    def observe(self, aws: AWSRequest, status: int) -> None:
        """See every request moto answered, to keep the in-use view current."""
        if aws.service != "elbv2" or status >= 300:
            return
        if _CHANGES_ROUTING.fullmatch(aws.operation):
            self.routing_changed()
        if aws.operation == "DeleteTargetGroup":
            self.model.forget(str(aws.params.get("TargetGroupArn", "")))

    async def describe(self, aws: AWSRequest, form: Mapping[str, str]) -> Answer:
        arn = form.get("TargetGroupArn", "")
        if not arn:
            content_type, body = error_response(
                aws, "ValidationError", "1 validation error detected: Value null at "
                "'targetGroupArn' failed to satisfy constraint: Member must not be null")
            return Answer(400, content_type, body, "ValidationError")
        try:
            client = await self._client(aws)
            facts = await self._facts(client, aws, arn)
            at_moto = await client.describe_target_health(TargetGroupArn=arn)
        except ClientError as exc:
            if _error_code(exc) == "TargetGroupNotFound":
                self.model.forget(arn)
            return self._error(aws, exc)
        registered = [((d["Target"]["Id"], d["Target"].get("Port")),
                       Health(d["TargetHealth"]["State"], d["TargetHealth"].get("Reason"),
                              d["TargetHealth"].get("Description")))
                      for d in at_moto["TargetHealthDescriptions"]]
        requested = _specs(form) or None
        descriptions = self.model.describe(facts, registered, requested)
        # QUIC targets' server IDs (moto_quic) are moto's to keep: answered as moto has them.
        server_ids = {(d["Target"]["Id"], d["Target"].get("Port")): d["Target"]["QuicServerId"]
                      for d in at_moto["TargetHealthDescriptions"]
                      if d["Target"].get("QuicServerId")}
        result = ("<TargetHealthDescriptions>"
                  + "".join(_description_xml(d, server_ids.get((d.id, d.port)))
                            for d in descriptions)
                  + "</TargetHealthDescriptions>")
        content_type, body = query_response(aws.service, aws.operation, result)
        return Answer(200, content_type, body, "ok")

    async def changed(self, aws: AWSRequest, form: Mapping[str, str]) -> None:
        """moto accepted a RegisterTargets or DeregisterTargets."""
        arn = form.get("TargetGroupArn", "")
        targets = _specs(form)
        try:
            client = await self._client(aws)
            facts = await self._facts(client, aws, arn)
            if aws.operation == "RegisterTargets":
                self.model.registered(facts, targets)
                return
            attributes = await client.describe_target_group_attributes(TargetGroupArn=arn)
        except ClientError:
            return  # the group went away meanwhile; the next describe says so
        delay = next((float(a["Value"]) for a in attributes["Attributes"]
                      if a["Key"] == _DEREGISTRATION_DELAY), DEFAULT_DEREGISTRATION_DELAY)
        self.model.deregistered(facts, targets, delay_attribute=delay)

    # ---- moto look-ups -----------------------------------------------------------------------

    async def _client(self, aws: AWSRequest) -> Any:
        # moto keeps state per account (chosen by the access key) and region: ask as the caller.
        key = (aws.region, aws.access_key)
        client = self._clients.get(key)
        if client is None:
            client = await self._exits.enter_async_context(self._session.create_client(
                "elbv2", region_name=aws.region or "us-east-1", endpoint_url=self._upstream,
                aws_access_key_id=aws.access_key or "standin", aws_secret_access_key="standin",
                config=AioConfig(retries={"mode": "standard", "total_max_attempts": 3})))
            self._clients[key] = client
        return client

    async def _facts(self, client: Any, aws: AWSRequest, arn: str) -> GroupFacts:
        group = (await client.describe_target_groups(TargetGroupArns=[arn]))["TargetGroups"][0]
        in_use = arn in await self._groups_in_use(client, (aws.region, aws.access_key))
        threshold = int(group.get("HealthyThresholdCount") or 5)
        interval = int(group.get("HealthCheckIntervalSeconds") or 30)
        return GroupFacts(arn=arn, port=group.get("Port"), in_use=in_use,
                          health_check_enabled=bool(group.get("HealthCheckEnabled", True)),
                          health_check_port=group.get("HealthCheckPort"),
                          healthy_after=float(threshold * interval))

    async def _groups_in_use(self, client: Any, key: tuple[str, str]) -> frozenset[str]:
        cached = self._in_use.get(key)
        if cached is not None:
            return cached
        generation = self._routing_generation
        used: set[str] = set()
        async for page in client.get_paginator("describe_load_balancers").paginate():
            for balancer in page["LoadBalancers"]:
                async for listeners in client.get_paginator("describe_listeners").paginate(
                        LoadBalancerArn=balancer["LoadBalancerArn"]):
                    for listener in listeners["Listeners"]:
                        used |= _forwarded_to(listener.get("DefaultActions", []))
                        async for rules in client.get_paginator("describe_rules").paginate(
                                ListenerArn=listener["ListenerArn"]):
                            for rule in rules["Rules"]:
                                used |= _forwarded_to(rule.get("Actions", []))
        found = frozenset(used)
        if generation == self._routing_generation:  # no change while we looked
            self._in_use[key] = found
        return found

    @staticmethod
    def _error(aws: AWSRequest, exc: ClientError) -> Answer:
        code = _error_code(exc)
        message = str(exc.response.get("Error", {}).get("Message", code))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
        content_type, body = error_response(aws, code, message)
        return Answer(status, content_type, body, code)


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "InternalFailure"))


def _specs(form: Mapping[str, str]) -> list[TargetSpec]:
    specs = []
    for member in target_members(form):
        port = member.get("Port")
        specs.append(TargetSpec(id=member.get("Id", ""),
                                port=int(port) if port and port.isdigit() else None,
                                zone=member.get("AvailabilityZone")))
    return specs


def _forwarded_to(actions: Iterable[Mapping[str, Any]]) -> set[str]:
    arns = set()
    for action in actions:
        if action.get("Type") != "forward":
            continue
        if action.get("TargetGroupArn"):
            arns.add(str(action["TargetGroupArn"]))
        for weighted in (action.get("ForwardConfig") or {}).get("TargetGroups") or []:
            if weighted.get("TargetGroupArn"):
                arns.add(str(weighted["TargetGroupArn"]))
    return arns


def _element(name: str, value: object | None) -> str:
    return "" if value is None else f"<{name}>{escape(str(value))}</{name}>"


def _description_xml(description: TargetDescription, server_id: str | None = None) -> str:
    health = description.health
    return ("<member><Target>" + _element("Id", description.id)
            + _element("Port", description.port)
            + _element("AvailabilityZone", description.zone)
            + _element("QuicServerId", server_id) + "</Target>"
            + _element("HealthCheckPort", description.health_check_port)
            + "<TargetHealth>" + _element("State", health.state)
            + _element("Reason", health.reason) + _element("Description", health.description)
            + "</TargetHealth></member>")
