"""A frontend NLB's target groups (target type `alb`): each holds one target, the stack's own
application load balancer on one of its listener ports, registered once the load balancer and
that listener exist (upstream's frontend_nlb_target_synthesizer.go, PostSynthesize). Only the
stack's own target groups are read or changed; a converged one costs one DescribeTargetHealth.

Unlike upstream, a changed ALB port is followed too (upstream compares the target's id only):
the old registration is removed before the new one is made, since such a target group holds
one load balancer at most."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError
from controller.model import TARGET_GROUP


async def converge_load_balancer_targets(run: DeployRun, lb_arns: Mapping[str, str]) -> None:
    """`lb_arns`: the stack's load balancers' ARNs by resource id, as just converged."""
    for rid, tg in sorted(run.stack.target_groups.items()):
        target = tg.load_balancer_target
        if target is None:
            continue
        tg_arn = run.status.get((TARGET_GROUP, rid, "targetGroupARN"))
        lb_arn = lb_arns.get(target.load_balancer)
        if tg_arn is None or lb_arn is None:
            raise DeployError(f"target group {tg.name}: its load balancer "
                              f"{target.load_balancer} is not deployed")
        resp = await run.calls.call("DescribeTargetHealth", TargetGroupArn=tg_arn)
        have: list[dict[str, Any]] = [d["Target"] for d in
                                      resp.get("TargetHealthDescriptions") or []
                                      if isinstance(d.get("Target"), dict)]
        wanted = {"Id": lb_arn, "Port": target.port}
        stale = [{"Id": t["Id"], **({"Port": t["Port"]} if "Port" in t else {})}
                 for t in have if (t.get("Id"), t.get("Port")) != (lb_arn, target.port)]
        if stale:
            await run.calls.call("DeregisterTargets", TargetGroupArn=tg_arn, Targets=stale)
        if len(stale) == len(have):
            await run.calls.call("RegisterTargets", TargetGroupArn=tg_arn, Targets=[wanted])


__all__ = ["converge_load_balancer_targets"]
