"""`aiolbc run` as an operator meets it: bad input of every kind ends the real process with one
line on stderr naming the flag or file, no traceback, exit code 2; an API server that cannot be
reached ends it after the bounded retry with exit code 1; one that comes up within the retry is
used. Cases that need an API server run against the local one."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.envtest import EnvTestServer
from tests.e2e.processes import AIOLBC, controller_environment, free_port

BASE = ["--aws-region=us-west-2", "--aws-vpc-id=vpc-0123456789abcdef0",
        "--webhook-bind-port=0"]
# Inputs that fail fast; each run must never get as far as any API server.
UNREACHABLE = "http://127.0.0.1:9"


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str

    def assert_one_line(self, *, code: int, contains: str) -> None:
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr
        assert "Traceback" not in self.stderr
        assert lines[0].startswith("aiolbc run: "), lines[0]
        assert contains in lines[0], lines[0]
        assert self.code == code, (self.code, self.stderr)


def _kubeconfig(path: Path, server: str, *, current: str | None = "ctx",
                contexts: bool = True) -> Path:
    lines = ["apiVersion: v1", "kind: Config"]
    if current is not None:
        lines.append(f"current-context: {current}")
    lines += ["clusters:", "- name: c", "  cluster:", f"    server: {server!r}",
              "users:", "- name: u", "  user: {token: t}"]
    if contexts:
        lines += ["contexts:", "- name: ctx", "  context: {cluster: c, user: u}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _files(tmp: Path) -> dict[str, Path]:
    (tmp / "garbage.yaml").write_text("clusters: [\n  - {name: c\n")
    (tmp / "a-list.yaml").write_text("- one\n- two\n")
    (tmp / "certs").mkdir()
    return {
        "missing": tmp / "absent.yaml",
        "directory": tmp,
        "garbage": tmp / "garbage.yaml",
        "list": tmp / "a-list.yaml",
        "no-contexts": _kubeconfig(tmp / "no-contexts.yaml", UNREACHABLE, contexts=False),
        "no-current": _kubeconfig(tmp / "no-current.yaml", UNREACHABLE, current=None),
        "unknown-current": _kubeconfig(tmp / "unknown.yaml", UNREACHABLE, current="other"),
        "not-a-url": _kubeconfig(tmp / "not-a-url.yaml", "api.example.com:6443"),
        "bad-port": _kubeconfig(tmp / "bad-port.yaml", "https://127.0.0.1:99999"),
        "good": _kubeconfig(tmp / "good.yaml", UNREACHABLE),
        "empty-cert-dir": tmp / "certs",
    }


# (id, flags with {name} standing for a file above, what the one line must contain)
CASES: list[tuple[str, list[str], str]] = [
    ("kubeconfig-missing", ["--kubeconfig={missing}"], "--kubeconfig: {missing}: does not exist"),
    ("kubeconfig-directory", ["--kubeconfig={directory}"],
     "--kubeconfig: {directory}: is a directory"),
    ("kubeconfig-garbage", ["--kubeconfig={garbage}"],
     "--kubeconfig: {garbage}: is not valid YAML (line"),
    ("kubeconfig-not-a-mapping", ["--kubeconfig={list}"], "{list}: is not a kubeconfig"),
    ("kubeconfig-no-contexts", ["--kubeconfig={no-contexts}"], "{no-contexts}: has no contexts"),
    ("kubeconfig-no-current-context", ["--kubeconfig={no-current}"],
     "{no-current}: sets no current-context"),
    ("kubeconfig-unknown-context", ["--kubeconfig={unknown-current}"],
     "context 'other' is not among its contexts"),
    ("kubeconfig-server-not-a-url", ["--kubeconfig={not-a-url}"],
     "the API server address 'api.example.com:6443' is not an http(s) URL"),
    ("kubeconfig-server-bad-port", ["--kubeconfig={bad-port}"], "has an invalid port"),
    ("qps-inf", ["--checkpoint-verify-qps", "inf"], "--checkpoint-verify-qps: "),
    ("qps-nan", ["--checkpoint-verify-qps", "nan"], "--checkpoint-verify-qps: "),
    ("aws-qps-inf", ["--checkpoint-verify-aws-qps", "inf"], "--checkpoint-verify-aws-qps: "),
    ("throttle-rate-overflows", ["--aws-api-throttle", "Elastic Load Balancing v2:^Describe.*"
                                 "=1e999:10"], "--aws-api-throttle"),
    ("duration-overflow", ["--sync-period", "99999999999999999999h"],
     "--sync-period: duration '99999999999999999999h' is longer than the maximum"),
    ("duration-negative", ["--checkpoint-max-wait=-5s"],
     "--checkpoint-max-wait: negative duration"),
    ("duration-zero", ["--sync-period=0s"], "--sync-period: "),
    ("duration-garbage", ["--api-server-startup-timeout=soon"],
     "--api-server-startup-timeout: invalid duration"),
    ("lease-not-longer-than-renew", ["--leader-election-lease-duration=10s"],
     "--leader-election-lease-duration: 10s must be greater than "
     "--leader-election-renew-deadline (10s)"),
    ("renew-not-longer-than-jittered-retry", ["--leader-election-retry-period=9s"],
     "--leader-election-renew-deadline: 10s must be greater than "
     "--leader-election-retry-period x 1.2 (10.8s)"),
    ("tag-aws-prefix", ["--default-tags=AWS:team=a"], "--default-tags: tag key 'AWS:team'"),
    ("tag-tracking-key", ["--default-tags=elbv2.k8s.aws/cluster=x"],
     "--default-tags: tag key 'elbv2.k8s.aws/cluster' is a tracking tag"),
    ("tag-stack-key", ["--default-tags=ingress.k8s.aws/stack=x"], "is a tracking tag"),
    ("tag-key-too-long", [f"--default-tags={'k' * 129}=v"], "129 characters long"),
    ("tag-value-too-long", [f"--default-tags=k={'v' * 257}"], "257 characters long"),
    ("tag-bad-character", ["--default-tags=team=a*b"], "characters AWS does not allow"),
    ("too-many-tags", ["--default-tags=" + ",".join(f"k{i}=v" for i in range(48))],
     "--default-tags: 48 tags given; at most 47"),
    ("external-tracking-key", ["--external-managed-tags=service.k8s.aws/resource"],
     "--external-managed-tags: tag key 'service.k8s.aws/resource' is a tracking tag"),
    ("external-and-default", ["--external-managed-tags=team", "--default-tags=team=a"],
     "--external-managed-tags: tag key 'team' is also in --default-tags"),
    ("cluster-name-too-long", [f"--cluster-name={'c' * 101}"], "--cluster-name: "),
    ("cluster-name-characters", ["--cluster-name=prod/eu"], "--cluster-name: 'prod/eu' may"),
    ("watch-namespace", ["--watch-namespace=Team_A"], "--watch-namespace: 'Team_A' is not"),
    ("watch-namespaces", ["--watch-namespace=shop,Team_A"],
     "--watch-namespace: 'Team_A' is not"),
    ("namespace-selector", ["--namespace-selector=team in shop"],
     "--namespace-selector: 'team in shop' is not a label selector"),
    ("ingress-class", ["--ingress-class=ALB!"], "--ingress-class: 'ALB!' is not"),
    ("load-balancer-class", ["--load-balancer-class=-nlb"], "--load-balancer-class: "),
    ("aws-region", ["--aws-region=us_west_2"], "--aws-region: 'us_west_2' is not"),
    ("metrics-port-is-probe-port", ["--metrics-bind-addr=:9000",
                                    "--health-probe-bind-addr=127.0.0.1:9000"],
     "--health-probe-bind-addr: '127.0.0.1:9000' uses the same port as --metrics-bind-addr"),
    ("bind-address-syntax", ["--metrics-bind-addr=localhost"], "--metrics-bind-addr: invalid"),
    ("cert-dir-without-files", ["--metrics-secure", "--metrics-cert-dir={empty-cert-dir}"],
     "--metrics-cert-dir: {empty-cert-dir} has no tls.crt"),
    ("max-concurrency", ["--service-max-concurrent-reconciles=100000000000000000000"],
     "--service-max-concurrent-reconciles: "),
    ("not-a-boolean", ["--metrics-secure=maybe"], "--metrics-secure: expected true or false"),
    ("flag-missing-value", ["--sync-period"], "argument --sync-period: expected one argument"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _files(tmp_path_factory.mktemp("cli"))


# Processes run side by side, a few at a time: each mostly imports, and memory is shared.
PARALLEL = 4


@pytest.fixture(scope="module")
def outcomes(files: dict[str, Path]) -> Iterator[dict[str, Outcome]]:
    """Every case's outcome, run a few at a time."""
    pending = list(CASES)
    running: dict[str, subprocess.Popen[str]] = {}
    results: dict[str, Outcome] = {}
    try:
        while pending or running:
            while pending and len(running) < PARALLEL:
                name, flags, _ = pending.pop(0)
                # Defaults first, so that a case's own value of the same flag wins. Should a
                # case pass validation by mistake, it fails at once on the unreachable server.
                argv = [str(AIOLBC), "run", *BASE, "--cluster-name=c",
                        f"--kubeconfig={files['good']}", "--api-server-startup-timeout=0s",
                        *(f.format_map(files) for f in flags)]
                running[name] = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, text=True, env=controller_environment())
            name = next(iter(running))
            _, stderr = running[name].communicate(timeout=120)
            results[name] = Outcome(running.pop(name).returncode, stderr)
        yield results
    finally:
        for proc in running.values():
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("name", "expected"), [(c[0], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_code_2(outcomes: dict[str, Outcome],
                                               files: dict[str, Path], name: str,
                                               expected: str) -> None:
    outcomes[name].assert_one_line(code=2, contains=expected.format_map(files))


async def _run(*flags: str, env: dict[str, str] | None = None,
               timeout: float = 60.0) -> Outcome:
    proc = await asyncio.create_subprocess_exec(
        str(AIOLBC), "run", "--cluster-name=c", *BASE, *flags, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=env or controller_environment())
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return Outcome(proc.returncode, stderr.decode())


async def test_an_unreachable_api_server_is_retried_then_exit_code_1(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    kubeconfig = _kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{port}")
    outcome = await _run(f"--kubeconfig={kubeconfig}", "--api-server-startup-timeout=2s")
    outcome.assert_one_line(code=1, contains=f"cannot reach the API server at "
                                             f"http://127.0.0.1:{port}: ")


async def test_an_api_server_that_comes_up_within_the_timeout_is_used(tmp_path: Path) -> None:
    port = free_port()
    kubeconfig = _kubeconfig(tmp_path / "late", f"http://127.0.0.1:{port}")
    health = free_port()
    attempts = 0
    tried_twice = asyncio.Event()

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Not an API server yet: every connection is dropped, as during its start-up.
        nonlocal attempts
        attempts += 1
        if attempts >= 2:
            tried_twice.set()
        writer.close()

    not_yet = await asyncio.start_server(refuse, "127.0.0.1", port)
    proc = await asyncio.create_subprocess_exec(
        str(AIOLBC), "run", "--cluster-name=c", *BASE, f"--kubeconfig={kubeconfig}",
        "--api-server-startup-timeout=60s", "--enable-leader-election=false",
        "--metrics-bind-addr=0", f"--health-probe-bind-addr=127.0.0.1:{health}",
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=controller_environment(AWS_ENDPOINT_URL=UNREACHABLE))
    try:
        await asyncio.wait_for(tried_twice.wait(), 30)  # it came back after a failure
        not_yet.close()
        await not_yet.wait_closed()
        assert proc.returncode is None
        async with EnvTestServer(port=port):
            await _wait_for_port(health)  # it binds only once the API server has answered
            assert proc.returncode is None
    finally:
        not_yet.close()
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


async def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                raise AssertionError(f"nothing listens on {port}") from None
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("which", ["metrics", "probes"])
async def test_a_taken_port_is_one_line_naming_its_flag(
        envtest: EnvTestServer, envtest_kubeconfig: Path, taken_port: int, which: str) -> None:
    metrics = f"127.0.0.1:{taken_port}" if which == "metrics" else "127.0.0.1:0"
    probes = f"127.0.0.1:{taken_port}" if which == "probes" else "127.0.0.1:0"
    outcome = await _run(f"--kubeconfig={envtest_kubeconfig}", f"--metrics-bind-addr={metrics}",
                         f"--health-probe-bind-addr={probes}")
    flag = "--metrics-bind-addr" if which == "metrics" else "--health-probe-bind-addr"
    kind = "metrics" if which == "metrics" else "health probes"
    outcome.assert_one_line(code=2, contains=f"{flag}: cannot serve {kind} on "
                                             f"127.0.0.1:{taken_port}: address already in use")


@pytest.mark.parametrize(("address", "reason"), [
    ("host.invalid:0", "cannot resolve 'host.invalid'"),
    # TEST-NET-1 (RFC 5737): never an address of this machine.
    ("192.0.2.1:0", "cannot assign requested address"),
])
async def test_a_host_that_is_not_ours_is_one_line(envtest: EnvTestServer,
                                                   envtest_kubeconfig: Path, address: str,
                                                   reason: str) -> None:
    outcome = await _run(f"--kubeconfig={envtest_kubeconfig}", f"--metrics-bind-addr={address}",
                         "--health-probe-bind-addr=0")
    outcome.assert_one_line(code=2, contains=f"--metrics-bind-addr: cannot serve metrics on "
                                             f"{address}: {reason}")


async def test_a_kubeconfig_from_the_environment_is_named_too(tmp_path: Path) -> None:
    env = controller_environment(KUBECONFIG=str(tmp_path / "nowhere"))
    outcome = await _run(env=env)
    outcome.assert_one_line(code=2, contains=f"kubeconfig {tmp_path / 'nowhere'}: does not "
                                             "exist")


def test_the_help_lists_the_start_up_and_metrics_flags() -> None:
    proc = subprocess.run([str(AIOLBC), "run", "--help"], capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "COLUMNS": "200"})
    for flag in ("--api-server-startup-timeout", "--metrics-secure", "--metrics-cert-dir"):
        assert flag in proc.stdout
