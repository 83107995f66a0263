"""Pure parts of the deployer: the normal forms that make AWS defaults compare equal, and the
tag diff. (No AWS needed; they live here with the deployer's other tests.)"""

from __future__ import annotations

from controller.deploy.normalize import (
    api_action,
    api_condition,
    api_health_check,
    health_check_differs,
    normal_action,
    normal_actions,
    normal_conditions,
)
from controller.deploy.tags import Tracking
from controller.model import (
    ForwardAction,
    HealthCheck,
    HttpHeaderCondition,
    QueryStringCondition,
    QueryStringKeyValue,
    RedirectAction,
    Ref,
    WeightedTargetGroup,
)


def _resolve(ref: Ref) -> str:
    return "arn:tg/" + ref.target[1]


def test_forward_defaults_from_aws_equal_the_model() -> None:
    ref = Ref.to("AWS::ElasticLoadBalancingV2::TargetGroup", "a", "targetGroupARN")
    ours = api_action(ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=ref)]),
                      1, _resolve)
    described = {"Type": "forward", "Order": 1, "TargetGroupArn": "arn:tg/a",
                 "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": "arn:tg/a", "Weight": 1}],
                                   "TargetGroupStickinessConfig": {"Enabled": False}}}
    assert normal_action(described) == normal_action(ours)
    legacy = {"Type": "forward", "TargetGroupArn": "arn:tg/a"}
    assert normal_action(legacy) == normal_action(ours)
    heavier = {**described, "ForwardConfig": {"TargetGroups": [
        {"TargetGroupArn": "arn:tg/a", "Weight": 2}]}}
    assert normal_action(heavier) != normal_action(ours)


def test_redirect_placeholders_and_action_order() -> None:
    ours = api_action(RedirectAction(protocol="HTTPS", port="443", status_code="HTTP_301"), 1,
                      _resolve)
    described = {"Type": "redirect", "Order": 1, "RedirectConfig": {
        "Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"}}
    assert normal_action(described) == normal_action(ours)
    fixed = {"Type": "fixed-response", "Order": 2, "FixedResponseConfig": {"StatusCode": "404"}}
    assert normal_actions([fixed, described]) == normal_actions([ours, {**fixed}])


def test_conditions_legacy_values_and_config_forms_compare_equal() -> None:
    header = api_condition(HttpHeaderCondition(header_name="X-Env", values=["b", "a"]))
    assert header == {"Field": "http-header",
                      "HttpHeaderConfig": {"HttpHeaderName": "X-Env", "Values": ["a", "b"]}}
    legacy_host = {"Field": "host-header", "Values": ["x.example.com"]}
    config_host = {"Field": "host-header", "HostHeaderConfig": {"Values": ["x.example.com"]}}
    assert normal_conditions([legacy_host]) == normal_conditions([config_host])
    query = api_condition(QueryStringCondition(values=[QueryStringKeyValue(value="v")]))
    assert query["QueryStringConfig"]["Values"] == [{"Value": "v"}]
    assert normal_conditions([query, header]) == normal_conditions([header, query])


def test_health_check_compares_only_what_is_set() -> None:
    desired = api_health_check(HealthCheck(protocol="TCP", interval_seconds=10,
                                           timeout_seconds=6))
    described = {"HealthCheckEnabled": True, "HealthCheckProtocol": "TCP",
                 "HealthCheckPort": "traffic-port", "HealthCheckIntervalSeconds": 10,
                 "HealthCheckTimeoutSeconds": 6, "HealthyThresholdCount": 2,
                 "UnhealthyThresholdCount": 2, "Matcher": {"HttpCode": "200-399"}}
    assert not health_check_differs(desired, described)
    assert health_check_differs(desired, {**described, "HealthCheckIntervalSeconds": 30})


def test_tag_diff_keeps_reserved_and_external_keys() -> None:
    tracking = Tracking(cluster="c", kind="service", stack_id="ns/svc",
                        external_managed_tags=frozenset({"owner"}))
    desired = tracking.tags_for("LoadBalancer", {"team": "a"})
    assert desired["service.k8s.aws/stack"] == "ns/svc"
    assert desired["service.k8s.aws/resource"] == "LoadBalancer"
    current = {**desired, "team": "b", "aws:cloudformation:stack": "x", "owner": "me",
               "stale": "1"}
    add, remove = tracking.diff(current, desired)
    assert add == {"team": "a"}
    assert remove == ["stale"]
    assert tracking.owns(current)
    assert not tracking.owns({**current, "service.k8s.aws/stack": "ns/other"})
