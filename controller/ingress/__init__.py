"""Ingress → Application Load Balancer: IngressClass ownership, Ingress groups, annotations,
the pure model builder and the group reconciler. The same facade as every controller package:
`Settings`, `setup(manager, *, pool, settings)`."""

from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group
from controller.ingress.wiring import CONTROLLER_NAME, Settings, setup

__all__ = ["BUILDER_VERSION", "CONTROLLER_NAME", "BuilderSettings", "BuiltGroup", "Settings",
           "build_group", "setup"]
