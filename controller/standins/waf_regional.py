"""AWS WAF Classic Regional (`waf-regional`, JSON protocol, `AWSWAF_Regional_20161128`), which
moto does not have: just what the controller calls and a test needs, answered by the fault
proxy as the WAF Regional API reference documents.

- `GetChangeToken`, `CreateWebACL` (Name, MetricName, DefaultAction, ChangeToken; the name must
  be new: `WAFDisallowedNameException`), `ListWebACLs`;
- `AssociateWebACL` (WebACLId, ResourceArn): an unknown web ACL is `WAFNonexistentItemException`,
  a resource that is not an ALB or an API Gateway stage `WAFInvalidParameterException`; it
  replaces the resource's earlier association;
- `DisassociateWebACL` (ResourceArn), `GetWebACLForResource` (ResourceArn: `WebACLSummary`, or
  nothing when none is associated);
- a load balancer deleted through the proxy loses its association, as AWS drops it.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from controller.standins.aws_wire import AWSRequest, error_response

SERVICE = "waf-regional"
_RESOURCE = re.compile(r"arn:[a-z0-9-]+:(elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer/app/"
                       r"[^/]+/[0-9a-f]+|apigateway:[a-z0-9-]+::/restapis/[^/]+/stages/\S+)")
_CONTENT_TYPE = "application/x-amz-json-1.1"


@dataclass(frozen=True)
class WafAnswer:
    status: int
    content_type: str
    body: bytes
    outcome: str  # "ok" or the error code


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class WAFRegional:
    """The web ACLs (id → name) and associations (resource ARN → web ACL id) of the stand-in,
    for one account and region; tests read and change them directly too."""

    web_acls: dict[str, str] = field(default_factory=dict)
    associations: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def handles(aws: AWSRequest) -> bool:
        return aws.service == SERVICE

    def create_web_acl(self, name: str) -> str:
        if name in self.web_acls.values():
            raise _Refused("WAFDisallowedNameException",
                           f"A web ACL named {name} already exists")
        web_acl_id = str(uuid.uuid4())
        self.web_acls[web_acl_id] = name
        return web_acl_id

    def association(self, resource_arn: str) -> str | None:
        return self.associations.get(resource_arn)

    def observe(self, aws: AWSRequest, status: int) -> None:
        """A load balancer deleted (through the proxy) takes its association with it."""
        if aws.operation == "DeleteLoadBalancer" and status < 300:
            self.associations.pop(str(aws.params.get("LoadBalancerArn", "")), None)

    def answer(self, aws: AWSRequest, body: bytes) -> WafAnswer:
        try:
            params = json.loads(body or b"{}")
            if not isinstance(params, dict):
                raise _Refused("WAFInvalidParameterException", "The request body is not an "
                               "object")
            result = self._operation(aws.operation, params)
        except (_Refused, ValueError) as exc:
            code, message = ((exc.code, exc.message) if isinstance(exc, _Refused)
                             else ("SerializationException", "The request body is not JSON"))
            content_type, payload = error_response(aws, code, message)
            return WafAnswer(400, content_type, payload, code)
        return WafAnswer(200, _CONTENT_TYPE, json.dumps(result).encode(), "ok")

    def _operation(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "GetChangeToken":
            return {"ChangeToken": str(uuid.uuid4())}
        if operation == "CreateWebACL":
            name = _required(params, "Name")
            _required(params, "ChangeToken")
            web_acl_id = self.create_web_acl(name)
            return {"WebACL": {"WebACLId": web_acl_id, "Name": name,
                               "MetricName": str(params.get("MetricName", "")),
                               "DefaultAction": params.get("DefaultAction") or {},
                               "Rules": []},
                    "ChangeToken": params["ChangeToken"]}
        if operation == "ListWebACLs":
            return {"WebACLs": [{"WebACLId": i, "Name": n} for i, n in self.web_acls.items()]}
        if operation == "AssociateWebACL":
            web_acl_id = _required(params, "WebACLId")
            resource = self._resource(params)
            if web_acl_id not in self.web_acls:
                raise _Refused("WAFNonexistentItemException",
                               "The referenced item does not exist.")
            self.associations[resource] = web_acl_id
            return {}
        if operation == "DisassociateWebACL":
            self.associations.pop(self._resource(params), None)
            return {}
        if operation == "GetWebACLForResource":
            found = self.associations.get(self._resource(params))
            if found is None or found not in self.web_acls:
                return {}
            return {"WebACLSummary": {"WebACLId": found, "Name": self.web_acls[found]}}
        raise _Refused("InvalidAction", f"The stand-in has no {operation}")

    @staticmethod
    def _resource(params: dict[str, Any]) -> str:
        resource = _required(params, "ResourceArn")
        if _RESOURCE.fullmatch(resource) is None:
            raise _Refused("WAFInvalidParameterException",
                           f"The resource ARN {resource} is not an Application Load Balancer "
                           "or an API Gateway stage")
        return resource


def _required(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise _Refused("WAFInvalidParameterException", f"{name} is required")
    return value


__all__ = ["SERVICE", "WAFRegional", "WafAnswer"]
