"""Just enough of the AWS wire protocols to recognise a request, read its form, and fake an
answer: query (ELBv2), ec2 (EC2) and JSON (ACM)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

_CREDENTIAL_SCOPE = re.compile(
    r"Credential=(?P<key>[^/,\s]+)/[^/]+/(?P<region>[^/]+)/(?P<service>[^/]+)/")
_QUERY_NAMESPACES = {
    "elbv2": "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/",
    "elb": "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/",
}
# Signing names that differ from the botocore client name.
_SIGNING_ALIASES = {"tagging": "resourcegroupstaggingapi"}
_READ_ONLY_PREFIXES = ("Describe", "List", "Get")
_TARGET_MEMBER = re.compile(r"Targets\.member\.(?P<n>\d+)\.(?P<field>Id|Port|AvailabilityZone)")

# Default HTTP status per error code; everything else is a client error (400).
ERROR_STATUS = {
    "ServiceUnavailable": 503,
    "ServiceUnavailableException": 503,
    "InternalFailure": 500,
    "InternalError": 500,
    "InternalServerError": 500,
}


@dataclass(frozen=True)
class AWSRequest:
    """What the proxy understood of one request."""

    service: str  # botocore client name: elbv2, ec2, acm, ... ("" if unknown)
    operation: str  # PascalCase API name ("" if unknown)
    protocol: str  # "query", "ec2" or "json"
    region: str
    params: Mapping[str, Any] = field(default_factory=dict)
    access_key: str = ""  # moto picks the account from it

    @property
    def mutating(self) -> bool:
        # STS's AssumeRole hands out credentials and changes nothing in the account.
        return (not self.operation.startswith(_READ_ONLY_PREFIXES)
                and (self.service, self.operation) != ("sts", "AssumeRole"))


def identify(headers: Mapping[str, str], body: bytes, query: Mapping[str, str]) -> AWSRequest:
    """Recognise service, operation and a few parameters of a SigV4-signed request."""
    scope = _CREDENTIAL_SCOPE.search(headers.get("Authorization", ""))
    signing_name = scope.group("service") if scope else ""
    signing_name = _SIGNING_ALIASES.get(signing_name, signing_name)
    region = scope.group("region") if scope else ""
    access_key = scope.group("key") if scope else ""
    target = headers.get("X-Amz-Target", "")
    if target:
        return AWSRequest(service=signing_name, operation=target.rpartition(".")[2],
                          protocol="json", region=region, access_key=access_key)
    form = request_form(headers, body, query)
    operation = form.get("Action", "")
    service = signing_name
    if signing_name == "elasticloadbalancing":
        service = "elbv2" if form.get("Version") == "2015-12-01" else "elb"
    protocol = "ec2" if signing_name == "ec2" else "query"
    return AWSRequest(service=service, operation=operation, protocol=protocol, region=region,
                      params=_interesting_params(operation, form), access_key=access_key)


def request_form(headers: Mapping[str, str], body: bytes,
                 query: Mapping[str, str]) -> dict[str, str]:
    """The parameters of a query- or ec2-protocol request (URL query and form body)."""
    form: dict[str, str] = dict(query)
    if body and "x-www-form-urlencoded" in headers.get("Content-Type", ""):
        form.update({k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"),
                                                  keep_blank_values=True).items()})
    return form


def target_members(form: Mapping[str, str]) -> list[dict[str, str]]:
    """`Targets.member.N.{Id,Port,AvailabilityZone}`, in member order."""
    members: dict[int, dict[str, str]] = {}
    for key, value in form.items():
        match = _TARGET_MEMBER.fullmatch(key)
        if match:
            members.setdefault(int(match.group("n")), {})[match.group("field")] = value
    return [m for _, m in sorted(members.items())]


def _interesting_params(operation: str, form: Mapping[str, str]) -> dict[str, Any]:
    """The parameters a test asserts on: which targets moved, on which resources (by ARN, or
    by name for lookups by name)."""
    params: dict[str, Any] = {}
    for key in ("TargetGroupArn", "LoadBalancerArn", "ListenerArn", "RuleArn"):
        if key in form:
            params[key] = form[key]
    # lists: `<key>.member.<n>`
    for key in ("TargetGroupArns", "ResourceArns", "LoadBalancerArns", "Names"):
        found = [(int(k.rsplit(".", 1)[1]), v) for k, v in form.items()
                 if k.startswith(f"{key}.member.") and k.rsplit(".", 1)[1].isdigit()]
        if found:
            params[key] = [v for _, v in sorted(found)]
    if operation in ("RegisterTargets", "DeregisterTargets"):
        params["Targets"] = [
            f"{m['Id']}:{m['Port']}" if "Port" in m else m.get("Id", "")
            for m in target_members(form)
        ]
    return params


def error_code_of(protocol: str, status: int, body: bytes) -> str:
    """The error code of an upstream error answer ("" if none could be read)."""
    if status < 300:
        return ""
    text = body.decode("utf-8", "replace")
    if protocol == "json":
        try:
            data = json.loads(text)
        except ValueError:
            return ""
        code = str(data.get("__type", "")) if isinstance(data, dict) else ""
        return code.rpartition("#")[2]
    match = re.search(r"<Code>([^<]*)</Code>", text)
    return match.group(1) if match else ""


def error_response(request: AWSRequest, code: str, message: str) -> tuple[str, bytes]:
    """(content type, body) of an AWS error answer in the request's protocol."""
    request_id = str(uuid.uuid4())
    if request.protocol == "json":
        body = json.dumps({"__type": code, "message": message}).encode()
        return "application/x-amz-json-1.1", body
    if request.protocol == "ec2":
        xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
               f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
               f"</Error></Errors><RequestID>{request_id}</RequestID></Response>")
        return "text/xml", xml.encode()
    namespace = _QUERY_NAMESPACES.get(request.service, "")
    xmlns = f' xmlns="{namespace}"' if namespace else ""
    kind = "Receiver" if ERROR_STATUS.get(code, 400) >= 500 else "Sender"
    xml = (f"<ErrorResponse{xmlns}><Error><Type>{kind}</Type><Code>{escape(code)}</Code>"
           f"<Message>{escape(message)}</Message></Error>"
           f"<RequestId>{request_id}</RequestId></ErrorResponse>")
    return "text/xml", xml.encode()


def query_response(service: str, operation: str, result: str) -> tuple[str, bytes]:
    """(content type, body) of a successful query-protocol answer; `result` is the XML inside
    `<{operation}Result>`."""
    namespace = _QUERY_NAMESPACES.get(service, "")
    xmlns = f' xmlns="{namespace}"' if namespace else ""
    xml = (f"<{operation}Response{xmlns}><{operation}Result>{result}</{operation}Result>"
           f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
           f"</{operation}Response>")
    return "text/xml", xml.encode()
