"""Fixtures of the webhook server tests (see support.py)."""

from tests.integration.runtime.webhook.support import client, registry

__all__ = ["client", "registry"]
