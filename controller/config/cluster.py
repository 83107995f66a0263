"""The cluster section: which cluster the controller serves."""

from __future__ import annotations

from dataclasses import dataclass

from controller import flagrules
from runtime import flagvalues
from runtime.flags import flag


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterConfig:
    name: str = flag(
        "--cluster-name", parse=str,
        check=flagvalues.all_of(flagvalues.non_empty, flagrules.cluster_name_problem),
        help="name of the cluster; tags every AWS resource the controller owns")


__all__ = ["ClusterConfig"]
