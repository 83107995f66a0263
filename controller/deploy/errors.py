"""Deploy errors. Each carries one message fit for an Event or a status condition."""

from __future__ import annotations


class DeployError(Exception):
    """The stack could not be converged this time (retry later)."""


class OwnershipConflict(DeployError):
    """A resource with the stack's deterministic name exists but belongs to someone else."""


class ResolveError(DeployError):
    """A placeholder could not be resolved (no subnets for a role, no certificate for a host,
    too few availability zones): bad input, not worth retrying until something changes."""

