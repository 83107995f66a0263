"""upstream's `awslbc_controller_top_talkers`: the objects each controller reconciled most in
the last complete three-minute window, a window replacing the last."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.lbcmetrics import TOP_TALKERS_WINDOW, stage, talking
from runtime.clock import FakeClock
from runtime.reconcile import Request, Result


class Done:
    def __init__(self) -> None:
        self.seen: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.seen.append(request)
        return Result()


def _talkers(registry: CollectorRegistry) -> dict[tuple[str, str, str], float]:
    return {(s.labels["controller"], s.labels["namespace"], s.labels["name"]): s.value
            for family in registry.collect() if family.name == "awslbc_controller_top_talkers"
            for s in family.samples}


async def test_the_top_three_of_the_last_window_per_controller() -> None:
    registry, clock = CollectorRegistry(), FakeClock()
    inner = Done()
    services = talking(registry, clock, "service", inner)
    ingresses = talking(registry, clock, "ingress", Done())
    for name, times in (("a", 5), ("b", 1), ("c", 3), ("d", 2)):
        for _ in range(times):
            await services.reconcile(Request("shop", name))
    await ingresses.reconcile(Request("", "shop/group"))
    assert len(inner.seen) == 11  # every reconcile reaches the reconciler
    # The window is not over: nothing to report yet.
    assert _talkers(registry) == {}
    await clock.advance(TOP_TALKERS_WINDOW)
    assert _talkers(registry) == {("service", "shop", "a"): 5, ("service", "shop", "c"): 3,
                                  ("service", "shop", "d"): 2, ("ingress", "", "shop/group"): 1}
    # The next window replaces it; an object that went quiet drops out.
    await clock.advance(TOP_TALKERS_WINDOW / 2)
    await services.reconcile(Request("shop", "b"))
    await clock.advance(TOP_TALKERS_WINDOW / 2)
    assert _talkers(registry) == {("service", "shop", "b"): 1}
    # A window with no reconcile at all reports nothing, not an older window.
    await clock.advance(3 * TOP_TALKERS_WINDOW)
    assert _talkers(registry) == {}


class Staged:
    async def reconcile(self, request: Request) -> Result:
        with stage("build_model"):
            pass
        with stage("deploy_model"):
            pass
        return Result()


async def test_stages_are_timed_per_controller_inside_a_reconcile_only() -> None:
    registry = CollectorRegistry()
    reconciler = talking(registry, FakeClock(), "service", Staged())
    await reconciler.reconcile(Request("shop", "web"))
    await reconciler.reconcile(Request("shop", "web"))

    def count(stage_name: str) -> float | None:
        return registry.get_sample_value(
            "awslbc_controller_reconcile_stage_duration_count",
            {"controller": "service", "reconcile_stage": stage_name})

    assert (count("build_model"), count("deploy_model")) == (2, 2)
    # Outside a counted reconcile (an admission review building a model): not timed.
    await Staged().reconcile(Request("shop", "web"))
    assert count("build_model") == 2
