"""The admission webhooks aiolbc serves (see README.md): `setup(manager, pool=, settings=)`."""

from controller.webhooks.settings import Settings, WebhookConfig
from controller.webhooks.wiring import setup

__all__ = ["Settings", "WebhookConfig", "setup"]
