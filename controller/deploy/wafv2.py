"""The WAFv2 web ACL association of a load balancer the stack owns (upstream's
`pkg/deploy/wafv2` synthesizer): read the current association, then associate the desired web
ACL (AssociateWebACL replaces another one) or, for "none", disassociate. Nothing in the model
(no key on any member) leaves the association alone, as upstream does."""

from __future__ import annotations

from controller.aws import addonreads
from controller.deploy.deployrun import DeployRun
from controller.model import WAFv2Association, WebACLByName


async def converge_wafv2(run: DeployRun, lb_arn: str, desired: WAFv2Association | None) -> None:
    """`lb_arn` must be a load balancer of this stack (created or found by its tags)."""
    if desired is None:
        return
    # The resolve stage turned a name into its ARN.
    assert not isinstance(desired.web_acl, WebACLByName)
    current = await addonreads.wafv2_web_acl_of(run.calls, lb_arn)
    if desired.web_acl == current:
        return
    if not desired.web_acl:
        await run.calls.call("DisassociateWebACL", service="wafv2", ResourceArn=lb_arn)
        return
    await run.calls.call("AssociateWebACL", service="wafv2", WebACLArn=desired.web_acl,
                         ResourceArn=lb_arn)


__all__ = ["converge_wafv2"]
