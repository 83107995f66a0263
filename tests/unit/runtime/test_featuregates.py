"""Feature gates in Kubernetes' syntax: defaults, given states, and pinned gates that refuse
the state the program does not have yet."""

from __future__ import annotations

import re

import pytest

from runtime.featuregates import FeatureGates, Gate

GATES = FeatureGates.of([
    Gate(name="Acted", default=False, help="acted on"),
    Gate(name="PinnedOn", default=False, pinned=True, help="always on for now"),
    Gate(name="PinnedOff", default=True, pinned=False),
], program="tool")


def test_defaults_and_given_states() -> None:
    assert GATES.enabled("Acted") is False
    gates = GATES.parse("Acted=true, PinnedOn=true,PinnedOff=false")
    assert gates.states == {"Acted": True, "PinnedOff": False, "PinnedOn": True}
    assert gates.text() == "Acted=true,PinnedOff=false,PinnedOn=true"
    assert gates.parse("Acted=False").enabled("Acted") is False  # later settings win
    assert GATES.parse("") == GATES
    assert hash(gates) == hash(GATES.parse("PinnedOff=false,PinnedOn=true,Acted=true"))


def test_a_pinned_gate_is_in_its_pinned_state_whatever_its_default() -> None:
    assert (GATES.enabled("PinnedOn"), GATES.enabled("PinnedOff")) == (True, False)
    assert not GATES.gate("PinnedOn").acted_on


@pytest.mark.parametrize(("text", "message"), [
    ("Nope=true", "unknown feature gate 'Nope'"),
    ("Acted=yes", "feature gate Acted: expected true or false, got 'yes'"),
    ("Acted", "expected Name=true|false, got 'Acted'"),
    ("PinnedOn=false", "feature gate PinnedOn: not supported yet; tool behaves as PinnedOn=true"),
    ("PinnedOff=true", "feature gate PinnedOff: not supported yet; tool behaves as "
                       "PinnedOff=false"),
])
def test_bad_settings_name_the_gate(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        GATES.parse(text)


def test_a_gate_not_declared_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="Nope"):
        GATES.enabled("Nope")
    with pytest.raises(ValueError, match="declared twice"):
        FeatureGates.of([Gate(name="A", default=True), Gate(name="A", default=False)],
                        program="tool")


def test_the_listing_shows_defaults_and_pins() -> None:
    lines = GATES.describe().splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["Acted=false", "acted"], ["PinnedOff=true", "pinned:"], ["PinnedOn=false", "pinned:"]]
    assert lines[2].split()[2:4] == ["true", "always"]
