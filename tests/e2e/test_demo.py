"""`aiolbc demo` end to end: a fresh process starts the local API server, applies the CRDs,
examples and webhooks with the real kubectl, shows them, a takeover and a rolling update with
readiness gates, and exits cleanly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_the_whole_system_and_shows_the_takeover() -> None:
    aiolbc = Path(sys.executable).parent / "aiolbc"
    proc = subprocess.run([str(aiolbc), "demo", "--no-hold", "--objects", "6"], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "customresourcedefinition.apiextensions.k8s.io/targetgroupbindings.elbv2.k8s.aws" \
        " created" in out
    for created in ("ingressclass.networking.k8s.io/alb created", "service/web-nlb created",
                    "ingress.networking.k8s.io/web created",
                    "targetgroupbinding.elbv2.k8s.aws/web-shared created"):
        assert created in out
    # The listing shows the TargetGroupBinding with the CRD's printer columns.
    assert "SERVICE-NAME" in out
    assert "web-shared" in out
    # The narrative: a leader, convergence, a takeover, the real change first, paced checks.
    assert re.search(r"replica-[ab] is the leader", out)
    assert "converged: 7 target groups hold their pods" in out
    assert re.search(r"replica-[ab] took over [0-9.]+ s after the kill", out)
    assert "10.0.1.12 registered in web-shared" in out
    assert "checkpoints: 6 unchanged bindings matched" in out
    assert "mutating AWS calls for them: 0" in out
    assert re.search(r"ingress/blog, ingress/shop → \S+ \(one group: 2 Ingresses, one ALB\)",
                     out)
    assert re.search(r"service/web-nlb → \S+\.elb\.amazonaws\.com", out)
    # The rolling update with readiness gates the replicas' webhook injected.
    assert re.search(r"deployment/shop v1: 2 pods, given readiness gate\(s\) "
                     r"target-health\.elbv2\.k8s\.aws/k8s-rollout-shop-\w+ by the webhook", out)
    assert re.search(r"healthy targets of service/shop during the rollout: .* \(never fewer "
                     r"than 2\)", out)
    assert "2 old pods removed, each after its target had drained" in out
    # Upstream's default path: a managed group per load balancer, the backend group on pods.
    assert re.search(r"security groups: ALB of default/web: group k8s-default-web-\w+ admits "
                     r"0\.0\.0\.0/0 on 80", out)
    assert re.search(r"security groups: NLB of default/web-nlb: group \S+ admits 0\.0\.0\.0/0 "
                     r"on 80", out)
    assert re.search(r"security groups: the pods' group demo-node admits the backend group "
                     r"k8s-traffic-demo-\w+ \(sg-\w+\) on 80", out)
    assert re.search(r"replica-[ab] exited with code 0", out)
    assert "stopped cleanly" in out
    assert "Traceback" not in proc.stderr


def test_demo_reports_a_missing_manifests_directory(tmp_path: Path) -> None:
    aiolbc = Path(sys.executable).parent / "aiolbc"
    proc = subprocess.run([str(aiolbc), "demo", "--no-hold", "--manifests", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0
    assert "no manifests directory with crds/ found" in proc.stderr
    assert "Traceback" not in proc.stderr
