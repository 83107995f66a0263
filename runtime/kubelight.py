"""kubernetes_asyncio's kubeconfig loaders, without the generated API client they come with.

Importing any part of kubernetes_asyncio runs its package `__init__`, which imports the whole
generated client: about 860 modules of API classes and models, some 60 MiB of a controller
whose own HTTP client (runtime/client.py) uses none of them. The kubeconfig loaders need only
`Configuration`. `light()` enters the two package modules (`kubernetes_asyncio` and its
`client`) into `sys.modules` unexecuted, with the loaders' few imports done: every submodule
still imports as usual, and the first use of anything else in either package (`client.CoreV1Api`,
`kubernetes_asyncio.watch`) runs that package's own `__init__` then, into the same module, so
code that does use the generated client (tests, tools) gets all of it, only later.

When kubernetes_asyncio is imported already, or its layout is not the expected one, nothing is
changed: the loaders then import as they always did.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

_ROOT = "kubernetes_asyncio"
_CLIENT = "kubernetes_asyncio.client"
# Names of the packages' own `__init__` that mean "run it" (the rest are the import system's,
# set already, or introspection asking whether they exist).
_PACKAGE_DUNDERS = frozenset({"__version__", "__project__", "__all__"})


def _unexecuted(name: str) -> ModuleType | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return None
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    executed = False

    def __getattr__(attr: str) -> Any:  # a module __getattr__ (PEP 562)
        nonlocal executed
        if attr.startswith("__") and attr not in _PACKAGE_DUNDERS:  # introspection's probes
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if importlib.util.find_spec(f"{name}.{attr}") is not None:
            # A submodule (`from kubernetes_asyncio.client import rest`): just that one, as
            # the import system would, not the package's __init__ from inside its import.
            return importlib.import_module(f"{name}.{attr}")
        if not executed:
            executed = True
            log.debug("importing all of %s for %s", name, attr)
            loader.exec_module(module)  # the package's own __init__, into this module
            if attr in module.__dict__:
                return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def _real_api_client(*args: Any, **kwargs: Any) -> Any:
    return importlib.import_module(f"{_CLIENT}.api_client").ApiClient(*args, **kwargs)


class _ApiClient:
    """What the loaders' module knows as `ApiClient` (only its `new_client_from_config` calls
    it): the real class, imported when first called."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real_api_client(*args, **kwargs)


def light() -> bool:
    """Enter the light packages if kubernetes_asyncio is not imported yet; True if entered."""
    if _ROOT in sys.modules:
        return False
    root = _unexecuted(_ROOT)
    if root is None:
        return False
    sys.modules[_ROOT] = root
    try:
        client = _unexecuted(_CLIENT)
        if client is None:
            raise ImportError(_CLIENT)
        sys.modules[_CLIENT] = client
        root.client = client  # type: ignore[attr-defined]
        configuration = importlib.import_module(f"{_CLIENT}.configuration")
        client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
        # Only while the loaders import: whoever asks the package for ApiClient later gets
        # the real class (and the package's __init__ with it).
        client.ApiClient = _ApiClient  # type: ignore[attr-defined]
        try:
            importlib.import_module(f"{_ROOT}.config")
        finally:
            del client.ApiClient
    except Exception as exc:  # a layout we do not know: import it all, as before
        log.debug("kubernetes_asyncio imported whole: %r", exc)
        for name in [n for n in sys.modules if n == _ROOT or n.startswith(_ROOT + ".")]:
            del sys.modules[name]
        return False
    return True


__all__ = ["light"]
