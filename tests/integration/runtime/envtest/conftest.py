"""Fixtures of the envtest tests: raw HTTP to the server (`http`) and an HTTPS webhook server
(`hooks`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from runtime.envtest import EnvTestServer
from tests.integration.runtime.envtest.rawhttp import Http
from tests.integration.runtime.envtest.webhooks import WebhookServer


@pytest.fixture
async def http(envtest: EnvTestServer) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession(base_url=envtest.url) as session:
        yield Http(session)


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    """A running HTTPS webhook server (see webhooks.py)."""
    server = WebhookServer()
    await server.start()
    yield server
    await server.stop()
