"""The WAF Classic (regional) web ACL association of a load balancer the stack owns (upstream's
`pkg/deploy/wafregional` synthesizer): the same rules as WAFv2, by web ACL ID."""

from __future__ import annotations

from controller.aws import addonreads
from controller.deploy.deployrun import DeployRun
from controller.model import WAFRegionalAssociation


async def converge_waf_regional(run: DeployRun, lb_arn: str,
                                desired: WAFRegionalAssociation | None) -> None:
    """`lb_arn` must be a load balancer of this stack (created or found by its tags)."""
    if desired is None:
        return
    current = await addonreads.waf_regional_web_acl_of(run.calls, lb_arn)
    if desired.web_acl_id == current:
        return
    if not desired.web_acl_id:
        await run.calls.call("DisassociateWebACL", service="waf-regional", ResourceArn=lb_arn)
        return
    await run.calls.call("AssociateWebACL", service="waf-regional",
                         WebACLId=desired.web_acl_id, ResourceArn=lb_arn)


__all__ = ["converge_waf_regional"]
