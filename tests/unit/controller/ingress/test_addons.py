"""WAFv2, WAF Classic and Shield on a group's load balancer: upstream's reading and merge rules
(v3.5.0 `model_build_load_balancer_addons.go`), the flags, and what admission says."""

from __future__ import annotations

import dataclasses

import pytest

from controller.annotationreview import UNSUPPORTED
from controller.errors import InvalidInput
from controller.ingress.addons import AddonSettings
from controller.ingress.admission import admit
from controller.ingress.exclusions import settle
from controller.ingress.merge import BuildError
from controller.ingress.model import BuiltGroup, build_group
from controller.model import (
    ShieldProtection,
    WAFRegionalAssociation,
    WAFv2Association,
    WebACLByName,
    canonical_json,
)
from runtime.objects import Obj, key_of
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    with_hostname,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
ARN = "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/shop/0a1b"
OTHER = "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/other/2c3d"
GROUP = {A + "group.name": "shop"}
SHOP = Request("", "shop")


def built(annotations: dict[str, str], *, params: Obj | None = None,
          settings: AddonSettings | None = None) -> BuiltGroup:
    objs = [ingress_class(params=None if params is None else params["metadata"]["name"]),
            backend_service("web"), ingress("web", annotations=annotations)]
    if params is not None:
        objs.append(params)
    c = caches(*objs)
    chosen = SETTINGS if settings is None else dataclasses.replace(SETTINGS, addons=settings)
    return build_group(loader(c).load(Request("default", "web")), c, chosen)


def lb_of(result: BuiltGroup) -> tuple[object, object, object]:
    [lb] = result.stack.load_balancers.values()
    return lb.wafv2, lb.waf_regional, lb.shield


def error(annotations: dict[str, str], **kwargs: object) -> str:
    with pytest.raises(BuildError) as info:
        built(annotations, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


def test_no_key_leaves_aws_alone_and_the_checkpoint_as_it_was() -> None:
    result = built({})
    assert lb_of(result) == (None, None, None)
    assert b"wafv2" not in canonical_json(result.stack)
    assert b"shield" not in canonical_json(result.stack)


def test_each_key_reaches_the_model() -> None:
    assert lb_of(built({A + "wafv2-acl-arn": ARN, A + "waf-acl-id": "0a1b-2c",
                        A + "shield-advanced-protection": "1"})) == (
        WAFv2Association(web_acl=ARN), WAFRegionalAssociation(web_acl_id="0a1b-2c"),
        ShieldProtection(enabled=True))
    assert lb_of(built({A + "wafv2-acl-name": "shop"}))[0] == WAFv2Association(
        web_acl=WebACLByName(name="shop"))
    # The deprecated key, when waf-acl-id is absent.
    assert lb_of(built({A + "web-acl-id": "abc"}))[1] == WAFRegionalAssociation(web_acl_id="abc")
    assert lb_of(built({A + "waf-acl-id": "new", A + "web-acl-id": "old"}))[1] == (
        WAFRegionalAssociation(web_acl_id="new"))


def test_none_and_empty_values_as_upstream_reads_them() -> None:
    # WAFv2 ARN: `none` and empty both remove the association.
    assert lb_of(built({A + "wafv2-acl-arn": "none"}))[0] == WAFv2Association(web_acl="")
    assert lb_of(built({A + "wafv2-acl-arn": ""}))[0] == WAFv2Association(web_acl="")
    assert lb_of(built({A + "wafv2-acl-name": "none"}))[0] == WAFv2Association(web_acl="")
    # An empty name or WAF Classic ID is not set.
    assert lb_of(built({A + "wafv2-acl-name": ""}))[0] is None
    assert lb_of(built({A + "waf-acl-id": ""}))[1] is None
    assert lb_of(built({A + "waf-acl-id": "none"}))[1] == WAFRegionalAssociation(web_acl_id="")
    assert lb_of(built({A + "shield-advanced-protection": "false"}))[2] == (
        ShieldProtection(enabled=False))


def test_a_name_wins_over_an_arn() -> None:
    assert lb_of(built({A + "wafv2-acl-name": "shop", A + "wafv2-acl-arn": OTHER}))[0] == (
        WAFv2Association(web_acl=WebACLByName(name="shop")))


def test_class_parameters_win_over_the_members_annotations() -> None:
    params = class_params("p", {"wafv2AclArn": ARN})
    assert lb_of(built({A + "wafv2-acl-arn": OTHER}, params=params))[0] == (
        WAFv2Association(web_acl=ARN))
    # Beyond upstream (where a name wins over any ARN): the member's own name does not
    # override its class's ARN.
    assert lb_of(built({A + "wafv2-acl-name": "none"}, params=params))[0] == (
        WAFv2Association(web_acl=ARN))
    named = class_params("p", {"wafv2AclName": "theirs", "wafv2AclArn": ARN})
    assert lb_of(built({A + "wafv2-acl-name": "mine"}, params=named))[0] == (
        WAFv2Association(web_acl=WebACLByName(name="theirs")))


def test_a_name_in_the_group_cannot_replace_a_class_enforced_web_acl() -> None:
    params = class_params("p", {"wafv2AclArn": ARN})
    enforced = established(ingress("a", annotations=GROUP, paths=[ingress_path("/a")],
                                   class_name="enforced"))
    stripper = ingress("b", annotations={**GROUP, A + "wafv2-acl-name": "none"},
                       paths=[ingress_path("/b")])
    c = caches(ingress_class(), ingress_class("enforced", params="p"), params,
               backend_service("web"), enforced, stripper)
    settled = settle(loader(c).load(SHOP), caches=c, policy="params",
                     build=lambda g: build_group(g, c, SETTINGS))
    assert [(key_of(i), why) for i, why in settled.group.excluded] == [(
        "default/b", f'the WAFv2 web ACL conflicts within the group: default/a has "{ARN}" '
        "(IngressClassParams p spec.wafv2AclArn), default/b has the name \"none\" "
        "(alb.ingress.kubernetes.io/wafv2-acl-name)")]
    assert settled.built is not None
    assert lb_of(settled.built)[0] == WAFv2Association(web_acl=ARN)


def test_values_that_are_not_what_they_name_are_one_error() -> None:
    assert error({A + "wafv2-acl-arn": "arn:aws:wafv2:us-east-1:123456789012:global/webacl/a/b"}
                 ) == ("Ingress default/web: annotation alb.ingress.kubernetes.io/wafv2-acl-arn: "
                       '"arn:aws:wafv2:us-east-1:123456789012:global/webacl/a/b" is not a '
                       "regional WAFv2 web ACL ARN (arn:<partition>:wafv2:<region>:<account>:"
                       "regional/webacl/<name>/<id>)")
    assert "is not a WAFv2 web ACL name" in error({A + "wafv2-acl-name": "a b"})
    assert "is not a WAF Classic web ACL ID" in error({A + "waf-acl-id": "a/b"})
    assert error({A + "shield-advanced-protection": "yes"}) == (
        "Ingress default/web: annotation alb.ingress.kubernetes.io/shield-advanced-protection: "
        '"yes" is not a boolean (use true or false)')
    with pytest.raises(InvalidInput, match=r"spec\.wafv2AclArn"):
        built({}, params=class_params("p", {"wafv2AclArn": "arn:aws:iam::1:role/x"}))


def test_a_flag_turned_off_refuses_what_asks_for_the_addon() -> None:
    off = AddonSettings(waf=False, wafv2=False, shield=False)
    assert error({A + "wafv2-acl-arn": ARN}, settings=off) == (
        "Ingress default/web: alb.ingress.kubernetes.io/wafv2-acl-arn asks for a WAFv2 web ACL "
        "association, which this controller has turned off (--enable-wafv2=false); nothing is "
        "deployed for this Ingress until it is removed or the flag is on")
    assert "(--enable-waf=false)" in error({A + "waf-acl-id": "abc"}, settings=off)
    assert "(--enable-shield=false)" in error({A + "shield-advanced-protection": "true"},
                                              settings=off)
    params = class_params("p", {"wafv2AclName": "theirs"})
    assert "IngressClassParams p spec.wafv2AclName asks for" in error({}, params=params,
                                                                     settings=off)
    # Admission denies with the same words.
    ing = ingress("web", annotations={A + "wafv2-acl-arn": ARN})
    with pytest.raises(InvalidInput) as info:
        admit(ing, None, caches(ingress_class(), backend_service("web")),
              dataclasses.replace(SETTINGS, addons=off))
    assert str(info.value) == error({A + "wafv2-acl-arn": ARN}, settings=off)


def test_a_flag_turned_off_reports_what_asks_for_nothing() -> None:
    off = AddonSettings(waf=False, wafv2=False, shield=False)
    result = built({A + "wafv2-acl-arn": "none", A + "waf-acl-id": "none",
                    A + "shield-advanced-protection": "false"}, settings=off)
    assert lb_of(result) == (None, None, None)
    findings = result.findings["default/web"]
    assert [f.reason for f in findings] == [UNSUPPORTED] * 3
    assert findings[0].message == ("annotation alb.ingress.kubernetes.io/wafv2-acl-arn is not "
                                   "acted on (--enable-wafv2=false); it is ignored")


def established(ing: Obj) -> Obj:
    ing["metadata"]["finalizers"] = ["group.ingress.k8s.aws/shop"]
    return with_hostname(ing)


def test_members_that_disagree_leave_the_newcomer_out_or_hold_the_group() -> None:
    first = established(ingress("a", annotations={**GROUP, A + "wafv2-acl-arn": ARN},
                                paths=[ingress_path("/a")]))
    newcomer = ingress("b", annotations={**GROUP, A + "wafv2-acl-arn": OTHER},
                       paths=[ingress_path("/b")])
    c = caches(ingress_class(), backend_service("web"), first, newcomer)
    settled = settle(loader(c).load(SHOP), caches=c, policy="params",
                     build=lambda g: build_group(g, c, SETTINGS))
    conflict = (f'the WAFv2 web ACL ARN conflicts within the group: default/a has "{ARN}" '
                f"(alb.ingress.kubernetes.io/wafv2-acl-arn), default/b has \"{OTHER}\" "
                "(alb.ingress.kubernetes.io/wafv2-acl-arn)")
    assert [(key_of(i), why) for i, why in settled.group.excluded] == [("default/b", conflict)]
    assert settled.built is not None
    assert lb_of(settled.built)[0] == WAFv2Association(web_acl=ARN)
    # Admission says the same to the newcomer.
    with pytest.raises(InvalidInput) as info:
        admit(newcomer, None, caches(ingress_class(), backend_service("web"), first), SETTINGS)
    assert conflict in str(info.value)
    # Both established: the group is held, nothing changes.
    both = caches(ingress_class(), backend_service("web"), first, established(newcomer))
    settled = settle(loader(both).load(SHOP), caches=both, policy="params",
                     build=lambda g: build_group(g, both, SETTINGS))
    assert settled.built is None
    assert settled.group.held == conflict
    # An absent key agrees with anything; Shield's true against false is a conflict.
    quiet = ingress("c", annotations={**GROUP, A + "shield-advanced-protection": "true"},
                    paths=[ingress_path("/c")])
    c = caches(ingress_class(), backend_service("web"), first, quiet)
    assert lb_of(build_group(loader(c).load(SHOP), c, SETTINGS))[0] == WAFv2Association(
        web_acl=ARN)
    loud = ingress("d", annotations={**GROUP, A + "shield-advanced-protection": "false"},
                   paths=[ingress_path("/d")])
    c = caches(ingress_class(), backend_service("web"), quiet, loud)
    with pytest.raises(BuildError, match="shield-advanced-protection conflicts within the "
                                         "group: default/c has \"true\""):
        build_group(loader(c).load(SHOP), c, SETTINGS)


def test_admission_denies_with_the_reconcilers_text() -> None:
    bad = ingress("web", annotations={A + "waf-acl-id": "a/b"})
    with pytest.raises(InvalidInput) as info:
        admit(bad, None, caches(ingress_class(), backend_service("web")), SETTINGS)
    assert str(info.value) == ("Ingress default/web: annotation alb.ingress.kubernetes.io/"
                               'waf-acl-id: "a/b" is not a WAF Classic web ACL ID (1 to 128 of '
                               "A-Z, a-z, 0-9, _ and -)")
