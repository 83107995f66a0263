"""The Helm chart (charts/aiolbc) rendered by the real Helm engine (helm-python-sdk), and the
rendered Deployment's container args as the kubelet hands them to `aiolbc` ($(VAR) expanded)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from helm_python.chart import Chart

from tests.support.paths import REPO

CHART = REPO / "charts" / "aiolbc"
RELEASE = "aiolbc"

Doc = dict[str, Any]


def render(values: dict[str, Any], *, namespace: str, name: str = RELEASE) -> list[Doc]:
    """Every object `helm install` would create from the templates (not the CRDs)."""
    with Chart.load(CHART) as chart:
        rendered = chart.render(values, name=name, namespace=namespace)
    return [doc for path, text in sorted(rendered.items()) if path.endswith(".yaml")
            for doc in yaml.safe_load_all(text) if doc]


def deployment_args(docs: list[Doc], env: dict[str, str]) -> list[str]:
    """The Deployment's container args with `$(NAME)` replaced from `env`, as the kubelet does."""
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], arg)
            for arg in container["args"]]
