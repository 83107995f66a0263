"""Event predicates: which events each one passes, for every kind of event."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.predicates import (
    And,
    AnnotationChanged,
    DeletionStarted,
    Event,
    EventKind,
    GenerationChanged,
    LabelChanged,
    Not,
    Or,
    Predicate,
    ResourceVersionChanged,
    ViewChanged,
)


def obj(rv: str = "1", *, generation: int = 1, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, deleting: bool = False,
        spec: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "a", "namespace": "ns", "resourceVersion": rv,
                            "generation": generation, "labels": labels or {},
                            "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": spec}


def add(o: dict[str, Any], *, initial: bool = False) -> Event:
    return Event(EventKind.INITIAL_ADD if initial else EventKind.ADD, o)


def update(old: dict[str, Any], new: dict[str, Any]) -> Event:
    return Event(EventKind.UPDATE, new, old)


def resync(o: dict[str, Any]) -> Event:
    return Event(EventKind.RESYNC, o, o)


def delete(o: dict[str, Any]) -> Event:
    return Event(EventKind.DELETE, o)


CHANGE_PREDICATES: list[Predicate] = [
    GenerationChanged(), AnnotationChanged(), AnnotationChanged(keys={"k"}), LabelChanged(),
    ViewChanged(lambda o: o.get("spec")),
]


@pytest.mark.parametrize("predicate", CHANGE_PREDICATES)
def test_change_predicates_let_adds_deletes_and_resyncs_through(predicate: Predicate) -> None:
    o = obj()
    assert predicate(add(o))
    assert predicate(add(o, initial=True))
    assert predicate(resync(o))
    assert predicate(delete(o))
    assert not predicate(update(obj("1"), obj("2")))  # nothing it looks at changed


def test_resource_version_changed_drops_resyncs_and_nothing_else() -> None:
    p = ResourceVersionChanged()
    assert not p(resync(obj()))
    assert p(update(obj("1"), obj("2")))
    assert p(add(obj(), initial=True))
    assert p(delete(obj()))


def test_generation_changed() -> None:
    p = GenerationChanged()
    assert p(update(obj("1", generation=1), obj("2", generation=2)))
    assert not p(update(obj("1", labels={"a": "b"}), obj("2", labels={"a": "c"})))


def test_annotation_changed_all_or_some_keys() -> None:
    every = AnnotationChanged()
    some = AnnotationChanged(keys=["k"])
    other = update(obj("1", annotations={"x": "1"}), obj("2", annotations={"x": "2"}))
    mine = update(obj("1", annotations={"k": "1"}), obj("2", annotations={"k": "2"}))
    gone = update(obj("1", annotations={"k": "1"}), obj("2"))
    assert every(other)
    assert every(mine)
    assert every(gone)
    assert not some(other)
    assert some(mine)
    assert some(gone)


def test_label_changed() -> None:
    p = LabelChanged()
    assert p(update(obj("1", labels={"a": "1"}), obj("2", labels={"a": "2"})))
    assert not p(update(obj("1", annotations={"a": "1"}), obj("2", annotations={"a": "2"})))


def test_view_changed_compares_what_the_view_returns() -> None:
    p = ViewChanged(lambda o: (o.get("spec"), o["metadata"]["labels"].get("tier")))
    assert p(update(obj("1", spec={"port": 80}), obj("2", spec={"port": 81})))
    assert p(update(obj("1", labels={"tier": "web"}), obj("2", labels={"tier": "db"})))
    assert not p(update(obj("1", labels={"x": "1"}), obj("2", labels={"x": "2"})))


def test_deletion_started() -> None:
    p = DeletionStarted()
    assert p(update(obj("1"), obj("2", deleting=True)))
    assert not p(update(obj("2", deleting=True), obj("3", deleting=True)))  # already started
    assert not p(update(obj("1"), obj("2")))
    assert p(delete(obj()))
    assert p(add(obj(deleting=True), initial=True))  # started before we looked
    assert not p(add(obj(), initial=True))
    assert not p(resync(obj(deleting=True)))


def test_and_or_not() -> None:
    yes: Predicate = lambda e: True  # noqa: E731
    no: Predicate = lambda e: False  # noqa: E731
    e = add(obj())
    assert And(yes, yes)(e)
    assert not And(yes, no)(e)
    assert And()(e)
    assert Or(no, yes)(e)
    assert not Or(no, no)(e)
    assert not Or()(e)
    assert Not(no)(e)
    assert not Not(yes)(e)
    # Composed: a real change of labels, or the deletion starting.
    p = Or(LabelChanged(), DeletionStarted())
    assert p(update(obj("1"), obj("2", deleting=True)))
    assert p(update(obj("1", labels={"a": "1"}), obj("2", labels={"a": "2"})))
    assert not And(ResourceVersionChanged(), GenerationChanged())(resync(obj()))


@pytest.mark.parametrize("hostile", [
    {"metadata": None}, {"metadata": []}, {}, {"metadata": {"labels": "x", "annotations": 5,
                                                            "generation": "2"}},
])
def test_hostile_objects_never_raise(hostile: dict[str, Any]) -> None:
    predicates: list[Predicate] = [*CHANGE_PREDICATES[:-1], DeletionStarted(),
                                   ResourceVersionChanged()]
    for predicate in predicates:
        for event in (add(hostile), update(hostile, obj()), update(obj(), hostile),
                      resync(hostile), delete(hostile)):
            assert isinstance(predicate(event), bool)
