"""A group's ALB addons: the WAFv2 and WAF Classic web ACL associations and the Shield Advanced
protection, read from each member's annotations and IngressClassParams and merged across the
group with upstream's rules (v3.5.0 `pkg/ingress/model_build_load_balancer_addons.go`):

- WAFv2: a web ACL *name* (IngressClassParams `wafv2AclName` over the member's
  `wafv2-acl-name`; an empty one is not set) wins over every ARN; else an ARN
  (`wafv2AclArn` over `wafv2-acl-arn`; the annotation counts when present, even empty).
  Beyond upstream, class parameters are never overridden by an annotation: a member whose
  class gives `wafv2AclArn` has its own `wafv2-acl-name` ignored, and a `wafv2-acl-name`
  annotation in the group beside a class's ARN is a conflict (upstream lets the name win).
  `none` and an empty ARN ask for no web ACL: the association is removed.
- WAF Classic: `waf-acl-id`, else the deprecated `web-acl-id`; empty is not set; `none`
  removes the association.
- Shield: `shield-advanced-protection`, Go's ParseBool.
- Members that give different values are an error naming them (the group rule of
  `exclusions.py` then leaves a newcomer out and holds the group for an established member);
  no member giving a value leaves what AWS has alone.

Beyond upstream: a value that asks for something its flag turned off (`--enable-wafv2`,
`--enable-waf`, `--enable-shield`) stops the member (upstream ignores it silently); a value that
asks for nothing (`none`, empty, `false`) is then reported as not acted on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from controller.annotationreview import UNSUPPORTED, Finding
from controller.annotations import AnnotationError, AnnotationReader, quote
from controller.apis import INGRESS_ANNOTATION_PREFIX as PREFIX
from controller.ingress.groups import Member
from controller.ingress.merge import BuildError
from controller.model import ShieldProtection, WAFRegionalAssociation, WAFv2Association
from controller.model.addons import (
    WebACLByName,
    waf_id_problem,
    wafv2_arn_problem,
    wafv2_name_problem,
)

_Addon = TypeVar("_Addon", WAFv2Association, WAFRegionalAssociation, ShieldProtection)
NONE: Final = "none"
WAFV2_ARN: Final = PREFIX + "wafv2-acl-arn"
WAFV2_NAME: Final = PREFIX + "wafv2-acl-name"
SHIELD: Final = PREFIX + "shield-advanced-protection"


@dataclass(frozen=True, slots=True, kw_only=True)
class AddonSettings:
    """Upstream's switches (`--enable-waf`, `--enable-wafv2`, `--enable-shield`, declared in
    `settings.py`), on by default."""

    waf: bool = True
    wafv2: bool = True
    shield: bool = True


@dataclass(frozen=True)
class Addons:
    """The group's addons (None: nobody asked) and per-member findings for values a flag
    turned off that ask for nothing."""

    wafv2: WAFv2Association | None = None
    waf_regional: WAFRegionalAssociation | None = None
    shield: ShieldProtection | None = None
    findings: dict[str, tuple[Finding, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Given:
    value: str
    member: str
    where: str  # the key, or "IngressClassParams <name> spec.<field>"


def _merged(given: Sequence[_Given], what: str) -> _Given | None:
    first: _Given | None = None
    for item in given:
        if first is None:
            first = item
        elif item.value != first.value:
            raise BuildError(f"{what} conflicts within the group: {first.member} has "
                             f"{quote(first.value)} ({first.where}), {item.member} has "
                             f"{quote(item.value)} ({item.where})")
    return first


def _checked(key: str, raw: str, problem: str | None) -> str:
    if problem is not None and raw != NONE:
        raise AnnotationError(key, raw, problem)
    return raw


def _off(member: str, where: str, feature: str, switch: str) -> BuildError:
    return BuildError(f"Ingress {member}: {where} asks for {feature}, which this controller "
                      f"has turned off ({switch}=false); nothing is deployed for this Ingress "
                      "until it is removed or the flag is on")


def _ignored(key: str, switch: str) -> Finding:
    return Finding(key, UNSUPPORTED, f"annotation {key} is not acted on ({switch}=false); it "
                   "is ignored")


def _read(member: Member, names: list[_Given], arns: list[_Given], ids: list[_Given],
          shields: list[_Given]) -> None:
    reader = AnnotationReader.of(member.ingress, PREFIX)
    params = member.info.params if member.info else None
    where_params = f"IngressClassParams {params.name} spec." if params else ""
    ann_name = reader.get_str("wafv2-acl-name")
    ann_arn = reader.get_str("wafv2-acl-arn")
    if params is not None and params.wafv2_acl_name:
        names.append(_Given(params.wafv2_acl_name, member.key, where_params + "wafv2AclName"))
    elif params is not None and params.wafv2_acl_arn:
        pass  # the administrator's ARN: the member's own name may not override it
    elif ann_name:
        names.append(_Given(_checked(WAFV2_NAME, ann_name, wafv2_name_problem(ann_name)),
                            member.key, WAFV2_NAME))
    if params is not None and params.wafv2_acl_arn:
        arns.append(_Given(params.wafv2_acl_arn, member.key, where_params + "wafv2AclArn"))
    elif ann_arn is not None:
        arns.append(_Given(_checked(WAFV2_ARN, ann_arn, wafv2_arn_problem(ann_arn))
                           if ann_arn else "", member.key, WAFV2_ARN))
    # waf-acl-id when present (even empty), else the deprecated web-acl-id.
    classic, legacy = reader.lookup("waf-acl-id"), reader.lookup("web-acl-id")
    found = classic or legacy
    if found is not None and found[1]:
        key, raw = found
        ids.append(_Given(_checked(key, raw, waf_id_problem(raw)), member.key, key))
    protect = reader.get_bool("shield-advanced-protection")
    if protect is not None:
        shields.append(_Given(str(protect).lower(), member.key, SHIELD))


def build_addons(members: Sequence[Member], settings: AddonSettings) -> Addons:
    """Raises `BuildError` (one line) for a value that is not one, members that disagree, or
    a value a flag turned off."""
    names: list[_Given] = []
    arns: list[_Given] = []
    ids: list[_Given] = []
    shields: list[_Given] = []
    findings: dict[str, list[Finding]] = {}
    for member in members:
        try:
            _read(member, names, arns, ids, shields)
        except AnnotationError as exc:
            raise BuildError(f"Ingress {member.key}: {exc}") from None

    enforced = [a for a in arns if not a.where.startswith(PREFIX)]
    annotated = [n for n in names if n.where.startswith(PREFIX)]
    if annotated and enforced:
        # Upstream's names-over-ARNs rule would let one member's name replace the web ACL
        # another member's class enforces: refused instead.
        name = annotated[0]
        raise BuildError(f"the WAFv2 web ACL conflicts within the group: {enforced[0].member} "
                         f"has {quote(enforced[0].value)} ({enforced[0].where}), "
                         f"{name.member} has the name {quote(name.value)} ({name.where})")
    wafv2: WAFv2Association | None = None
    if names:
        chosen = _merged(names, "the WAFv2 web ACL name")
        assert chosen is not None
        web_acl: str | WebACLByName = ("" if chosen.value == NONE
                                       else WebACLByName(name=chosen.value))
        wafv2 = _switched(WAFv2Association(web_acl=web_acl), chosen, names, settings.wafv2,
                          "a WAFv2 web ACL association", "--enable-wafv2", findings)
    elif arns:
        chosen = _merged(arns, "the WAFv2 web ACL ARN")
        assert chosen is not None
        wafv2 = _switched(WAFv2Association(web_acl="" if chosen.value == NONE else chosen.value),
                          chosen, arns, settings.wafv2, "a WAFv2 web ACL association",
                          "--enable-wafv2", findings)
    regional: WAFRegionalAssociation | None = None
    chosen_id = _merged(ids, "the WAF Classic web ACL ID")
    if chosen_id is not None:
        regional = _switched(WAFRegionalAssociation(
            web_acl_id="" if chosen_id.value == NONE else chosen_id.value), chosen_id, ids,
            settings.waf, "a WAF Classic web ACL association", "--enable-waf", findings)
    shield: ShieldProtection | None = None
    chosen_shield = _merged(shields, "annotation " + SHIELD)
    if chosen_shield is not None:
        shield = _switched(ShieldProtection(enabled=chosen_shield.value == "true"),
                           chosen_shield, shields, settings.shield,
                           "Shield Advanced protection", "--enable-shield", findings)
    return Addons(wafv2, regional, shield, {k: tuple(v) for k, v in findings.items()})


def _switched(addon: _Addon, chosen: _Given, given: Sequence[_Given], enabled: bool,
              feature: str, switch: str, findings: dict[str, list[Finding]]) -> _Addon | None:
    """The addon, or with its flag off: None when it asks for nothing (each member's key
    reported as not acted on), else the member stopped."""
    if enabled:
        return addon
    if isinstance(addon, ShieldProtection):
        asks = addon.enabled
    elif isinstance(addon, WAFv2Association):
        asks = bool(addon.web_acl)
    else:
        asks = bool(addon.web_acl_id)
    if asks:
        raise _off(chosen.member, chosen.where, feature, switch)
    for item in given:
        if item.where.startswith(PREFIX):
            findings.setdefault(item.member, []).append(_ignored(item.where, switch))
    return None


__all__ = ["AddonSettings", "Addons", "build_addons"]
