"""JSON annotation values decoded as upstream's Go code decodes them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.ingress.gojson import decode, go_fold
from controller.ingress.schemas import ActionSpec, ConditionSpec, TransformSpec

KEY = "alb.ingress.kubernetes.io/actions.x"
Conditions = tuple[ConditionSpec, ...]


def test_keys_match_field_names_in_any_case() -> None:
    spec, unknown = decode(KEY, '{"TYPE":"fixed-response","FixedResponseConfig":'
                                '{"StatusCode":"503","contentTYPE":"text/plain"}}', ActionSpec)
    assert unknown == ()
    assert spec.fixed_response_config is not None
    assert (spec.fixed_response_config.status_code,
            spec.fixed_response_config.content_type) == ("503", "text/plain")


def test_go_folds_the_kelvin_sign_and_the_long_s() -> None:
    # Go's case-insensitive match folds U+212A to k and U+017F to s.
    assert go_fold("\u212aey") == "key"
    assert go_fold("value\u017f") == "values"
    (cond,), _ = decode(KEY, '[{"field":"http-request-method","httpRequestMethodConfig":'
                              '{"value\u017f":["GET"]}}]', Conditions)
    assert cond.http_request_method is not None
    assert cond.http_request_method.values == ("GET",)


def test_upstreams_spelling_of_source_ip_config() -> None:
    for name in ("sourceIPConfig", "sourceIpConfig", "SourceIPConfig"):
        (cond,), _ = decode(KEY, f'[{{"field":"source-ip","{name}":{{"values":["10.0.0.0/8"]}}}}]',
                            Conditions)
        assert cond.source_ip is not None
        assert cond.source_ip.values == ("10.0.0.0/8",)


def test_unknown_fields_are_ignored_and_named() -> None:
    spec, unknown = decode(KEY, '{"type":"forward","forwardConfig":{"targetGroups":['
                                '{"serviceName":"a","servicePort":80,"wieght":5}]},"extra":1}',
                           ActionSpec)
    assert spec.forward_config is not None
    assert spec.forward_config.target_groups[0].weight is None
    assert set(unknown) == {"forwardConfig.targetGroups[0].wieght", "extra"}


def test_a_repeated_field_takes_the_last_value() -> None:
    (cond,), _ = decode(KEY, '[{"field":"path-pattern","pathPatternConfig":{"values":["/a"],'
                             '"Values":["/b"]}}]', Conditions)
    assert cond.path_pattern is not None
    assert cond.path_pattern.values == ("/b",)
    # An object given twice: the second is decoded over the first, as Go does.
    spec, _ = decode(KEY, '{"type":"redirect","redirectConfig":{"host":"a","statusCode":'
                          '"HTTP_301"},"RedirectConfig":{"host":"b"}}', ActionSpec)
    assert spec.redirect_config is not None
    assert (spec.redirect_config.host, spec.redirect_config.status_code) == ("b", "HTTP_301")
    # null resets it.
    with pytest.raises(AnnotationError, match="needs redirectConfig"):
        decode(KEY, '{"type":"redirect","redirectConfig":{"statusCode":"HTTP_301"},'
                    '"redirectConfig":null}', ActionSpec)


@pytest.mark.parametrize(("raw", "reason"), [
    ('{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"a",'
     '"servicePort":80,"weight":"5"}]}}', "weight"),
    ('{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"a","servicePort":80}],'
     '"targetGroupStickinessConfig":{"enabled":1}}}', "enabled"),
    ('{"type":"forward","targetGroupARN":"arn:x","forwardConfig":{"targetGroups":['
     '{"targetGroupARN":"arn:y"}]}}', "either forwardConfig or targetGroupARN/targetGroupName"),
    ('{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"a","servicePort":80,'
     '"targetGroupName":"b"}]}}', "exactly one of serviceName"),
    ("[1,", "not valid JSON"),
])
def test_types_are_strict_and_errors_one_line(raw: str, reason: str) -> None:
    with pytest.raises(AnnotationError) as info:
        decode(KEY, raw, ActionSpec)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_conditions_take_values_or_regex_values() -> None:
    (cond,), _ = decode(KEY, '[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":'
                             '"User-Agent","regexValues":[".+Chrome.+"]}}]', Conditions)
    assert cond.http_header is not None
    assert cond.http_header.regex_values == (".+Chrome.+",)
    with pytest.raises(AnnotationError, match="precisely one of values and regexValues"):
        decode(KEY, '[{"field":"host-header","hostHeaderConfig":{"values":["a"],'
                    '"regexValues":["b"]}}]', Conditions)
    with pytest.raises(AnnotationError, match="values or regexValues must be specified"):
        decode(KEY, '[{"field":"host-header","hostHeaderConfig":{}}]', Conditions)
    with pytest.raises(AnnotationError, match=r"want 1\.\.128 characters"):
        decode(KEY, '[{"field":"host-header","hostHeaderConfig":{"regexValues":["'
                    + "a" * 129 + '"]}}]', Conditions)


def test_transforms_in_upstreams_shape() -> None:
    (url,), _ = decode(KEY, '[{"type":"url-rewrite","urlRewriteConfig":{"rewrites":'
                            '[{"regex":"^\\\\/api\\\\/(.+)$","replace":"/$1"}]}}]',
                       tuple[TransformSpec, ...])
    assert url.url_rewrite is not None
    assert url.url_rewrite.rewrites[0].regex == "^\\/api\\/(.+)$"
    with pytest.raises(AnnotationError, match="needs hostHeaderRewriteConfig"):
        decode(KEY, '[{"type":"host-header-rewrite"}]', tuple[TransformSpec, ...])
    with pytest.raises(AnnotationError, match="type"):
        decode(KEY, '[{"type":"header-rewrite"}]', tuple[TransformSpec, ...])


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["type", "Type", "forwardConfig",
                                                       "targetGroups", "values", "field",
                                                       "x"]), inner, max_size=3),
                    max_leaves=12))
def test_any_json_decodes_or_fails_with_one_line(document: object) -> None:
    import json
    for schema in (ActionSpec, Conditions, tuple[TransformSpec, ...]):
        message = ""
        try:
            decode(KEY, json.dumps(document), schema)
        except AnnotationError as exc:
            message = str(exc)
        assert "\n" not in message


def test_several_target_groups_each_need_a_weight() -> None:
    # upstream: "weight must be set when route to multiple target groups"
    with pytest.raises(AnnotationError, match="weight must be set when routing to several"):
        decode(KEY, '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"a",'
                    '"servicePort":80,"weight":1},{"serviceName":"b","servicePort":80}]}}',
               ActionSpec)
    spec, _ = decode(KEY, '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":'
                          '"a","servicePort":80}]}}', ActionSpec)
    assert spec.forward_groups()[0].weight is None
