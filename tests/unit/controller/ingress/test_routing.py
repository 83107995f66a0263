"""Routing as upstream builds it: Ingresses copied from upstream's docs, regular expressions,
the rule's host and path joined with the `conditions.<name>` annotation's."""

from __future__ import annotations

import dataclasses

import pytest

from controller.ingress.admission import admit
from controller.ingress.merge import BuildError
from controller.ingress.model import BuilderSettings, BuiltGroup, build_group
from controller.model import (
    FixedResponseAction,
    ForwardAction,
    HostHeaderCondition,
    ListenerRule,
    PathPatternCondition,
    RedirectAction,
    Stickiness,
    TargetGroupByName,
)
from runtime.reconcile import Request
from tests.support.objects import backend_service, ingress, ingress_class, ingress_path
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"


def build(*objs: dict[str, object]) -> BuiltGroup:
    c = caches(ingress_class("alb"), *objs)
    return build_group(loader(c).load(Request("default", "ingress")), c, SETTINGS)


def rules(built: BuiltGroup, port: int = 80) -> list[ListenerRule]:
    return sorted((r for rid, r in built.stack.listener_rules.items()
                   if rid.startswith(f"{port}:")), key=lambda r: r.priority)


def conditions(rule: ListenerRule) -> dict[str, object]:
    return {c.field: c for c in rule.conditions}


def use_annotation(path: str, name: str, path_type: str = "Exact") -> dict[str, object]:
    return ingress_path(path, name, "use-annotation", path_type=path_type)


# upstream docs/guide/ingress/annotations.md, "actions" and "conditions" examples, verbatim.
ACTIONS = {
    A + "actions.response-503": '{"type":"fixed-response","fixedResponseConfig":{"contentType":'
    '"text/plain","statusCode":"503","messageBody":"503 error text"}}\n',
    A + "actions.redirect-to-eks": '{"type":"redirect","redirectConfig":{"host":"aws.amazon.com"'
    ',"path":"/eks/","port":"443","protocol":"HTTPS","query":"k=v","statusCode":"HTTP_302"}}\n',
    A + "actions.forward-single-tg": '{"type":"forward","targetGroupARN": '
    '"arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/mine/0123456789abcdef"}\n',
}
CONDITIONS = {
    A + "actions.rule-path1": '{"type":"fixed-response","fixedResponseConfig":{"contentType":'
    '"text/plain","statusCode":"200","messageBody":"Host is www.example.com OR '
    'anno.example.com"}}\n',
    A + "conditions.rule-path1": '[{"field":"host-header","hostHeaderConfig":{"values":'
    '["anno.example.com"]}}]\n',
    A + "actions.rule-path2": '{"type":"fixed-response","fixedResponseConfig":{"contentType":'
    '"text/plain","statusCode":"200","messageBody":"Path is /path2 OR /anno/path2"}}\n',
    A + "conditions.rule-path2": '[{"field":"path-pattern","pathPatternConfig":{"values":'
    '["/anno/path2"]}}]\n',
    A + "actions.rule-path4": '{"type":"fixed-response","fixedResponseConfig":{"contentType":'
    '"text/plain","statusCode":"200","messageBody":"Http request method is GET OR HEAD"}}\n',
    A + "conditions.rule-path4": '[{"field":"http-request-method","httpRequestMethodConfig":'
    '{"Values":["GET", "HEAD"]}}]\n',
    A + "actions.rule-path6": '{"type":"fixed-response","fixedResponseConfig":{"contentType":'
    '"text/plain","statusCode":"200","messageBody":"Source IP is 192.168.0.0/16 OR '
    '172.16.0.0/16"}}\n',
    A + "conditions.rule-path6": '[{"field":"source-ip","sourceIpConfig":{"values":'
    '["192.168.0.0/16", "172.16.0.0/16"]}}]\n',
}
WEIGHTED = {
    A + "target-type": "ip",
    A + "actions.weighted-routing": """{
        "type":"forward",
        "forwardConfig":{
        "targetGroups":[
            {"serviceName":"service-1","servicePort":"80","weight":50},
            {"serviceName":"service-2","servicePort":"80","weight":50}
        ],
        "TargetGroupStickinessConfig": {
            "Enabled": true,
            "DurationSeconds": 120
        }
        }
    }""",
}


def test_upstreams_actions_example() -> None:
    built = build(ingress("ingress", annotations=ACTIONS, paths=[
        use_annotation("/503", "response-503"), use_annotation("/eks", "redirect-to-eks"),
        use_annotation("/path1", "forward-single-tg")]))
    fixed, redirect, forward = (r.actions[-1] for r in rules(built))
    assert fixed == FixedResponseAction(status_code="503", content_type="text/plain",
                                        message_body="503 error text")
    assert isinstance(redirect, RedirectAction)
    assert (redirect.host, redirect.path, redirect.port, redirect.protocol, redirect.query,
            redirect.status_code) == ("aws.amazon.com", "/eks/", "443", "HTTPS", "k=v",
                                      "HTTP_302")
    assert isinstance(forward, ForwardAction)
    assert forward.target_groups[0].target_group_arn == (
        "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/mine/0123456789abcdef")


def test_upstreams_conditions_example_joins_host_and_path_values() -> None:
    built = build(ingress("ingress", annotations=CONDITIONS, host="www.example.com", paths=[
        use_annotation("/path1", "rule-path1"), use_annotation("/path2", "rule-path2"),
        use_annotation("/path4", "rule-path4"), use_annotation("/path6", "rule-path6")]))
    r1, r2, r4, r6 = rules(built)
    # One host-header condition holding the rule's host and the annotation's (upstream).
    assert conditions(r1)["host-header"] == HostHeaderCondition(
        values=["anno.example.com", "www.example.com"])
    assert conditions(r2)["path-pattern"] == PathPatternCondition(values=["/anno/path2",
                                                                         "/path2"])
    assert tuple(conditions(r4)["http-request-method"].values) == ("GET", "HEAD")  # type: ignore[attr-defined]
    assert tuple(conditions(r6)["source-ip"].values) == (  # type: ignore[attr-defined]
        "172.16.0.0/16", "192.168.0.0/16")
    assert all(not f for f in built.findings.values())


def test_upstreams_weighted_example_with_title_case_stickiness() -> None:
    built = build(backend_service("service-1"), backend_service("service-2"),
                  ingress("ingress", annotations=WEIGHTED, host="www.example.com", paths=[
                      use_annotation("/", "weighted-routing", path_type="Prefix")]))
    (rule,) = rules(built)
    forward = rule.actions[-1]
    assert isinstance(forward, ForwardAction)
    assert [w.weight for w in forward.target_groups] == [50, 50]
    assert forward.stickiness == Stickiness(enabled=True, duration_seconds=120)


def test_an_unknown_field_is_a_warning_and_the_rest_builds() -> None:
    built = build(ingress("ingress", annotations={
        A + "actions.fixed": '{"type":"fixed-response","fixedResponseConfig":{"statusCode":'
        '"404"},"weigth":3}'}, paths=[use_annotation("/x", "fixed")]))
    (finding,) = built.findings["default/ingress"]
    assert finding.reason == "UnknownAnnotation"
    assert "'weigth'" in finding.message
    assert rules(built)[0].actions[-1] == FixedResponseAction(status_code="404")


def test_regex_values_reach_the_rule() -> None:
    built = build(backend_service("web"), ingress("ingress", annotations={
        A + "conditions.web": '[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":'
        '"User-Agent","regexValues":[".+Chrome.+"]}},{"field":"host-header","hostHeaderConfig":'
        '{"regexValues":["^(.+)\\\\.example\\\\.com"]}}]'}, paths=[ingress_path("/api")]))
    (rule,) = rules(built)
    found = conditions(rule)
    assert found["host-header"] == HostHeaderCondition(regex_values=["^(.+)\\.example\\.com"])
    assert tuple(found["http-header"].regex_values) == (".+Chrome.+",)  # type: ignore[attr-defined]
    assert tuple(found["path-pattern"].values) == ("/api", "/api/*")  # type: ignore[attr-defined]


def test_use_regex_path_match_makes_implementation_specific_paths_regular_expressions() -> None:
    built = build(backend_service("web"), ingress("ingress", annotations={
        A + "use-regex-path-match": "true"}, paths=[
            ingress_path("/^/api/(.+)$", path_type="ImplementationSpecific"),
            ingress_path("/exact", path_type="Exact")]))
    exact, regex = rules(built)
    assert conditions(regex)["path-pattern"] == PathPatternCondition(regex_values=["^/api/(.+)$"])
    assert conditions(exact)["path-pattern"] == PathPatternCondition(values=["/exact"])
    # Without it (upstream's default) the same path is a wildcard pattern.
    built = build(backend_service("web"), ingress("ingress", paths=[
        ingress_path("/^/api/(.+)$", path_type="ImplementationSpecific")]))
    assert conditions(rules(built)[0])["path-pattern"] == PathPatternCondition(
        values=["/^/api/(.+)$"])


@pytest.mark.parametrize(("annotations", "host", "message"), [
    ({A + "conditions.web": '[{"field":"host-header","hostHeaderConfig":{"regexValues":["x"]}}]'},
     "www.example.com", "host condition must use exactly one of values and regexValues"),
    ({A + "use-regex-path-match": "true", A + "conditions.web":
      '[{"field":"path-pattern","pathPatternConfig":{"values":["/x"]}}]'},
     None, "path condition must use exactly one of values and regexValues"),
    ({A + "use-regex-path-match": "maybe"}, None, "is not a boolean"),
])
def test_values_and_regex_values_never_mix(annotations: dict[str, str], host: str | None,
                                           message: str) -> None:
    with pytest.raises(BuildError, match=message) as info:
        build(backend_service("web"), ingress("ingress", annotations=annotations, host=host,
                                              paths=[ingress_path(
                                                  "/x", path_type="ImplementationSpecific")]))
    assert "\n" not in str(info.value)


def test_stacks_without_regular_expressions_keep_their_canonical_json() -> None:
    built = build(backend_service("web"), ingress("ingress", host="a.example.com"))
    (rule,) = rules(built)
    dumped = rule.model_dump(mode="json")
    assert all("regex_values" not in c for c in dumped["conditions"])


# upstream docs/guide/ingress/annotations.md, "transforms" examples, verbatim.
URL_REWRITE = """
    [
        {
            "type": "url-rewrite",
            "urlRewriteConfig": {
                "rewrites": [
                    {
                        "regex": "^\\\\/api\\\\/(.+)$",
                        "replace": "/$1"
                    }
                ]
            }
        }
    ]
"""
HOST_REWRITE = """
    [
        {
            "type": "host-header-rewrite",
            "hostHeaderRewriteConfig": {
                "rewrites": [
                    {
                        "regex": "^(.+)\\\\.example\\\\.com$",
                        "replace": "$1.example.org"
                    }
                ]
            }
        }
    ]
"""


def test_upstreams_transforms_examples_reach_the_rule() -> None:
    built = build(backend_service("my-service"), backend_service("other"), ingress(
        "ingress", annotations={A + "transforms.my-service": URL_REWRITE,
                                A + "transforms.other": HOST_REWRITE},
        paths=[ingress_path("/api", "my-service"), ingress_path("/", "other")]))
    api, rest = rules(built)
    (url,) = api.transforms
    assert (url.type, url.rewrites[0].regex, url.rewrites[0].replace) == (
        "url-rewrite", "^\\/api\\/(.+)$", "/$1")
    (host,) = rest.transforms
    assert (host.type, host.rewrites[0].regex, host.rewrites[0].replace) == (
        "host-header-rewrite", "^(.+)\\.example\\.com$", "$1.example.org")
    assert "transforms" in api.model_dump(mode="json")


def test_two_transforms_of_one_type_are_one_error() -> None:
    two = URL_REWRITE.strip()[:-1] + "," + URL_REWRITE.strip()[1:]
    with pytest.raises(BuildError, match="one host-header-rewrite and one url-rewrite") as info:
        build(backend_service("web"), ingress("ingress", annotations={
            A + "transforms.web": two}))
    assert "\n" not in str(info.value)


def test_target_group_names_stay_names_in_the_model() -> None:
    # upstream docs: the forward-multiple-tg example, with targetGroupName.
    multiple = ('{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"service-1",'
                '"servicePort":"http","weight":20},{"serviceName":"service-2","servicePort":80,'
                '"weight":20},{"targetGroupARN":"arn-of-your-non-k8s-target-group","weight":60},'
                '{"targetGroupName":"name-of-your-non-k8s-target-group","weight":80}],'
                '"targetGroupStickinessConfig":{"enabled":true,"durationSeconds":200}}}')
    # Its placeholder name has 33 characters, one more than AWS allows a target group name.
    with pytest.raises(BuildError, match="at most 32 characters"):
        build(backend_service("service-1"), backend_service("service-2"), ingress(
            "ingress", annotations={A + "actions.forward-multiple-tg": multiple},
            paths=[use_annotation("/path3", "forward-multiple-tg")]))
    multiple = multiple.replace("name-of-your-non-k8s-target-group", "name-of-your-non-k8s-tg")
    built = build(backend_service("service-1"), backend_service("service-2"), ingress(
        "ingress", annotations={A + "actions.forward-multiple-tg": multiple,
                                A + "actions.forward-single-tg-by-name": '{"type":"forward",'
                                '"targetGroupName": "name-of-your-target-group"}'},
        paths=[use_annotation("/path2", "forward-single-tg-by-name"),
               use_annotation("/path3", "forward-multiple-tg")]))
    single, weighted = (r.actions[-1] for r in rules(built))
    assert isinstance(single, ForwardAction)
    assert single.target_groups[0].target_group_arn == TargetGroupByName(
        target_group_name="name-of-your-target-group")
    assert isinstance(weighted, ForwardAction)
    targets = {str(w.target_group_arn): w.weight for w in weighted.target_groups}
    assert targets["arn-of-your-non-k8s-target-group"] == 60
    assert targets[str(TargetGroupByName(
        target_group_name="name-of-your-non-k8s-tg"))] == 80
    assert weighted.stickiness == Stickiness(enabled=True, duration_seconds=200)
    with pytest.raises(BuildError, match="targetGroupName: String should have at most 32"):
        build(ingress("ingress", annotations={A + "actions.x": '{"type":"forward",'
                      '"targetGroupName": "' + "n" * 33 + '"}'}, paths=[use_annotation("/", "x")]))


TOLERANT = dataclasses.replace(SETTINGS, tolerate_missing_service=True,
                               tolerate_missing_action=True)


def build_tolerant(*objs: dict[str, object]) -> BuiltGroup:
    c = caches(ingress_class("alb"), *objs)
    return build_group(loader(c).load(Request("default", "ingress")), c, TOLERANT)


def test_missing_backends_answer_upstreams_503_with_a_warning() -> None:
    built = build_tolerant(backend_service("web"), ingress("ingress", paths=[
        ingress_path("/gone", "gone"), use_annotation("/act", "no-action"),
        ingress_path("/", "web")], spec={"defaultBackend": {"service": {
            "name": "also-gone", "port": {"number": 80}}}}))
    action, gone, web = rules(built)  # Exact first, then Prefix longest first
    assert gone.actions == (FixedResponseAction(
        status_code="503", content_type="text/plain",
        message_body="Backend service does not exist"),)
    assert action.actions == (FixedResponseAction(
        status_code="503", content_type="text/plain",
        message_body="Backend action does not exist"),)
    assert isinstance(web.actions[0], ForwardAction)
    assert built.stack.listeners["80"].default_actions[0] == gone.actions[0]
    assert built.missing["default/ingress"] == (
        "Ingress default/ingress: backend Service default/also-gone not found; its rules answer "
        "503 until it exists",
        "Ingress default/ingress: backend no-action uses annotation actions.no-action, which is "
        "missing; its rules answer 503 until it exists",
        "Ingress default/ingress: backend Service default/gone not found; its rules answer 503 "
        "until it exists")
    assert {"default/gone", "default/also-gone"} <= built.services  # watched for


def test_only_a_forward_to_one_missing_service_is_tolerated() -> None:
    weighted = ('{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"web",'
                '"servicePort":80,"weight":1},{"serviceName":"gone","servicePort":80,'
                '"weight":1}]}}')
    single = '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"gone",' \
             '"servicePort":80}]}}'
    built = build_tolerant(ingress("ingress", annotations={A + "actions.one": single},
                                   paths=[use_annotation("/", "one")]))
    assert rules(built)[0].actions[-1] == FixedResponseAction(
        status_code="503", content_type="text/plain",
        message_body="Backend service does not exist")
    with pytest.raises(BuildError, match="backend Service default/gone not found"):
        build_tolerant(backend_service("web"), ingress(
            "ingress", annotations={A + "actions.two": weighted},
            paths=[use_annotation("/", "two")]))
    # A missing port of a Service that exists stays an error (upstream too).
    with pytest.raises(BuildError, match="port 81 not found"):
        build_tolerant(backend_service("web"), ingress("ingress", paths=[
            ingress_path("/", "web", 81)]))


def test_admission_says_what_the_warning_event_says() -> None:
    ing = ingress("ingress", paths=[ingress_path("/", "gone")])
    assert admit(ing, None, caches(ingress_class("alb")), TOLERANT) == [
        "Ingress default/ingress: backend Service default/gone not found; its rules answer 503 "
        "until it exists"]


def test_target_node_labels_select_the_nodes_of_instance_targets() -> None:
    labels = {A + "target-node-labels": "pool=web,zone=a"}
    built = build(backend_service("web", {"target-node-labels": "pool=svc"}),
                  backend_service("api"),
                  ingress("ingress", annotations={A + "target-type": "instance", **labels},
                          paths=[ingress_path("/web", "web"), ingress_path("/api", "api")]))
    selectors = {b.service_ref.name: b.node_selector
                 for b in built.stack.target_group_bindings.values()}
    # The Service's value first, then the Ingress's (upstream).
    assert selectors == {"web": {"pool": "svc"}, "api": {"pool": "web", "zone": "a"}}
    # ip targets are pods: no node selector.
    built = build(backend_service("web"), ingress("ingress", annotations={
        A + "target-type": "ip", **labels}))
    assert [b.node_selector for b in built.stack.target_group_bindings.values()] == [None]


def _group(*objs: dict[str, object], settings: BuilderSettings = SETTINGS) -> BuiltGroup:
    c = caches(ingress_class("alb"), *objs)
    return build_group(loader(c).load(Request("", "shop")), c, settings)


def test_tags_as_upstream_reads_them() -> None:
    settings = dataclasses.replace(SETTINGS, defaults=dataclasses.replace(
        SETTINGS.defaults, tags={"env": "prod"}))
    group = {A + "group.name": "shop"}
    built = _group(
        backend_service("web", {"tags": "team=web-svc,svc=1"}), backend_service("api"),
        ingress("a", annotations={**group, A + "tags": "team=a,env=dev,a=1"},
                paths=[ingress_path("/a", "web")]),
        ingress("b", annotations={**group, A + "tags": "b=1"}, paths=[ingress_path("/b", "api")]),
        settings=settings)
    (lb,) = built.stack.load_balancers.values()
    # The group's tags (every member's), --default-tags winning.
    assert lb.tags == {"team": "a", "a": "1", "b": "1", "env": "prod"}
    assert built.stack.listeners["80"].tags == lb.tags
    # Each rule its own Ingress's.
    rule_a, rule_b = rules(built)
    assert rule_a.tags == {"team": "a", "a": "1", "env": "prod"}
    assert rule_b.tags == {"b": "1", "env": "prod"}
    # Target groups: the backend Service's tags over its Ingress's.
    by_service = {b.service_ref.name: built.stack.target_groups[rid].tags
                  for rid, b in built.stack.target_group_bindings.items()}
    assert by_service == {"web": {"team": "web-svc", "svc": "1", "a": "1", "env": "prod"},
                          "api": {"b": "1", "env": "prod"}}


def test_members_giving_a_tag_two_values_is_an_error_naming_them() -> None:
    group = {A + "group.name": "shop"}
    with pytest.raises(BuildError, match="tag 'team' is \"a\" on default/a, \"b\" on "
                                         "default/b") as info:
        _group(backend_service("web"),
               ingress("a", annotations={**group, A + "tags": "team=a"}),
               ingress("b", annotations={**group, A + "tags": "team=b"},
                       paths=[ingress_path("/b")]))
    assert "\n" not in str(info.value)


def test_a_backend_services_tags_respect_external_managed_tags() -> None:
    settings = dataclasses.replace(SETTINGS, defaults=dataclasses.replace(
        SETTINGS.defaults, external_managed_tags=frozenset({"owner"})))
    with pytest.raises(BuildError, match="backend Service default/web: tag 'owner' is managed "
                                         "outside the controller"):
        build_group(loader(c := caches(ingress_class("alb"), backend_service(
            "web", {"tags": "owner=x"}), ingress("ingress"))).load(
                Request("default", "ingress")), c, settings)


def test_upstreams_ssl_redirect_action_idiom_collapses_as_upstreams_rules_do() -> None:
    # upstream's docs (actions.ssl-redirect, before ssl-redirect existed): on HTTP every path
    # is redirected, so only the redirect rule is kept; on HTTPS it would loop, so it goes.
    built = build(backend_service("web"), backend_service("api"), ingress("ingress", annotations={
        A + "listen-ports": '[{"HTTP": 80}, {"HTTPS":443}]',
        A + "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/abc",
        A + "actions.ssl-redirect": '{"Type": "redirect", "RedirectConfig": { "Protocol": '
        '"HTTPS", "Port": "443", "StatusCode": "HTTP_301"}}'}, paths=[
            ingress_path("/*", "ssl-redirect", "use-annotation",
                         path_type="ImplementationSpecific"),
            ingress_path("/api", "api", path_type="ImplementationSpecific"),
            ingress_path("/", "web", path_type="ImplementationSpecific")]))
    (http,) = rules(built, 80)
    assert isinstance(http.actions[-1], RedirectAction)
    assert [r.priority for r in rules(built, 443)] == [1, 2]
    assert all(isinstance(r.actions[-1], ForwardAction) for r in rules(built, 443))


def test_a_redirect_covers_only_rules_within_its_hosts_and_paths() -> None:
    redirect = {A + "actions.moved": '{"type":"redirect","redirectConfig":{"host":'
                '"new.example.com","statusCode":"HTTP_301"}}',
                A + "conditions.moved": '[{"field":"http-header","httpHeaderConfig":'
                '{"httpHeaderName":"X-Old","values":["1"]}}]'}
    # An extra condition: the redirect covers nothing, every rule stays.
    built = build(backend_service("web"), ingress("ingress", annotations=redirect, paths=[
        use_annotation("/old", "moved", path_type="Prefix"), ingress_path("/old/x", "web",
                                                                          path_type="Exact")]))
    assert len(rules(built)) == 2
    del redirect[A + "conditions.moved"]
    built = build(backend_service("web"), ingress("ingress", annotations=redirect, paths=[
        ingress_path("/new", "web", path_type="Exact"),
        use_annotation("/old", "moved", path_type="Exact"),
        ingress_path("/old", "web", path_type="Exact")]))
    # The Exact /old after the redirect of /old can never match; /new (before it) stays.
    assert [tuple(conditions(r)["path-pattern"].values) for r in rules(built)] == [  # type: ignore[attr-defined]
        ("/new",), ("/old",)]


@pytest.mark.parametrize("annotations", [
    {A + "transforms.web": '[{"type":"url-rewrite"}]'},
    {A + "conditions.web": '[{"field":"path-pattern","pathPatternConfig":{"values":["/a"],'
                           '"regexValues":["b"]}}]'},
    {A + "use-regex-path-match": "true",
     A + "conditions.web": '[{"field":"path-pattern","pathPatternConfig":{"values":["/a"]}}]'},
])
def test_admission_denies_with_the_builds_message(annotations: dict[str, str]) -> None:
    ing = ingress("ingress", annotations=annotations,
                  paths=[ingress_path("/x", path_type="ImplementationSpecific")])
    c = caches(ingress_class("alb"), backend_service("web"))
    with pytest.raises(BuildError) as built:
        build(backend_service("web"), ing)
    with pytest.raises(BuildError) as denied:
        admit(ing, None, c, SETTINGS)
    assert str(denied.value) == str(built.value)


@pytest.mark.parametrize(("path", "path_type", "message"), [
    ("/a*", "Exact", "exact path '/a\\*' must not contain the wildcards"),
    ("/a?", "Prefix", "prefix path '/a\\?' must not contain the wildcards"),
    ("/a", "Regex", "unknown pathType 'Regex'"),
])
def test_path_types_as_upstream_checks_them(path: str, path_type: str, message: str) -> None:
    with pytest.raises(BuildError, match=message):
        build(backend_service("web"), ingress("ingress", paths=[
            ingress_path(path, path_type=path_type)]))
