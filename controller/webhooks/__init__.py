"""The admission webhooks aiolbc serves (see README.md): `setup(manager, pool=, settings=)`."""

from controller.webhooks.wiring import Settings, setup

__all__ = ["Settings", "setup"]
