"""`runtime` is the runtime's public facade: every name it lists is the object its home module
defines, and importing the package (or one of its leaves) loads nothing else, so the local API
server, which stands on the clock alone, stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import runtime
from tests.support.paths import REPO


def test_every_listed_name_is_its_home_modules_object() -> None:
    assert runtime.__all__, "the facade lists nothing"
    for name in runtime.__all__:
        home = importlib.import_module(runtime._HOMES[name])
        assert getattr(runtime, name) is getattr(home, name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = runtime.Nope


def test_importing_the_package_or_the_clock_loads_no_other_module() -> None:
    code = ("import sys, runtime, runtime.clock; "
            "print(sorted(m for m in sys.modules if m.startswith('runtime')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "['runtime', 'runtime.clock']"


def test_the_list_and_the_homes_agree() -> None:
    assert sorted(runtime.__all__) == sorted(runtime._HOMES)
