"""MutatingWebhookConfiguration and ValidatingWebhookConfiguration (admissionregistration.k8s.io
/v1): the defaults the real server fills in and the validation it applies on create and
update."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import urlsplit

from runtime.envtest.registry import ADMISSION_GROUP, ResourceType
from runtime.envtest.selectors import selector_problems
from runtime.envtest.status import bad_request

MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

Cause = tuple[str, str, str]


def is_configuration(rt: ResourceType) -> bool:
    return rt.group == ADMISSION_GROUP and rt.plural in (MUTATING, VALIDATING)


# -- defaults ---------------------------------------------------------------------------------


def _default(obj: dict[str, Any], key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The admissionregistration/v1 defaults, filled in when the object is decoded."""
    hooks = obj.get("webhooks")
    if not isinstance(hooks, list):
        return
    for hook in hooks:
        if not isinstance(hook, dict):
            continue
        _default(hook, "failurePolicy", "Fail")
        _default(hook, "matchPolicy", "Equivalent")
        _default(hook, "namespaceSelector", {})
        _default(hook, "objectSelector", {})
        _default(hook, "timeoutSeconds", 10)
        if rt.plural == MUTATING:
            _default(hook, "reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                _default(rule, "scope", "*")
        client = hook.get("clientConfig")
        service = client.get("service") if isinstance(client, dict) else None
        if isinstance(service, dict):
            _default(service, "port", 443)


# -- validation -------------------------------------------------------------------------------


_GO_TYPES = {list: "[]string", str: "string", int: "int32", dict: "object"}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _check_type(kind: str, path: str, value: Any, expected: type) -> None:
    """The decoding error Go gives for a field of the wrong JSON type."""
    if value is None:
        return
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if not ok:
        raise bad_request(f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                          f"{kind}.{path} of type {_GO_TYPES[expected]}")


def _strings(kind: str, path: str, value: Any) -> list[str]:
    _check_type(kind, path, value, list)
    for item in value or []:
        _check_type(kind, path, item, str)
    return list(value or [])


def _not_supported(path: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{v}"' for v in allowed)
    return (path, "FieldValueNotSupported",
            f'Unsupported value: "{value}": supported values: {listed}')


def _go_list(values: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _fully_qualified(path: str, name: str) -> list[Cause]:
    if not name:
        return [(path, "FieldValueRequired", "Required value")]
    name = name.removesuffix(".")
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        return [(path, "FieldValueInvalid", f'Invalid value: "{name}": a lowercase RFC 1123 '
                 "subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                 "[a-z0-9])?)*')")]
    if len(name.split(".")) < 3:
        return [(path, "FieldValueInvalid", f'Invalid value: "{name}": should be a domain with '
                 "at least three segments separated by dots")]
    return []


def _wildcard_mixed(path: str, values: list[str], what: str) -> list[Cause]:
    if len(values) > 1 and "*" in values:
        return [(path, "FieldValueInvalid", f"Invalid value: {_go_list(values)}: if '*' is "
                 f"present, must not specify other {what}")]
    return []


def _resource_problems(path: str, resources: list[str]) -> list[Cause]:
    if not resources:
        return [(path, "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    all_subs: set[str] = set()     # x/*
    all_resources: set[str] = set()  # */x
    plain = False
    for i, item in enumerate(resources):
        if not item:
            causes.append((f"{path}[{i}]", "FieldValueRequired", "Required value"))
            continue
        res, slash, sub = item.partition("/")
        if not slash:
            plain = plain or item != "*"
            continue
        if res in all_subs:
            causes.append((f"{path}[{i}]", "FieldValueInvalid", f'Invalid value: "{item}": if '
                           f"'{res}/*' is present, must not specify {item}"))
        if sub in all_resources:
            causes.append((f"{path}[{i}]", "FieldValueInvalid", f'Invalid value: "{item}": if '
                           f"'*/{sub}' is present, must not specify {item}"))
        if sub == "*":
            all_subs.add(res)
        if res == "*":
            all_resources.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        causes.append((path, "FieldValueInvalid", f"Invalid value: {_go_list(resources)}: if "
                       "'*/*' is present, must not specify other resources"))
    if "*" in resources and plain:
        causes.append((path, "FieldValueInvalid", f"Invalid value: {_go_list(resources)}: if "
                       "'*' is present, must not specify other resources without subresources"))
    return causes


def _rule_problems(kind: str, path: str, rule: Any) -> list[Cause]:
    _check_type(kind, path, rule, dict)
    rule = rule or {}
    ops = _strings(kind, f"{path}.operations", rule.get("operations"))
    groups = _strings(kind, f"{path}.apiGroups", rule.get("apiGroups"))
    versions = _strings(kind, f"{path}.apiVersions", rule.get("apiVersions"))
    resources = _strings(kind, f"{path}.resources", rule.get("resources"))
    _check_type(kind, f"{path}.scope", rule.get("scope"), str)
    causes: list[Cause] = []
    if not ops:
        causes.append((f"{path}.operations", "FieldValueRequired", "Required value"))
    causes += _wildcard_mixed(f"{path}.operations", ops, "operations")
    causes += [_not_supported(f"{path}.operations[{i}]", op, _OPERATIONS)
               for i, op in enumerate(ops) if op not in _OPERATIONS]
    if not groups:
        causes.append((f"{path}.apiGroups", "FieldValueRequired", "Required value"))
    causes += _wildcard_mixed(f"{path}.apiGroups", groups, "API groups")
    if not versions:
        causes.append((f"{path}.apiVersions", "FieldValueRequired", "Required value"))
    causes += _wildcard_mixed(f"{path}.apiVersions", versions, "API versions")
    causes += [(f"{path}.apiVersions[{i}]", "FieldValueRequired", "Required value")
               for i, v in enumerate(versions) if not v]
    causes += _resource_problems(f"{path}.resources", resources)
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        causes.append(_not_supported(f"{path}.scope", scope, _SCOPES))
    return causes


def _client_problems(kind: str, path: str, client: Any) -> list[Cause]:
    _check_type(kind, path, client, dict)
    client = client or {}
    url, service = client.get("url"), client.get("service")
    _check_type(kind, f"{path}.url", url, str)
    _check_type(kind, f"{path}.service", service, dict)
    _check_type(kind, f"{path}.caBundle", client.get("caBundle"), str)
    if client.get("caBundle") is not None:
        try:
            base64.b64decode(client["caBundle"], validate=True)
        except (binascii.Error, ValueError):
            raise bad_request(f"json: cannot unmarshal string into Go struct field {kind}."
                              f"{path}.caBundle of type []uint8: illegal base64 data") from None
    if (url is None) == (service is None):
        return [(path, "FieldValueRequired",
                 "Required value: exactly one of url or service is required")]
    form = "; desired format: https://host[/path]"
    causes: list[Cause] = []
    if url is not None:
        where = f"{path}.url"
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError as exc:
            return [(where, "FieldValueRequired",
                     f"Required value: url must be a valid URL: {exc}{form}")]
        if parts.scheme != "https":
            causes.append((where, "FieldValueInvalid", f'Invalid value: "{parts.scheme}": '
                           f"'https' is the only allowed URL scheme{form}"))
        if not parts.netloc:
            causes.append((where, "FieldValueInvalid",
                           f'Invalid value: "": host must be provided{form}'))
        if parts.username is not None:
            causes.append((where, "FieldValueInvalid", "Invalid value: user information is "
                           "not permitted in the URL"))
        if parts.fragment:
            causes.append((where, "FieldValueInvalid", f'Invalid value: "{parts.fragment}": '
                           "fragments are not permitted in the URL"))
        if parts.query:
            causes.append((where, "FieldValueInvalid", f'Invalid value: "{parts.query}": '
                           "query parameters are not permitted in the URL"))
        return causes
    where = f"{path}.service"
    for fld in ("name", "namespace", "path"):
        _check_type(kind, f"{where}.{fld}", service.get(fld), str)
    _check_type(kind, f"{where}.port", service.get("port"), int)
    if not service.get("name"):
        causes.append((f"{where}.name", "FieldValueRequired",
                       "Required value: service name is required"))
    if not service.get("namespace"):
        causes.append((f"{where}.namespace", "FieldValueRequired",
                       "Required value: service namespace is required"))
    port = service.get("port", 443)
    if not 1 <= port <= 65535:
        causes.append((f"{where}.port", "FieldValueInvalid", f"Invalid value: {port}: port is "
                       "not valid: must be between 1 and 65535, inclusive"))
    svc_path = service.get("path")
    if svc_path not in (None, "", "/"):
        if not svc_path.startswith("/"):
            causes.append((f"{where}.path", "FieldValueInvalid",
                           f'Invalid value: "{svc_path}": must start with a \'/\''))
        for i, step in enumerate(svc_path[1:].removesuffix("/").split("/")):
            if not step:
                causes.append((f"{where}.path", "FieldValueInvalid",
                               f'Invalid value: "{svc_path}": segment[{i}] may not be empty'))
    return causes


def _review_version_problems(kind: str, path: str, value: Any) -> list[Cause]:
    versions = _strings(kind, path, value)
    if not versions:
        return [(path, "FieldValueRequired",
                 f"Required value: must specify one of {', '.join(_REVIEW_VERSIONS)}")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append((f"{path}[{i}]", "FieldValueInvalid",
                           f'Invalid value: "{version}": duplicate version'))
        seen.add(version)
        if not _DNS1035_LABEL.match(version):
            causes.append((f"{path}[{i}]", "FieldValueInvalid",
                           f'Invalid value: "{version}": a DNS-1035 label must consist of lower '
                           "case alphanumeric characters or '-', start with an alphabetic "
                           "character, and end with an alphanumeric character"))
    if not seen & set(_REVIEW_VERSIONS):
        causes.append((path, "FieldValueInvalid", f"Invalid value: {_go_list(versions)}: must "
                       f"include at least one of {', '.join(_REVIEW_VERSIONS)}"))
    return causes


def problems(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """Validation causes, as the real server's validation words them; raises 400 for fields of
    the wrong JSON type, as decoding does there."""
    kind = rt.kind
    hooks = obj.get("webhooks")
    _check_type(kind, "webhooks", hooks, list)
    causes: list[Cause] = []
    names: set[str] = set()
    for i, hook in enumerate(hooks or []):
        path = f"webhooks[{i}]"
        _check_type(kind, path, hook, dict)
        hook = hook or {}
        name = hook.get("name")
        _check_type(kind, f"{path}.name", name, str)
        causes += _fully_qualified(f"{path}.name", name or "")
        rules = hook.get("rules")
        _check_type(kind, f"{path}.rules", rules, list)
        for j, rule in enumerate(rules or []):
            causes += _rule_problems(kind, f"{path}.rules[{j}]", rule)
        for fld, allowed in (("failurePolicy", ("Fail", "Ignore")),
                             ("matchPolicy", ("Equivalent", "Exact")),
                             ("reinvocationPolicy", ("IfNeeded", "Never"))):
            value = hook.get(fld)
            _check_type(kind, f"{path}.{fld}", value, str)
            if fld == "reinvocationPolicy" and rt.plural != MUTATING:
                continue
            if value is not None and value not in allowed:
                causes.append(_not_supported(f"{path}.{fld}", value, allowed))
        effects = hook.get("sideEffects")
        _check_type(kind, f"{path}.sideEffects", effects, str)
        if effects is None:
            causes.append((f"{path}.sideEffects", "FieldValueRequired",
                           f"Required value: must specify one of {', '.join(_NO_SIDE_EFFECTS)}"))
        elif effects not in _NO_SIDE_EFFECTS:
            causes.append(_not_supported(f"{path}.sideEffects", effects, _NO_SIDE_EFFECTS))
        timeout = hook.get("timeoutSeconds")
        _check_type(kind, f"{path}.timeoutSeconds", timeout, int)
        if timeout is not None and not 1 <= timeout <= 30:
            causes.append((f"{path}.timeoutSeconds", "FieldValueInvalid", f"Invalid value: "
                           f"{timeout}: the timeout value must be between 1 and 30 seconds"))
        for fld in ("namespaceSelector", "objectSelector"):
            causes += selector_problems(hook.get(fld), f"{path}.{fld}")
        causes += _client_problems(kind, f"{path}.clientConfig", hook.get("clientConfig"))
        causes += _review_version_problems(kind, f"{path}.admissionReviewVersions",
                                           hook.get("admissionReviewVersions"))
        if name:
            if name in names:
                causes.append((f"{path}.name", "FieldValueDuplicate",
                               f'Duplicate value: "{name}"'))
            names.add(name)
    return causes
