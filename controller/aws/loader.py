"""One botocore data loader per process.

A botocore session parses its service models and endpoint data (JSON files of several MB for
EC2 and the endpoint rules) the first time a client needs them, and caches them in its own
loader. The controller has one session, but whoever makes several (a test process makes one
per AWS pool and per stand-in client) parses the same files again each time: most of the CPU
of a suite of integration tests. Sessions given the shared loader parse each file once. What
the loader returns is only read by botocore, so sharing it changes nothing else.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from botocore.loaders import Loader, create_loader

S = TypeVar("S")

_loaders: dict[Any, Loader] = {}
_lock = threading.Lock()  # stand-in clients are made on other threads too


def with_shared_loader(session: S) -> S:
    """`session` (botocore's or aiobotocore's) reading data through the process's loader for
    its data path (`AWS_DATA_PATH`)."""
    data_path = session.get_config_variable("data_path")  # type: ignore[attr-defined]
    with _lock:
        loader = _loaders.get(data_path)
        if loader is None:
            loader = _loaders[data_path] = create_loader(data_path)
    session.register_component("data_loader", loader)  # type: ignore[attr-defined]
    return session


__all__ = ["with_shared_loader"]
