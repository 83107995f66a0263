"""Bodies and watch events decode exactly as `json.loads` decodes them, including what only the
standard library accepts."""

from __future__ import annotations

import json

import pytest

from runtime import jsonbody

DOCUMENTS = [
    b'{"type":"MODIFIED","object":{"kind":"EndpointSlice","endpoints":[{"addresses":["10.0.0.1"],'
    b'"conditions":{"ready":true}}],"metadata":{"resourceVersion":"12"}}}',
    b'{"a": 1.5, "b": [null, false, "\\u00e9\\n"], "c": {}}',
    # Only the standard library takes these; whoever writes an object's fields can send them.
    b'[-9223372036854775808, 18446744073709551615, 1e400]',
    b'{"note": "1234567890123456789012 in a string"}',
    b'{"value": NaN, "other": -Infinity}',
    b'{"name": "\\ud800"}',
    b'{"dup": 1, "dup": 2}',
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_decodes_as_the_standard_library(document: bytes) -> None:
    got, want = jsonbody.loads(document), json.loads(document)
    assert repr(got) == repr(want)  # repr: NaN is not equal to itself


@pytest.mark.parametrize("document", [b"", b"{", b'{"a": }', b"\xff\xfe"])
def test_what_neither_takes_fails_as_before(document: bytes) -> None:
    with pytest.raises(ValueError):
        jsonbody.loads(document)


def test_an_integer_beyond_64_bits_is_a_float_as_kubernetes_holds_it() -> None:
    assert jsonbody.loads(b'{"port": 123456789012345678901234567890}') == {
        "port": 1.2345678901234568e+29}
