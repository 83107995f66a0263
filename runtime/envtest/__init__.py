"""A local Kubernetes API server (aiohttp) for tests and the demo; see README.md."""

from runtime.envtest.faults import Faults, RequestRecord
from runtime.envtest.server import EnvTestServer

__all__ = ["EnvTestServer", "Faults", "RequestRecord"]
