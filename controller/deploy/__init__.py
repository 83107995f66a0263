"""The stack deployer: converges AWS ELBv2 resources to a `controller.model.Stack`."""

from controller.deploy.calls import AfterMutation, BeforeMutation, CallCounts, is_mutating
from controller.deploy.deployer import DeployerSettings, StackDeployer
from controller.deploy.errors import DeployError, OwnershipConflict, ResolveError
from controller.deploy.resolve import ResolverSettings, StackResolver
from controller.deploy.result import DeployResult, LoadBalancerStatus, ResolvedTargetGroupBinding
from controller.deploy.snapshot import RegionSnapshot
from controller.deploy.tags import CLUSTER_TAG, resource_tag, stack_tag

__all__ = [
    "CLUSTER_TAG",
    "AfterMutation",
    "BeforeMutation",
    "CallCounts",
    "DeployError",
    "DeployResult",
    "DeployerSettings",
    "LoadBalancerStatus",
    "OwnershipConflict",
    "RegionSnapshot",
    "ResolveError",
    "ResolvedTargetGroupBinding",
    "ResolverSettings",
    "StackDeployer",
    "StackResolver",
    "is_mutating",
    "resource_tag",
    "stack_tag",
]
