"""Ingress → Application Load Balancer: IngressClass ownership, Ingress groups, annotations,
the pure model builder and the group reconciler. The same facade as every controller package:
`Settings`, `setup(manager, *, pool, settings)`; `admit`/`admit_params` decide admission with
the same code."""

from controller.ingress.admission import admit, admit_params, web_acl_names
from controller.ingress.caches import Caches
from controller.ingress.model import BUILDER_VERSION, BuilderSettings, BuiltGroup, build_group
from controller.ingress.settings import IngressConfig, Settings
from controller.ingress.wiring import CONTROLLER_NAME, admission_caches, setup

__all__ = ["BUILDER_VERSION", "CONTROLLER_NAME", "BuilderSettings", "BuiltGroup", "Caches",
           "IngressConfig", "Settings", "admission_caches", "admit", "admit_params",
           "build_group", "setup", "web_acl_names"]
