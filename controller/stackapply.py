"""The tail every load-balancer reconcile ends with, once its stack is built and qualified:
finalizer -> deploy -> managed TargetGroupBindings -> Events -> status -> checkpoint. The
Service controller runs it for one Service, the Ingress controller for every member of a group;
a Gateway and its routes will run it the same way.

The order is what keeps crashes and restarts honest:
- the finalizer goes on first (nothing reaches AWS for an object that could vanish without a
  cleanup), in the same PATCH as the reset of a stored checkpoint of an older model, so that a
  crash mid-deploy can never leave a false match;
- write-only fields (OIDC client secrets, which AWS never returns) are written unless every
  owner's checkpoint says this very stack was deployed;
- the deploy keeps target groups a binding still points at; the bindings follow, matched by
  target group ARN, and only then are the ones the stack no longer wants deleted (the
  listeners point elsewhere by now; their target groups go on a later pass);
- status, then the checkpoint, which is not written while old bindings or their target groups
  remain, nor while a capacity reservation waits for its load balancer to be active
  (`Applied.unfinished`: the caller comes back and deploys again).
The checkpoint is written whether or not checkpoints are acted on (`--enable-checkpoints`), so
the stored value always tells the truth about what was deployed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from controller import checkpoint
from controller.apis import CHECKPOINT_ANNOTATION
from controller.bindings import BindingWriter, retained_arns
from controller.deploy import DeployResult, StackDeployer
from controller.lbcmetrics import stage
from controller.model import Stack
from controller.reconcilers import ObjectWriter
from runtime.clock import Clock
from runtime.objects import Obj, has_finalizer

StatusFn = Callable[[Obj, str], Obj | None]
# (owner, the stack's load balancer's hostname, its frontend NLB's hostname or "").
FrontendStatusFn = Callable[[Obj, str, str], Obj | None]
"""(owner, load balancer hostname or "") → the owner's status patch, None when it holds."""
AnnotationsFn = Callable[[Obj], Mapping[str, str | None]]
"""owner → annotations the kind records on it with every pass (an Ingress group's members)."""


@dataclass(frozen=True)
class Applied:
    owners: tuple[Obj, ...]  # as last written
    result: DeployResult
    binding_writes: int
    # Old bindings or their target groups remain, or the capacity reservation waits for the load
    # balancer to be active: no checkpoint yet, come back (after `retry_after`).
    unfinished: bool
    # Anything was written, in AWS or in Kubernetes.
    changed: bool

    @property
    def capacity_pending(self) -> bool:
        """The load balancer is still provisioning: come back after the stabilization monitor's
        interval rather than the cleanup poll."""
        return self.result.capacity_pending

    @property
    def hostname(self) -> str:
        return self.result.load_balancer.dns_name if self.result.load_balancer else ""


class StackApplier:
    def __init__(self, *, deployer: StackDeployer, writer: ObjectWriter,
                 bindings: BindingWriter, clock: Clock) -> None:
        self._deployer = deployer
        self._writer = writer
        self._bindings = bindings
        self._clock = clock

    async def apply(self, stack: Stack, *, value: str, owners: Sequence[Obj], finalizer: str,
                    current: Sequence[Obj], status: StatusFn,
                    annotations: AnnotationsFn | None = None,
                    frontend_status: FrontendStatusFn | None = None) -> Applied:
        """Deploy `stack`, whose checkpoint is `value`, for `owners` (they carry `finalizer`
        and the checkpoint); `current`: the stack's managed bindings in the cache."""
        writer = self._writer
        # No owner carried the finalizer yet: nothing of this stack can be in AWS.
        fresh = not any(has_finalizer(o, finalizer) for o in owners)
        matched = all(checkpoint.stored(o) == value for o in owners)
        written: list[Obj] = []
        writes = 0
        with stage("add_finalizers"):
            for owner in owners:
                stored = checkpoint.stored(owner)
                reset = {CHECKPOINT_ANNOTATION: ""} if stored and stored != value else None
                after = await writer.patch_metadata(owner, add_finalizer=finalizer,
                                                    annotations=reset)
                writes += after is not owner
                written.append(after)
        with stage("deploy_model"):
            result = await self._deployer.deploy(stack, fresh=fresh,
                                                 rewrite_write_only=not matched,
                                                 retain=retained_arns(current))
            applied = await self._bindings.apply(result.target_group_bindings.values(),
                                                 current)
        writes += applied.writes
        for name in applied.taken:
            for owner in written:
                writer.event(owner, "Warning", "BindingNameTaken",
                             f"TargetGroupBinding {name} exists and points at another target "
                             "group; not replaced")
        for reason, message in result.warnings:
            for owner in written:
                writer.event(owner, "Warning", reason, message)
        unfinished = bool(result.retained_target_groups or applied.blocked
                          or result.capacity_pending)
        hostname = result.load_balancer.dns_name if result.load_balancer else ""
        # A stack's other load balancer (an Ingress group's frontend NLB), for `frontend_status`.
        frontend = next((st.dns_name for st in result.load_balancers.values()
                         if result.load_balancer is None or st.arn != result.load_balancer.arn),
                        "")
        final: list[Obj] = []
        with stage("update_status"):
            for owner in written:
                after = await writer.patch_status(
                    owner, status(owner, hostname) if frontend_status is None
                    else frontend_status(owner, hostname, frontend))
                wanted: dict[str, str | None] = dict(annotations(owner)) if annotations else {}
                if not unfinished and checkpoint.stored(after) != value:
                    wanted.update(checkpoint.patch(
                        value, timestamp=self._clock.wall())["metadata"]["annotations"])
                last = await writer.patch_metadata(after, annotations=wanted)
                writes += (after is not owner) + (last is not after)
                final.append(last)
        changed = result.mutating_calls > 0 or writes > 0
        if changed:
            for owner in final:
                writer.event(owner, "Normal", "SuccessfullyReconciled", "Successfully reconciled")
        return Applied(owners=tuple(final), result=result, binding_writes=applied.writes,
                       unfinished=unfinished, changed=changed)


__all__ = ["AnnotationsFn", "Applied", "FrontendStatusFn", "StackApplier", "StatusFn"]
