"""What AWS and Kubernetes accept of `aiolbc run`'s values, checked before anything starts: tag
keys and values (ELBv2's rules), object names (Kubernetes' DNS-1123 and qualified-name rules),
cluster and region names. Each check returns None when the value is fine, else one line saying
why: the `check=` of a flag's declaration (runtime/flags.py), which prefixes the flag. (Annotation
values have their own rules, in validators.py.)"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

# ELBv2's Tag rules (the API reference's TagKey/TagValue): `^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$`.
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
TAGS_PER_RESOURCE = 50
RESERVED_TAG_PREFIX = "aws:"
_TAG_PUNCTUATION = frozenset("_.:/=+-@")
_TAG_CHARACTERS = "letters, digits, spaces and _ . : / = + - @"

# The keys the controller writes itself to recognise what it owns; upstream refuses them in
# --default-tags and --external-managed-tags (pkg/config/controller_config.go).
TRACKING_TAG_KEYS = frozenset({
    "elbv2.k8s.aws/cluster", "elbv2.k8s.aws/resource",
    "ingress.k8s.aws/stack", "ingress.k8s.aws/resource",
    "service.k8s.aws/stack", "service.k8s.aws/resource",
})
# Every managed resource carries the cluster tag and one kind's stack and resource tags.
TRACKING_TAGS_PER_RESOURCE = 3
MAX_DEFAULT_TAGS = TAGS_PER_RESOURCE - TRACKING_TAGS_PER_RESOURCE

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253

# EKS's cluster name rule (alphanumerics, '-' and '_', starting alphanumeric, at most 100
# characters) plus '.', because self-managed clusters (kops) are named by DNS names; both kinds
# tag their subnets `kubernetes.io/cluster/<name>`, a tag key that must stay within 128
# characters.
CLUSTER_NAME_MAX = 100
_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]*")
# us-west-2, us-gov-west-1, cn-north-1, us-isob-east-1, eusc-de-east-1.
_REGION = re.compile(r"[a-z]{2,4}(-[a-z]+)+-[0-9]{1,2}")


def _quote(text: str) -> str:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return repr(shown)


def _tag_text_ok(text: str) -> bool:
    return all(ch in _TAG_PUNCTUATION or unicodedata.category(ch)[0] in "LZN" for ch in text)


def tag_key_problem(key: str) -> str | None:
    if not 1 <= len(key) <= TAG_KEY_MAX:
        return f"tag key {_quote(key)} is {len(key)} characters long (AWS allows 1 to " \
               f"{TAG_KEY_MAX})"
    if key.lower().startswith(RESERVED_TAG_PREFIX):
        return f"tag key {_quote(key)} starts with {RESERVED_TAG_PREFIX!r}, which AWS reserves"
    if not _tag_text_ok(key):
        return f"tag key {_quote(key)} has characters AWS does not allow (only " \
               f"{_TAG_CHARACTERS})"
    if key in TRACKING_TAG_KEYS:
        return f"tag key {_quote(key)} is a tracking tag that the controller sets itself"
    return None


def tag_value_problem(key: str, value: str) -> str | None:
    if len(value) > TAG_VALUE_MAX:
        return f"the value of tag {_quote(key)} is {len(value)} characters long (AWS allows " \
               f"at most {TAG_VALUE_MAX})"
    if not _tag_text_ok(value):
        return f"the value of tag {_quote(key)} has characters AWS does not allow (only " \
               f"{_TAG_CHARACTERS})"
    return None


def tags_problem(tags: Mapping[str, str]) -> str | None:
    """Tags the controller adds to every resource it creates, next to its tracking tags."""
    for key, value in tags.items():
        problem = tag_key_problem(key) or tag_value_problem(key, value)
        if problem:
            return problem
    if len(tags) > MAX_DEFAULT_TAGS:
        return f"{len(tags)} tags given; at most {MAX_DEFAULT_TAGS} fit beside the " \
               f"{TRACKING_TAGS_PER_RESOURCE} tracking tags (AWS allows {TAGS_PER_RESOURCE} " \
               "per resource)"
    return None


def tag_keys_problem(keys: Iterable[str]) -> str | None:
    for key in keys:
        problem = tag_key_problem(key)
        if problem:
            return problem
    return None


def dns_label_problem(name: str) -> str | None:
    """A namespace name (RFC 1123 label)."""
    if len(name) > LABEL_MAX:
        return f"{_quote(name)} is longer than {LABEL_MAX} characters"
    if not _LABEL.fullmatch(name):
        return f"{_quote(name)} is not a lowercase RFC 1123 label (lower case alphanumeric " \
               "characters or '-', starting and ending with an alphanumeric character)"
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """An object name such as an IngressClass's or a Lease's (RFC 1123 subdomain)."""
    if len(name) > SUBDOMAIN_MAX:
        return f"{_quote(name)} is longer than {SUBDOMAIN_MAX} characters"
    if not _SUBDOMAIN.fullmatch(name):
        return f"{_quote(name)} is not a lowercase RFC 1123 subdomain (lower case " \
               "alphanumeric characters, '-' or '.', starting and ending with an alphanumeric " \
               "character)"
    return None


def qualified_name_problem(name: str) -> str | None:
    """A label-style key with an optional DNS-subdomain prefix, as `spec.loadBalancerClass`
    takes (`example.com/internal-vip`)."""
    prefix, slash, rest = name.rpartition("/")
    if slash:
        if not prefix:
            return f"{_quote(name)} has an empty prefix before '/'"
        if dns_subdomain_problem(prefix):
            return f"the prefix of {_quote(name)} is not a lowercase RFC 1123 subdomain"
    if not rest:
        return f"{_quote(name)} has no name part"
    if len(rest) > LABEL_MAX:
        return f"the name part of {_quote(name)} is longer than {LABEL_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(rest):
        return f"{_quote(name)} is not a qualified name (alphanumerics, '-', '_' or '.', " \
               "starting and ending with an alphanumeric, optionally prefixed by a DNS " \
               "subdomain and '/')"
    return None


def label_problem(text: str) -> str | None:
    """`key=value`, a label a Kubernetes object can carry (empty: no label)."""
    if not text:
        return None
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        return f"{_quote(text)} must be in key=value format"
    problem = qualified_name_problem(key)
    if problem:
        return problem
    if len(value) > LABEL_MAX or not _QUALIFIED_NAME.fullmatch(value):
        return f"{_quote(value)} is not a label value (up to {LABEL_MAX} alphanumerics, '-', " \
               "'_' or '.', starting and ending with an alphanumeric)"
    return None


def cluster_name_problem(name: str) -> str | None:
    if not 1 <= len(name) <= CLUSTER_NAME_MAX:
        return f"{_quote(name)} is {len(name)} characters long (1 to {CLUSTER_NAME_MAX} " \
               "allowed)"
    if not _CLUSTER_NAME.fullmatch(name):
        return f"{_quote(name)} may contain only letters, digits, '-', '_' and '.', and must " \
               "start with a letter or digit"
    return None


def controller_id_problem(name: str) -> str | None:
    """A controller's id: an RFC 1123 label, short enough that a rule description naming the
    cluster and the controller stays within EC2's 255 characters."""
    if not name:
        return None
    return dns_label_problem(name)


def region_problem(region: str) -> str | None:
    if not _REGION.fullmatch(region):
        return f"{_quote(region)} is not an AWS region name (such as us-west-2)"
    return None
