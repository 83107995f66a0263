"""The stack deployer: converges AWS ELBv2 resources to a `controller.model.Stack`."""

from controller.deploy.deployer import DeployerSettings, StackDeployer
from controller.deploy.errors import DeployError, OwnershipConflict, ResolveError
from controller.deploy.resolve import ResolverSettings, StackResolver
from controller.deploy.result import DeployResult, LoadBalancerStatus, ResolvedTargetGroupBinding
from controller.deploy.tags import CLUSTER_TAG, resource_tag, stack_tag

__all__ = [
    "CLUSTER_TAG",
    "DeployError",
    "DeployResult",
    "DeployerSettings",
    "LoadBalancerStatus",
    "OwnershipConflict",
    "ResolveError",
    "ResolvedTargetGroupBinding",
    "ResolverSettings",
    "StackDeployer",
    "StackResolver",
    "resource_tag",
    "stack_tag",
]
