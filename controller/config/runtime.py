"""The runtime section: the API server, what is watched and replayed, logging, and leader
election (with client-go's rules for its timings)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from controller import flagrules
from controller.defaults import DEFAULT_LEADER_ELECTION_ID, DEFAULT_SYNC_PERIOD
from runtime import flagvalues, labelselector
from runtime.flags import flag
from runtime.flagvalues import format_duration
from runtime.leaselock import JITTER_FACTOR

# How long `aiolbc run` keeps trying to reach the API server before giving up: shorter than the
# shipped liveness probe's window (10 s delay + 3 x 10 s), so the process says why it failed
# before the kubelet kills it for not answering.
DEFAULT_API_SERVER_STARTUP_TIMEOUT = 30.0


def _namespaces(names: frozenset[str]) -> str | None:
    for name in sorted(names):
        problem = flagrules.dns_label_problem(name)
        if problem:
            return problem
    return None


def _readable_file(path: str) -> str | None:
    if not os.path.isfile(path):
        return f"{path} is not a file"
    if not os.access(path, os.R_OK):
        return f"{path} cannot be read"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeConfig:
    kubeconfig: str | None = flag(
        "--kubeconfig", default=None, parse=str,
        help="kubeconfig file (default: in-cluster config, else $KUBECONFIG)")
    kube_ca_pem_filepath: str | None = flag(
        "--kube-ca-pem-filepath", default=None, parse=str, check=_readable_file,
        help="the API server's CA bundle (PEM), instead of the one the kubeconfig or the "
        "service account names")
    api_server_startup_timeout: float = flag(
        "--api-server-startup-timeout", default=DEFAULT_API_SERVER_STARTUP_TIMEOUT,
        parse=flagvalues.parse_duration,
        help="how long start-up retries an unreachable API server before exiting (0: try once)")
    watch_namespace: frozenset[str] = flag(
        "--watch-namespace", default=frozenset(), parse=flagvalues.parse_names,
        check=_namespaces,
        help="watch only these namespaces, comma-separated (default: all)")
    namespace_selector: str | None = flag(
        "--namespace-selector", default=None, parse=str, check=labelselector.problem,
        metavar="SELECTOR",
        help="watch only the namespaces whose labels match this label selector (e.g. "
        "'team=shop,env!=test'), followed as namespaces are labelled; with "
        "--watch-namespace, the listed ones that match (default: all)")
    sync_period: float = flag(
        "--sync-period", default=DEFAULT_SYNC_PERIOD, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0),
        help="how often every cached object is replayed (as a paced verification)")
    log_level: Literal["debug", "info", "warn", "error"] = flag(
        "--log-level", default="info", parse=flagvalues.choice("debug", "info", "warn", "error"),
        help="debug, info, warn or error")
    leader_election: bool = flag(
        "--enable-leader-election", default=True, parse=flagvalues.parse_bool,
        help="run as one of several replicas, the one holding the Lease acting")
    leader_election_id: str = flag(
        "--leader-election-id", default=DEFAULT_LEADER_ELECTION_ID, parse=str,
        check=flagrules.dns_subdomain_problem, help="name of the Lease")
    leader_election_namespace: str | None = flag(
        "--leader-election-namespace", default=None, parse=str,
        check=flagrules.dns_label_problem, help="namespace of the Lease (default: the pod's)")
    lease_duration: float = flag(
        "--leader-election-lease-duration", default=15.0, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0),
        help="how long a Lease not renewed keeps the other replicas waiting")
    renew_deadline: float = flag(
        "--leader-election-renew-deadline", default=10.0, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0),
        help="how long the leader keeps trying to renew before it stops acting")
    retry_period: float = flag(
        "--leader-election-retry-period", default=2.0, parse=flagvalues.parse_duration,
        check=flagvalues.greater_than(0), help="how often the Lease is tried")

    @property
    def selector(self) -> labelselector.Selector | None:
        """`--namespace-selector` parsed (its check passed)."""
        if self.namespace_selector is None:
            return None
        return labelselector.parse(self.namespace_selector)

    def check(self) -> str | None:
        """client-go's NewLeaderElector rules: the lease outlives the renew deadline, and the
        renew deadline leaves room for more than one (jittered) retry. Timings matter only
        with leader election."""
        if not self.leader_election:
            return None
        lease, renew, retry = self.lease_duration, self.renew_deadline, self.retry_period
        if lease <= renew:
            return (f"--leader-election-lease-duration: {format_duration(lease)} must be "
                    f"greater than --leader-election-renew-deadline ({format_duration(renew)})")
        if renew <= JITTER_FACTOR * retry:
            return (f"--leader-election-renew-deadline: {format_duration(renew)} must be "
                    f"greater than --leader-election-retry-period x {JITTER_FACTOR:g} "
                    f"({format_duration(JITTER_FACTOR * retry)})")
        return None


__all__ = ["DEFAULT_API_SERVER_STARTUP_TIMEOUT", "RuntimeConfig"]
