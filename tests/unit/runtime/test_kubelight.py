"""The kubeconfig loaders come without kubernetes_asyncio's generated client, which a process
that asks for it still gets whole. Each case runs in a fresh interpreter: what matters is what
one process imports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

KUBECONFIG = textwrap.dedent("""\
    apiVersion: v1
    kind: Config
    clusters:
    - {name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}
    users: [{name: u, user: {token: secret-token}}]
    contexts: [{name: x, context: {cluster: c, user: u}}]
    current-context: x
""")


def _run(code: str, tmp_path: Path) -> dict[str, object]:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    script = textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "kubeconfig")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_kubeconfig_loads_without_the_generated_client(tmp_path: Path) -> None:
    result = _run("""
        import asyncio, json, sys
        from runtime.kubeconfig import load_kubeconfig
        endpoint, credentials = asyncio.run(load_kubeconfig(sys.argv[1]))
        loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
        print(json.dumps({"host": endpoint.host, "modules": len(loaded),
                          "models": "kubernetes_asyncio.client.models" in sys.modules,
                          "header": asyncio.run(credentials.headers()).get("Authorization")}))
    """, tmp_path)
    assert result["host"] == "https://127.0.0.1:6443"
    assert result["header"] == "Bearer secret-token"
    assert result["models"] is False
    assert isinstance(result["modules"], int)
    assert result["modules"] < 40  # the whole: ~860


def test_the_generated_client_is_still_there_for_whoever_uses_it(tmp_path: Path) -> None:
    result = _run("""
        import json, sys
        import runtime.kubeconfig
        from kubernetes_asyncio import client, config, watch
        from kubernetes_asyncio.client import ApiClient, Configuration
        import kubernetes_asyncio
        api = client.CoreV1Api  # runs the package's own __init__ now
        print(json.dumps({"api": api.__name__, "api_client": ApiClient.__module__,
                          "same_configuration": Configuration is client.Configuration,
                          "watch": hasattr(watch, "Watch"),
                          "version": kubernetes_asyncio.__version__,
                          "loader": hasattr(config, "load_kube_config"),
                          "models": "kubernetes_asyncio.client.models" in sys.modules}))
    """, tmp_path)
    assert result["api"] == "CoreV1Api"
    assert result["same_configuration"] is True
    assert result["watch"] is True
    assert result["loader"] is True
    assert result["models"] is True
    assert result["api_client"] == "kubernetes_asyncio.client.api_client"
    assert isinstance(result["version"], str)
    assert result["version"]
