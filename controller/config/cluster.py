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
    controller_id: str = flag(
        "--controller-id", default="", parse=str, check=flagrules.controller_id_problem,
        help="which of several controllers of one cluster this is: named in the description "
        "of the rules it adds to shared security groups, its backend security group, its "
        "managed TargetGroupBindings and the IngressClass controller it serves "
        "(ingress.k8s.aws/alb-<id>); each revokes only its own (default: the cluster's "
        "default controller, whose rules name only the cluster, as before)")


__all__ = ["ClusterConfig"]
