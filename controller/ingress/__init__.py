"""Ingress → Application Load Balancer: IngressClass ownership, Ingress groups, annotations,
the pure model builder and the group reconciler."""

from controller.ingress.controller import IngressSettings, setup
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group

__all__ = ["BUILDER_VERSION", "BuilderSettings", "BuiltGroup", "IngressSettings", "build_group",
           "setup"]
