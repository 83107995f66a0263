"""Load balancer capacity reservations, which moto 5.2 lacks (its DescribeCapacityReservation
answers one `provisioned` zone whatever the load balancer, and ModifyCapacityReservation does not
exist), filled in from AWS's ELBv2 API reference and user guide:

- `ModifyCapacityReservation`: `LoadBalancerArn` and at least one of
  `MinimumLoadBalancerCapacity` (`CapacityUnits`, at least 1) and `ResetCapacityReservation`
  (`ValidationError` otherwise); an unknown load balancer is `LoadBalancerNotFound`; more units
  than the account's limit (`CAPACITY_UNITS_LIMIT`, settable) is `CapacityUnitsLimitExceeded`;
  a decrease (fewer units, or a reset of a reservation) beyond two a day is
  `CapacityDecreaseRequestLimitExceeded`; a network load balancer with a TLS listener is
  `OperationNotPermitted` ("LCU reservation is not supported on Network Load Balancers using TLS
  listeners"), and so is a load balancer still `provisioning`, which is why the controller waits
  for it to be active.
- Both operations answer `LastModifiedTime`, `DecreaseRequestsRemaining`,
  `MinimumLoadBalancerCapacity` (while reserved) and `CapacityReservationState`: one
  `provisioned` entry per Availability Zone of the load balancer with its even share
  (`EffectiveCapacityUnits`); no reservation, no entries. A reservation is provisioned at once
  (AWS takes minutes to hours; `pending` and `CapacityReservationPending` are not modelled).
The reservation lives on moto's load balancer and goes with it.

moto makes every load balancer `active` at the first DescribeLoadBalancers; AWS takes minutes.
A load balancer whose name is in `HELD_PROVISIONING` stays `provisioning` until a test takes
it out, so that waiting for one can be tested."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

# The account's capacity-unit quota per load balancer as the stand-in applies it (tests may
# lower it to meet CapacityUnitsLimitExceeded).
CAPACITY_UNITS_LIMIT = 15_000
DECREASES_PER_DAY = 2
# Names of load balancers kept `provisioning` (see the module's docstring).
HELD_PROVISIONING: set[str] = set()
_applied = False


@dataclass
class _Reservation:
    units: int | None = None
    modified: datetime.datetime | None = None
    day: datetime.date = field(default_factory=lambda: _now().date())
    decreases: int = 0

    def remaining(self) -> int:
        if self.day != _now().date():
            self.day, self.decreases = _now().date(), 0
        return DECREASES_PER_DAY - self.decreases


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def reservation_of(balancer: Any) -> _Reservation:
    found: _Reservation | None = getattr(balancer, "_aiolbc_capacity", None)
    if found is None:
        found = _Reservation()
        balancer._aiolbc_capacity = found
    return found


def _answer(balancer: Any) -> dict[str, Any]:
    held = reservation_of(balancer)
    result: dict[str, Any] = {"DecreaseRequestsRemaining": held.remaining(),
                              "CapacityReservationState": []}
    if held.modified is not None:
        result["LastModifiedTime"] = held.modified
    if held.units is not None:
        result["MinimumLoadBalancerCapacity"] = {"CapacityUnits": held.units}
        zones = [zone.zone_name for zone in balancer.availability_zones] or [""]
        result["CapacityReservationState"] = [
            {"State": {"Code": "provisioned"}, "AvailabilityZone": zone,
             "EffectiveCapacityUnits": held.units / len(zones)} for zone in zones]
    return result


def apply() -> None:
    """Patch moto's ELBv2 responses (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.core.responses import ActionResult
    from moto.elbv2.exceptions import ELBClientError, LoadBalancerNotFoundError, ValidationError
    from moto.elbv2.models import FakeLoadBalancer
    from moto.elbv2.responses import ELBV2Response

    activate = FakeLoadBalancer.activate

    def held_activate(self: Any) -> None:
        if self.name not in HELD_PROVISIONING:
            activate(self)

    FakeLoadBalancer.activate = held_activate  # type: ignore[method-assign]

    def balancer_of(response: Any) -> Any:
        arn = response._get_param("LoadBalancerArn")
        balancer = response.elbv2_backend.load_balancers.get(arn)
        if balancer is None:
            raise LoadBalancerNotFoundError()
        return balancer

    def describe_capacity_reservation(self: Any) -> Any:
        return ActionResult(_answer(balancer_of(self)))

    def modify_capacity_reservation(self: Any) -> Any:
        balancer = balancer_of(self)
        minimum = self._get_param("MinimumLoadBalancerCapacity")
        reset = str(self._get_param("ResetCapacityReservation", "")).lower() == "true"
        if not minimum and not reset:
            raise ValidationError("You must specify either MinimumLoadBalancerCapacity or "
                                  "ResetCapacityReservation")
        units: int | None = None
        if minimum:
            raw = minimum.get("CapacityUnits") if isinstance(minimum, dict) else None
            try:
                units = int(raw) if raw is not None else None
            except ValueError:
                units = None
            if units is None or units < 1:
                raise ValidationError(f"CapacityUnits must be at least 1, got {raw}")
        if balancer.state == "provisioning":
            raise ELBClientError("OperationNotPermitted",
                                 f"Load balancer '{balancer.arn}' is not active yet")
        if balancer.type == "network" and any(
                listener.protocol == "TLS" for listener in balancer.listeners.values()):
            raise ELBClientError("OperationNotPermitted", "LCU reservation is not supported "
                                 "on Network Load Balancers using TLS listeners")
        if units is not None and units > CAPACITY_UNITS_LIMIT:
            raise ELBClientError("CapacityUnitsLimitExceeded",
                                 f"You've exceeded the capacity units limit "
                                 f"({CAPACITY_UNITS_LIMIT})")
        held = reservation_of(balancer)
        wanted = None if reset and units is None else units
        decrease = held.units is not None and (wanted is None or wanted < held.units)
        if decrease and held.remaining() <= 0:
            raise ELBClientError("CapacityDecreaseRequestLimitExceeded",
                                 "You've exceeded the daily capacity decrease limit for this "
                                 "reservation")
        held.decreases += decrease
        held.units = wanted
        held.modified = _now()
        return ActionResult(_answer(balancer))

    ELBV2Response.describe_capacity_reservation = (  # type: ignore[method-assign]
        describe_capacity_reservation)
    ELBV2Response.modify_capacity_reservation = (  # type: ignore[attr-defined]
        modify_capacity_reservation)
    _applied = True


__all__ = ["CAPACITY_UNITS_LIMIT", "DECREASES_PER_DAY", "HELD_PROVISIONING", "apply",
           "reservation_of"]
