"""The Shield Advanced protection of a load balancer the stack owns (upstream's
`pkg/deploy/shield` synthesizer): create one, named as upstream names it, when asked for and
there is none; when asked off, delete only a protection one of upstream's names marks as the
controller's (someone else's protection is left alone). The subscription is checked by the
resolve stage, before anything is created."""

from __future__ import annotations

from controller.aws import addonreads
from controller.deploy.deployrun import DeployRun
from controller.model import SHIELD_PROTECTION_NAME, SHIELD_PROTECTION_NAMES, ShieldProtection


async def converge_shield(run: DeployRun, lb_arn: str, desired: ShieldProtection | None) -> None:
    """`lb_arn` must be a load balancer of this stack (created or found by its tags)."""
    if desired is None:
        return
    current = await addonreads.protection_of(run.calls, lb_arn)
    if desired.enabled and current is None:
        await run.calls.call("CreateProtection", service="shield", Name=SHIELD_PROTECTION_NAME,
                             ResourceArn=lb_arn)
    elif not desired.enabled and current is not None and current.name in SHIELD_PROTECTION_NAMES:
        await run.calls.call("DeleteProtection", service="shield", ProtectionId=current.id)


__all__ = ["converge_shield"]
