"""`python -m controller.standins`: the AWS stand-in in a process of its own (the benchmarks'),
with moto_fidelity.py's corrections, until SIGTERM; a bad flag is one line."""

from __future__ import annotations

import signal
import subprocess
import sys

from controller.standins import seed_vpc, sync_client


def test_serves_the_corrected_stand_in_until_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "controller.standins"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        seed = seed_vpc(url)
        elbv2 = sync_client("elbv2", url, region=seed.region)
        try:
            for i in range(3):
                elbv2.create_target_group(Name=f"solo-{i}", Protocol="HTTP", Port=80,
                                          VpcId=seed.vpc_id, TargetType="ip")
            page = elbv2.describe_target_groups(PageSize=2)  # paged, as AWS pages
            assert len(page["TargetGroups"]) == 2
            assert page.get("NextMarker")
        finally:
            elbv2.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_bad_port_is_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "controller.standins", "--port", "70000"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "--port: 70000 is not a port" in proc.stderr
    assert "Traceback" not in proc.stderr
