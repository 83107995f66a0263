"""A local Kubernetes API server (aiohttp) for tests and the demo; see README.md."""

from runtime.envtest.auth import User, service_account_user
from runtime.envtest.faults import Faults, RequestRecord
from runtime.envtest.rbac import Denial
from runtime.envtest.server import EnvTestServer

__all__ = ["Denial", "EnvTestServer", "Faults", "RequestRecord", "User", "service_account_user"]
