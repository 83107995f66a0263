"""User data is hostile everywhere: every function the controllers run on a stored object —
index, event-mapping, view, priority functions and the parsers and model builders — either
works or raises the one bad-input family (`InvalidInput`), for any JSON a client can store:
wrong types at every level, deep nesting, long strings, our annotations with any value."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller import targetgroupaccess
from controller.annotations import (
    MAX_JSON_DEPTH,
    MAX_VALUE_LENGTH,
    AnnotationError,
    load_json,
    parse_json,
)
from controller.apis import (
    GROUP_MEMBERS_ANNOTATION,
    INGRESS_ANNOTATION_PREFIX,
    SERVICE_ANNOTATION_PREFIX,
)
from controller.apis.targetgroupbinding import parse_spec
from controller.errors import InvalidInput
from controller.ingress import watches as ingress_watches
from controller.ingress.annotations import (
    INGRESS_ANNOTATION_KEYS,
    oidc_secret_names,
    parse_auth,
    parse_ingress,
    parse_target_group,
)
from controller.ingress.caches import Caches
from controller.ingress.classes import classify, parse_params
from controller.ingress.exclusions import GroupNamespaces, settle
from controller.ingress.groups import CLASS_INDEX, GROUP_INDEX, GroupLoader, class_keys, index_keys
from controller.ingress.model import build_group
from controller.ingress.secrets import ingress_secrets
from controller.ingress.vanished import VanishedMembers, recorded_members, recorded_unknown
from controller.networking.policy import NetworkingPolicy
from controller.service import SERVICE_ANNOTATION_KEYS, ModelSettings
from controller.service import watches as service_watches
from controller.service.model import checkpoint_of
from controller.settings import ClusterScope
from controller.targetgroupbinding import pods
from controller.targetgroupbinding import watches as tgb_watches
from controller.targetgroupbinding.endpointsets import SliceMemo
from controller.targetgroupbinding.networking import BindingClaims
from controller.targetgroupbinding.reconciler import registered_target_group
from controller.targetgroupbinding.slicecache import (
    SlicesNotCached,
    SliceTrimmer,
    index_entry,
    is_index_entry,
    kept_slice,
)
from controller.targetgroupbinding.slicedecode import decode_slice_event
from controller.targetgroupbinding.targets import (
    find_service_port,
    instance_endpoints,
    instance_id,
    ip_endpoints,
    node_fit_for_traffic,
)
from runtime.objects import Obj
from runtime.predicates import Event, EventKind
from runtime.reconcile import Request
from runtime.store import Store
from tests.unit.controller.ingress.caches import SETTINGS as INGRESS_SETTINGS

POLICIES: tuple[GroupNamespaces, ...] = ("any", "params", "single")
SERVICE_SETTINGS = ModelSettings(cluster=ClusterScope(name="c", region="us-west-2",
                                                    vpc_id="vpc-1"))

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=True), st.text(max_size=40))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=25)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


annotation_values = st.one_of(
    json_values,
    st.text(max_size=200),
    st.builds(lambda v: json.dumps(v), json_values),
    st.integers(1, 6000).map(_nested),
    st.builds(lambda n: "a" * n, st.integers(0, 300_000)),
)
our_keys = st.sampled_from(sorted(
    {k.replace("*", "web") for k in INGRESS_ANNOTATION_KEYS} | set(SERVICE_ANNOTATION_KEYS)
    | {"kubernetes.io/ingress.class", GROUP_MEMBERS_ANNOTATION,
       INGRESS_ANNOTATION_PREFIX + "actions.x",
       INGRESS_ANNOTATION_PREFIX + "conditions.x", SERVICE_ANNOTATION_PREFIX + "x"}))
annotation_maps: st.SearchStrategy[Any] = st.one_of(json_values, st.dictionaries(
    st.one_of(our_keys, st.text(max_size=10)), annotation_values, max_size=6))
# The API server checks metadata's shape and names; everything else is the client's to choose.
metadata: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"name": st.sampled_from(["web", "g", "alb", "x"]),
     "namespace": st.sampled_from(["default", "team"])},
    optional={"annotations": annotation_maps, "labels": json_values, "uid": json_values,
              "resourceVersion": json_values, "finalizers": json_values,
              "deletionTimestamp": json_values, "generation": json_values})
backends = st.one_of(json_values, st.fixed_dictionaries({"service": st.fixed_dictionaries({
    "name": st.sampled_from(["web", "x"]),
    "port": st.one_of(json_values, st.fixed_dictionaries({"number": json_values}),
                      st.fixed_dictionaries({"name": st.sampled_from(["http",
                                                                      "use-annotation"])}))})}))
paths = st.fixed_dictionaries({"backend": backends}, optional={
    "path": json_values, "pathType": st.sampled_from(["Prefix", "Exact", "Other", None])})
rules = st.one_of(json_values, st.lists(st.fixed_dictionaries({}, optional={
    "host": json_values, "http": st.one_of(json_values, st.fixed_dictionaries(
        {"paths": st.one_of(json_values, st.lists(paths, max_size=3))}))}), max_size=3))
service_ports = st.one_of(json_values, st.lists(st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["http", "x"]), "port": st.one_of(st.just(80), json_values),
    "targetPort": json_values, "protocol": st.one_of(st.sampled_from(["TCP", "UDP"]),
                                                    json_values),
    "nodePort": json_values}), max_size=3))
specs = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "rules": rules, "defaultBackend": backends,
    "ingressClassName": st.one_of(st.just("alb"), json_values),
    "tls": json_values, "type": st.sampled_from(["LoadBalancer", "NodePort"]),
    "loadBalancerClass": st.just("service.k8s.aws/nlb"), "ports": service_ports,
    "serviceRef": json_values, "targetGroupARN": json_values, "targetType": json_values,
    "selector": json_values, "providerID": json_values, "parameters": json_values,
    "controller": st.just("ingress.k8s.aws/alb"), "nodeSelector": json_values}))
objects = st.fixed_dictionaries(
    {"metadata": metadata},
    optional={"spec": specs, "status": json_values, "data": json_values,
              "endpoints": json_values, "ports": json_values, "addressType": json_values})

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _contained(fn: Callable[[], object]) -> None:
    with contextlib.suppress(InvalidInput):
        fn()


def _caches(obj: Obj) -> Caches:
    caches = Caches()
    caches.ingresses.add_indexer(GROUP_INDEX, index_keys)
    caches.ingresses.add_indexer(CLASS_INDEX, class_keys)
    caches.ingresses.add_indexer(ingress_watches.SERVICE_INDEX,
                                 ingress_watches.ingress_service_index)
    caches.ingresses.add_indexer(ingress_watches.SECRET_INDEX,
                                 ingress_watches.ingress_secret_index)
    caches.services.add_indexer(ingress_watches.SERVICE_SECRET_INDEX,
                                ingress_watches.service_secret_index)
    for store in (caches.ingresses, caches.services, caches.secrets, caches.classes,
                  caches.params, caches.namespaces):
        store.upsert(obj)
    caches.classes.upsert({"metadata": {"name": "alb"},
                        "spec": {"controller": "ingress.k8s.aws/alb"}})
    return caches


def _deep(key: str, value: str) -> Obj:
    return {"metadata": {"name": "web", "namespace": "default", "annotations": {key: value}},
            "spec": {"ingressClassName": "alb", "rules": [{"http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


DEEP = _nested(5000)


def _recording(value: str) -> Obj:
    """A member group `g` was deployed with, carrying `value` as its record of members."""
    obj = _deep(INGRESS_ANNOTATION_PREFIX + "group.name", "g")
    obj["metadata"]["annotations"][GROUP_MEMBERS_ANNOTATION] = value
    obj["metadata"]["finalizers"] = ["group.ingress.k8s.aws/g"]
    obj["status"] = {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}
    return obj


@SETTINGS
@given(objects)
@example(_deep(INGRESS_ANNOTATION_PREFIX + "actions.x", DEEP))
@example(_recording('{"group":"g","members":["default/x",5,null,{"a":1},"' + "y" * 300 + '"]}'))
@example(_recording(DEEP))
@example(_recording('{"group":"g","members":["default/' + "a" * 300_000 + '"]}'))
@example(_deep(INGRESS_ANNOTATION_PREFIX + "conditions.web", DEEP))
@example(_deep(INGRESS_ANNOTATION_PREFIX + "transforms.web", DEEP))
@example(_deep(INGRESS_ANNOTATION_PREFIX + "auth-idp-oidc", DEEP))
@example(_deep(INGRESS_ANNOTATION_PREFIX + "listen-ports", DEEP))
@example(_deep(INGRESS_ANNOTATION_PREFIX + "actions.x", "x" * 300_000))
@example({"metadata": {"name": "web", "namespace": "default"}, "spec": {"rules": "garbage"}})
@example({"metadata": {"name": "web", "namespace": "default"}, "spec": {
    "ingressClassName": "alb", "rules": [{"host": "h" * 300, "http": {"paths": [
        {"path": "/" + "a" * 300, "pathType": "Prefix",
         "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
@example({"metadata": {"name": "web", "namespace": "default"}, "spec": "garbage"})
def test_ingress_functions(obj: Obj) -> None:
    caches = _caches(obj)
    loader = GroupLoader(caches, ingress_class="alb")
    mapper = ingress_watches.GroupMapper(loader, caches)
    vanished = VanishedMembers()
    for fn in (ingress_watches.ingress_service_index, ingress_watches.ingress_secret_index,
               ingress_watches.service_secret_index, ingress_watches.binding_stack_index,
               index_keys, class_keys,
               ingress_watches.ingress_view, ingress_watches.service_view,
               ingress_watches.secret_view, ingress_watches.spec_and_annotations,
               ingress_watches.labels_view, oidc_secret_names, mapper.groups_for_ingress,
               mapper.groups_for_service, mapper.groups_for_secret, mapper.groups_for_class,
               mapper.groups_for_params, mapper.groups_for_namespace,
               mapper.group_for_binding, vanished.released, vanished.returned,
               lambda o: ingress_secrets(o, caches.services,
                                         ingress_watches.ingress_service_index(o))):
        fn(obj)
    vanished.on_add(obj, True)
    vanished.on_update(obj, obj)
    vanished.on_delete(obj)
    for parser in (lambda: parse_ingress(obj), lambda: parse_auth(obj, obj),
                   lambda: parse_target_group(obj, obj, default_target_type="ip"),
                   lambda: classify(obj, caches, ingress_class="alb"),
                   lambda: parse_params(obj)):
        _contained(parser)
    for request in [*loader.groups_of(obj), Request("", "g"), Request("default", "web")]:
        loader.versions(request)
        group = loader.load(request)
        recorded_members(obj, request)
        vanished.unknown(request, recorded_unknown(group, lambda key: key in caches.ingresses))
        _contained(lambda: build_group(group, caches, INGRESS_SETTINGS))  # noqa: B023
        for policy in POLICIES:
            settle(group, caches=caches, policy=policy,
                   build=lambda g: build_group(g, caches, INGRESS_SETTINGS),
                   unknown=vanished.of(request))


@SETTINGS
@given(objects)
def test_service_functions(obj: Obj) -> None:
    for kind in EventKind:
        service_watches.services_we_build("service.k8s.aws/nlb")(Event(kind, obj, obj))
    service_watches.service_view(obj)
    service_watches.binding_view(obj)
    service_watches.service_stack_index(obj)
    service_watches.service_for_binding(obj)
    _contained(lambda: checkpoint_of(obj, settings=SERVICE_SETTINGS))


@SETTINGS
@given(objects, objects)
@example({"metadata": {"name": "web", "namespace": "default"}, "spec": "garbage"}, {})
def test_target_group_binding_functions(obj: Obj, other: Obj) -> None:
    bindings = Store()
    bindings.add_indexer(tgb_watches.SERVICE_INDEX, tgb_watches.binding_service_index)
    bindings.add_indexer(tgb_watches.TARGET_TYPE_INDEX, tgb_watches.binding_target_type_index)
    bindings.add_indexer(targetgroupaccess.TARGET_GROUP_INDEX,
                         targetgroupaccess.binding_target_group_index)
    bindings.upsert(obj)
    bindings.upsert(other)
    for fn in (tgb_watches.binding_service_index, tgb_watches.binding_target_type_index,
               tgb_watches.slice_service_index, tgb_watches.binding_view,
               tgb_watches.service_view, tgb_watches.slice_view, tgb_watches.node_view,
               tgb_watches.bindings_of_service(bindings), tgb_watches.bindings_of_slice(bindings),
               tgb_watches.bindings_of_node(bindings), instance_id, node_fit_for_traffic,
               targetgroupaccess.binding_target_group_index, targetgroupaccess.is_multi_cluster,
               registered_target_group):
        fn(obj)
    facts = targetgroupaccess.TargetGroupFacts(arn="arn:tg", name="tg", vpc_id="vpc-1")
    targetgroupaccess.bindings_of(bindings.by_index, facts)
    targetgroupaccess.holds(obj, "arn:tg")
    targetgroupaccess.may_share(obj, other)
    targetgroupaccess.rival(obj, [obj, other], "arn:tg")
    _contained(lambda: targetgroupaccess.check_rivals(obj, [other], facts))
    _contained(lambda: targetgroupaccess.check_forward(facts, namespace="default", bindings=[obj]))
    _contained(lambda: parse_spec(obj))
    # What the networking manager reads of every binding in the cache on each pass.
    claims = BindingClaims(bindings.list, NetworkingPolicy(cluster="c", vpc_id="vpc-1"))
    assert claims() == claims()
    _contained(lambda: find_service_port(obj, 80, service_key="k"))
    _contained(lambda: find_service_port(obj, "http", service_key="k"))
    _contained(lambda: ip_endpoints(other, [obj]))
    with contextlib.suppress(SlicesNotCached):  # an index entry, to be fetched
        _contained(lambda: SliceMemo().ip_endpoints("default/web", other, [obj, obj]))
    trimmer = SliceTrimmer(bindings)
    for trim in (trimmer, kept_slice, index_entry, is_index_entry):
        trim(copy.deepcopy(obj))
    # The slice predicate, on the objects as they come and as the cache keeps them, and the
    # watch decoder on the objects' JSON: it decides for the one event only.
    pods_store = Store()
    pods_store.add_indexer(pods.GATE_INDEX, pods.gate_index)
    changed = tgb_watches.SliceChanged(bindings, pods_store)
    kept = [kept_slice(copy.deepcopy(o)) for o in (obj, other)]
    for old, new in ((obj, other), (kept[0], kept[1]), (other, obj)):
        changed(Event(EventKind.UPDATE, new, old))
    decoded = decode_slice_event(json.dumps({"type": "MODIFIED", "object": obj}).encode())
    assert isinstance(decoded, dict)
    _contained(lambda: instance_endpoints(obj, other, [obj], selector=None, service_key="k"))


gate_names = st.one_of(json_values, st.sampled_from(
    ["target-health.elbv2.k8s.aws/web", "target-health.elbv2.k8s.aws/", "example.com/other"]))
pod_objects = st.fixed_dictionaries(
    {"metadata": st.one_of(metadata, json_values)},
    optional={"spec": st.one_of(json_values, st.fixed_dictionaries({}, optional={
        "readinessGates": st.one_of(json_values, st.lists(st.one_of(json_values, (
            st.fixed_dictionaries({"conditionType": gate_names}))), max_size=3))})),
        "status": st.one_of(json_values, st.fixed_dictionaries({}, optional={
            "conditions": st.one_of(json_values, st.lists(st.one_of(
                json_values, st.fixed_dictionaries({"type": gate_names}, optional={
                    "status": json_values, "reason": json_values})), max_size=3))}))})


@SETTINGS
@given(pod_objects)
@example({"metadata": "garbage", "spec": {"readinessGates": [{"conditionType": 1}]}})
def test_pod_functions(pod: Obj) -> None:
    # Pods are any namespace's data and the pod cache is cluster-wide: its transform, index,
    # view and mapping functions never raise, whatever a pod holds.
    slim = pods.slim_pod(pod)
    for obj in (pod, slim):
        pods.gate_index(obj)
        pods.pod_view(obj)
        pods.bindings_of_pod(obj)
        pods.waits_only_for_target_health(obj, "target-health.elbv2.k8s.aws/web")
    assert pods.gate_index(slim) == pods.gate_index(pod)


def test_json_limits_are_documented_and_enforced() -> None:
    assert load_json(_nested(MAX_JSON_DEPTH)) is not None
    for raw in (_nested(MAX_JSON_DEPTH + 1), "[" + " " * MAX_VALUE_LENGTH + "]"):
        with pytest.raises(ValueError, match=r"nested deeper|longer than"):
            load_json(raw)
        with pytest.raises(AnnotationError, match=r"nested deeper|longer than"):
            parse_json("k", raw, list[object])
