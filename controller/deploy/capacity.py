"""A load balancer's capacity reservation (upstream's LBCapacityReservation): set once the load
balancer is active, as upstream's stabilization monitor does.

AWS takes a reservation only for a load balancer past `provisioning`. A new one (or one found
still provisioning) is looked at once more right away; if it is still provisioning the deploy
says so (`DeployResult.capacity_pending`) and the reconciler comes back after
`--lb-stabilization-monitor-interval`, instead of waiting inside the deploy. The model's
`capacity_units`: None leaves the reservation alone (upstream does not reset it when the
annotation goes away), 0 resets it, more sets it; a converged reservation costs one read."""

from __future__ import annotations

from typing import Any

from controller.deploy.deployrun import DeployRun
from controller.deploy.errors import DeployError

PROVISIONING = "provisioning"


def reserved_units(answer: dict[str, Any]) -> int | None:
    """DescribeCapacityReservation's answer → the units reserved (None: no reservation)."""
    minimum = answer.get("MinimumLoadBalancerCapacity")
    if not minimum:
        return None
    units = minimum.get("CapacityUnits")
    return int(units) if units else None


async def still_provisioning(run: DeployRun, arn: str, state: str) -> bool:
    """Whether the load balancer is still provisioning; `state` is what the deploy saw (a
    creation's answer, or the load balancer found): only `provisioning` is read again."""
    if state != PROVISIONING:
        return False
    answer = await run.calls.call("DescribeLoadBalancers", LoadBalancerArns=[arn])
    found = answer.get("LoadBalancers") or []
    if not found:
        raise DeployError(f"load balancer {arn} is gone while waiting for it to be active")
    return bool((found[0].get("State") or {}).get("Code") == PROVISIONING)


async def converge_capacity(run: DeployRun, arn: str, units: int | None, state: str) -> bool:
    """Converge the reservation to `units`; True when it has to wait for the load balancer to
    leave `provisioning` (nothing was changed then)."""
    if units is None:
        return False
    if await still_provisioning(run, arn, state):
        return True
    answer = await run.calls.call("DescribeCapacityReservation", LoadBalancerArn=arn)
    want = units or None
    if reserved_units(answer) == want:
        return False
    if want is None:
        await run.calls.call("ModifyCapacityReservation", LoadBalancerArn=arn,
                             ResetCapacityReservation=True)
    else:
        await run.calls.call("ModifyCapacityReservation", LoadBalancerArn=arn,
                             MinimumLoadBalancerCapacity={"CapacityUnits": want})
    return False


__all__ = ["PROVISIONING", "converge_capacity", "reserved_units", "still_provisioning"]
