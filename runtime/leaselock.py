"""The Lease side of leader election: the record a Lease's spec holds, the client calls used on
it, the identity of a candidate, and the rules the timings must follow (client-go's)."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from runtime.resources import LEASES, Resource

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2


class LeaseClient(Protocol):
    """The part of `runtime.client.KubeClient` that leader election uses."""

    async def get(self, res: Resource, name: str, namespace: str | None = None, *,
                  timeout: float | None = None) -> dict[str, Any]: ...

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None, *,
                     timeout: float | None = None) -> dict[str, Any]: ...

    async def update(self, res: Resource, obj: dict[str, Any], *,
                     timeout: float | None = None) -> dict[str, Any]: ...


class LeaderElectionConfigError(ValueError):
    """Invalid leader-election settings."""


def default_identity() -> str:
    """controller-runtime's identity: hostname + "_" + a random UUID, so a restarted process
    never mistakes its predecessor's lease for its own."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def format_micro_time(unix_seconds: float) -> str:
    """RFC 3339 with microseconds in UTC, the wire form of metav1.MicroTime."""
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The election-relevant part of a Lease spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


def new_lease(name: str, namespace: str, record: LeaderElectionRecord) -> dict[str, Any]:
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": record.to_spec(),
    }


def validate_settings(*, name: str, namespace: str, identity: str, lease_duration: float,
              renew_deadline: float, retry_period: float) -> None:
    problems: list[str] = []
    if not name:
        problems.append("the lease name must not be empty")
    if not namespace:
        problems.append("the lease namespace must not be empty")
    if not identity:
        problems.append("the identity must not be empty")
    if retry_period <= 0:
        problems.append(f"retry period must be greater than zero (got {retry_period}s)")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        problems.append(
            f"renew deadline ({renew_deadline}s) must be greater than {JITTER_FACTOR} x retry "
            f"period ({JITTER_FACTOR * retry_period:g}s)")
    if lease_duration <= renew_deadline:
        problems.append(f"lease duration ({lease_duration}s) must be greater than renew "
                        f"deadline ({renew_deadline}s)")
    if problems:
        raise LeaderElectionConfigError("invalid leader election settings: "
                                        + "; ".join(problems))
