"""Upstream's dry-run plan (`alb.ingress.kubernetes.io/dry-run-plan`, the IngressPlanAnnotation
feature gate): with the gate on, every reconcile that builds a group writes the group's model
(the pure stage's canonical JSON: OIDC credentials redacted, nothing read from AWS) to the
annotation of its first member, before the deploy, and removes it from the other members, so
that exactly one member of a group carries it; with the gate off it is removed from every
member. A write that fails (the API server refuses a plan too large for an annotation) is
logged and the reconcile goes on, as upstream. The annotation is an output, never an input of
the model: the watches leave changes of it out, and the checkpoint does not cover it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from controller.apis import INGRESS_ANNOTATION_PREFIX
from controller.model import Stack
from controller.model.canonical import canonical_json
from runtime.objects import Obj, annotations_of

DRY_RUN_PLAN: Final = INGRESS_ANNOTATION_PREFIX + "dry-run-plan"


def plan_of(stack: Stack) -> str:
    return canonical_json(stack).decode()


def planned(members: Sequence[Obj], stack: Stack, *,
            enabled: bool) -> list[tuple[Obj, str | None]]:
    """(member, the plan it should carry, None for none) for the members whose annotation
    differs from that, in member order."""
    plan = plan_of(stack) if enabled else None
    wanted = [(ing, plan if i == 0 else None) for i, ing in enumerate(members)]
    return [(ing, want) for ing, want in wanted if annotations_of(ing).get(DRY_RUN_PLAN) != want]


__all__ = ["DRY_RUN_PLAN", "plan_of", "planned"]
