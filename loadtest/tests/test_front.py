"""TLS fronts (FRONT=nginx|apache) with real nginx and Apache httpd.

The upstream is the contract's reference server (contracts/tests/), either in
this process (to count the connections the front opens to it) or as a
throw-away native stack (to go through the runner, `make check`'s steps and
the stop of both processes). Everything listens on free ports of 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from contracts.conformance import run_checks
from contracts.tests.reference_server import ReferenceServer
from loadtest import cli
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, resolve
from loadtest.core.manifest import REPO_ROOT
from loadtest.core.runner import Limits
from loadtest.host import tls
from loadtest.host.process import CLEAN_EXIT_CODES, group_pids
from loadtest.runners import front
from loadtest.runners.conformance import check_stack
from loadtest.runners.native import NativeRunner
from loadtest.tests.stand_in_manifest import bench_over, server_py_stand_in

pytestmark = pytest.mark.e2e

KINDS = [
    pytest.param(
        kind,
        marks=pytest.mark.skipif(front.binary(kind) is None, reason=f"{kind} not installed"),
    )
    for kind in ("nginx", "apache")
]
DISPLAY_NAME = "Reference"

# The reference server as a stack: PORT from the runner, clean exit on SIGTERM.
REFERENCE_STACK = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, os.environ["REPO_ROOT"])
    from contracts.tests.reference_server import CALENDAR, Contract, Handler, _HTTPServer
    httpd = _HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    httpd.contract = Contract(sys.argv[1], set(), CALENDAR, set())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    httpd.serve_forever()
    """
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A private folder (0700): as root, the fronts' workers (www-data) cannot
    enter it, and must not need to."""
    path = tmp_path_factory.mktemp("front")
    path.chmod(0o700)
    return path


@pytest.fixture(scope="module")
def tls_files(folder) -> tls.TlsFiles:
    return tls.self_signed(folder / "tls")


@pytest.fixture
def counted_reference():
    """The reference server, counting the TCP connections it accepts."""
    with ReferenceServer(DISPLAY_NAME) as server:
        httpd = server.httpd
        accepted = []
        original = httpd.process_request

        def counting(request, address):
            accepted.append(address)
            original(request, address)

        httpd.process_request = counting
        server.accepted = accepted
        yield server


def started_front(kind, server, folder, tls_files) -> front.Front:
    upstream = server.url.split("//", 1)[1]
    proxy = front.Front(kind, upstream, folder / f"{kind}-{uuid.uuid4().hex[:6]}", tls_files)
    try:
        proxy.wait_ready(30)
    except BaseException:
        proxy.kill()
        raise
    return proxy


@contextlib.contextmanager
def front_running(kind, server, folder, tls_files):
    """A ready front for the block; stopped (cleanly) after it."""
    proxy = started_front(kind, server, folder, tls_files)
    try:
        yield proxy
    finally:
        proxy.stop()


def alpn(port: int, cert: Path, offered: list[str]) -> str | None:
    context = ssl.create_default_context(cafile=str(cert))
    context.set_alpn_protocols(offered)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
        context.wrap_socket(sock, server_hostname="127.0.0.1") as tls_sock,
    ):
        return tls_sock.selected_alpn_protocol()


@pytest.mark.parametrize("kind", KINDS)
def test_whole_contract_passes_over_tls_through_the_front(kind, counted_reference, folder,
                                                          tls_files):  # fmt: skip
    with front_running(kind, counted_reference, folder, tls_files) as proxy:
        report = run_checks(proxy.base_url, DISPLAY_NAME, tls_cert=tls_files.cert)
        assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
        assert report["passed"] > 90
        assert proxy.base_url.startswith("https://127.0.0.1:")


@pytest.mark.parametrize("kind", KINDS)
def test_alpn_offers_h2_and_http11_still_works(kind, counted_reference, folder, tls_files):
    with front_running(kind, counted_reference, folder, tls_files) as proxy:
        assert alpn(proxy.port, tls_files.cert, ["h2", "http/1.1"]) == "h2"
        assert alpn(proxy.port, tls_files.cert, ["http/1.1"]) == "http/1.1"
        context = ssl.create_default_context(cafile=str(tls_files.cert))
        connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context)
        connection.request("GET", "/?n=100")
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200 and response.version == 11
        # The 100 KB answer keeps the stack's exact length (never chunked).
        assert response.getheader("Content-Length") == "100000" and len(body) == 100_000
        assert response.getheader("Transfer-Encoding") is None
        connection.close()


@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load (nghttp2-client) not installed")
@pytest.mark.parametrize("kind", KINDS)
def test_requests_over_http2_succeed(kind, counted_reference, folder, tls_files):
    with front_running(kind, counted_reference, folder, tls_files) as proxy:
        result = subprocess.run(
            ["h2load", "-n", "200", "-c", "2", "-m", "4", proxy.base_url + "/workday"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "Application protocol: h2" in result.stdout
        assert "200 succeeded, 0 failed, 0 errored" in result.stdout
        assert "status codes: 200 2xx" in result.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_connections_to_the_stack_are_kept_alive(kind, counted_reference, folder, tls_files):
    with front_running(kind, counted_reference, folder, tls_files) as proxy:
        before = len(counted_reference.accepted)
        context = ssl.create_default_context(cafile=str(tls_files.cert))
        # 100 requests on 10 client connections, one after the other.
        for _ in range(10):
            connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context)
            for _ in range(10):
                connection.request("GET", "/workday")
                response = connection.getresponse()
                response.read()
                assert response.status == 200
            connection.close()
        opened = len(counted_reference.accepted) - before
        # One per worker at most (a worker's idle connection is reused); without
        # upstream keep-alive it would be 100.
        assert opened <= len(os.sched_getaffinity(0)), opened


@pytest.mark.parametrize("kind", KINDS)
def test_stop_leaves_no_process_and_a_killed_front_is_an_unclean_stop(
    kind, counted_reference, folder, tls_files
):
    proxy = started_front(kind, counted_reference, folder, tls_files)
    pgid = proxy.process.pid
    assert len(proxy.pids()) >= 2, "a master and its workers"
    assert proxy.stop() in CLEAN_EXIT_CODES
    assert group_pids(pgid) == [] and not proxy.is_alive()

    proxy = started_front(kind, counted_reference, folder, tls_files)
    os.kill(proxy.process.pid, signal.SIGKILL)
    with pytest.raises(StepError) as caught:
        proxy.stop()
    assert caught.value.step == "stop"
    assert group_pids(proxy.process.pid) == []


@pytest.fixture
def reference_stack(folder):
    """A manifest whose `run` starts the reference server, for the native runner."""
    manifest = server_py_stand_in(
        folder,
        "test-front",
        REFERENCE_STACK,
        f'exec {sys.executable} server.py "{DISPLAY_NAME}"',
        display_name=DISPLAY_NAME,
    )
    yield manifest
    shutil.rmtree(manifest.build_dir, ignore_errors=True)


@pytest.mark.parametrize("kind", KINDS)
def test_check_passes_behind_the_front_and_stop_ends_both(kind, reference_stack, folder):
    runner = front.wrap(NativeRunner(), kind, folder / "fronts", folder / "tls")
    outcome = check_stack(runner, reference_stack, log=lambda line: None)
    assert outcome.status == "passed", (outcome.reason, outcome.failures)
    assert outcome.failed == 0 and outcome.passed > 90
    assert (folder / "fronts" / reference_stack.name / f"{kind}.conf").is_file()

    server = runner.start(reference_stack, Limits(cpus=(0,)))
    try:
        server.wait_ready(30)
        assert server.base_url.startswith("https://") and server.tls_cert == folder / "tls/cert.pem"
        front_pids, stack_pids = server.front.pids(), server.stack.pids()
        assert front_pids and stack_pids and server.pids() == sorted(front_pids + stack_pids)
        for pid in server.pids():
            status = Path(f"/proc/{pid}/status").read_text()
            assert "Cpus_allowed_list:\t0\n" in status, "front and stack share the server cores"
        expected = {"nginx": "nginx/", "apache": "Apache/"}[kind]
        assert expected in runner.versions(reference_stack)["front"]
        server.stop()
        assert group_pids(server.front.process.pid) == []
        assert group_pids(server.stack.process.pid) == []
    finally:
        server.kill()


@pytest.mark.parametrize("kind", KINDS)
def test_a_dead_stack_behind_a_live_front_is_reported_at_stop(kind, reference_stack, folder):
    runner = front.wrap(NativeRunner(), kind, folder / "fronts", folder / "tls")
    server = runner.start(reference_stack, Limits())
    try:
        server.wait_ready(30)
        os.killpg(server.stack.process.pid, signal.SIGKILL)
        time.sleep(0.2)
        assert not server.is_alive()
        with pytest.raises(StepError) as caught:
            server.stop()
        assert caught.value.step == "stop" and "exit code -9" in caught.value.message
        assert group_pids(server.front.process.pid) == [], "the front is stopped all the same"
    finally:
        server.kill()


def test_rendered_configs_have_no_placeholder_left(folder, tls_files):
    for kind in ("nginx", "apache"):
        text = front.render(
            kind, folder=folder, listen="127.0.0.1:1", upstream="127.0.0.1:2",
            cert=tls_files.cert, key=tls_files.key, workers=3,
        )  # fmt: skip
        assert not front.PLACEHOLDER.search(text)
        assert "127.0.0.1:2" in text and str(tls_files.cert) in text


def test_missing_binary_names_the_debian_package(monkeypatch, capsys):
    missing = front.Kind("apache", "serverlab-no-such-httpd", "apache2", front.TEMPLATES / "x")
    monkeypatch.setitem(front.FRONTS, "apache", missing)
    reason = front.refusal("apache", [])
    assert "serverlab-no-such-httpd not found" in reason
    assert "Debian package apache2" in reason
    # `make check SERVERS=gin FRONT=apache` refuses before building anything.
    assert cli.main(["check", "--servers", "gin", "--front", "apache"]) == 2
    assert "Debian package apache2" in capsys.readouterr().err


def test_stacks_that_serve_tls_themselves_are_refused():
    static = SimpleNamespace(name="nginx-static", contract="static", tls=True)
    api = SimpleNamespace(name="go-nethttp", contract="api", tls=False)
    assert front.refusal("none", [static]) is None
    reason = front.refusal("nginx", [api, static])
    assert "nginx-static" in reason and "go-nethttp" not in reason
    assert "FRONT=none" in reason
    assert "use one of" in front.refusal("caddy", [api])


@pytest.mark.skipif(
    not (REPO_ROOT / "servers" / "nginx-static" / "server.toml").is_file(), reason="no static stack"
)
def test_make_check_refuses_a_front_before_a_static_stack(capsys):
    assert cli.main(["check", "--servers", "gin,nginx-static", "--front", "apache"]) == 2
    err = capsys.readouterr().err
    assert "FRONT=apache is for api stacks; nginx-static serve(s) HTTPS themselves" in err


def test_front_knob_from_profile_environment_and_command_line():
    assert resolve("smoke", env={}).front == "none"
    assert resolve("smoke", env={"FRONT": "nginx"}).front == "nginx"
    assert resolve("smoke", env={"FRONT": "nginx"}, cli={"FRONT": "apache"}).front == "apache"
    with pytest.raises(KnobError, match="FRONT='caddy'"):
        resolve("smoke", env={"FRONT": "caddy"})


@pytest.mark.parametrize("kind", KINDS)
def test_the_stacks_date_and_length_reach_the_client_unchanged(kind, folder, tls_files):
    # A stack whose Date is an hour old: the client must see exactly that Date
    # (the contract's Date rules are the stack's, not the front's).
    with ReferenceServer(DISPLAY_NAME, breaks={"stale-date"}) as stack:
        direct = http.client.HTTPConnection("127.0.0.1", stack.httpd.server_address[1])
        direct.request("GET", "/?n=1")
        expected = direct.getresponse()
        expected.read()
        direct.close()
        with front_running(kind, stack, folder, tls_files) as proxy:
            context = ssl.create_default_context(cafile=str(tls_files.cert))
            connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context)
            connection.request("GET", "/?n=1")
            response = connection.getresponse()
            response.read()
            connection.close()
            for header in ("Date", "Content-Type", "Content-Length"):
                assert response.getheader(header) == expected.getheader(header), header


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed")
@pytest.mark.parametrize("kind", KINDS)
def test_bench_measures_through_the_front_and_keeps_its_config(kind, reference_stack, folder):
    from loadtest.bench.results import read_records

    # The reference stack alone, behind the front (the ceiling still runs).
    results = folder / f"results-{kind}"
    result = bench_over([reference_stack], results, "--front", kind,
                        "--scenarios", "workday,kb100", "--connections", "4", "--duration", "1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    info = json.loads((run / "run.json").read_text())
    assert info["knobs"]["front"] == kind
    assert info["front"]["version"] == front.version(kind) == info["tools"]["front"]
    assert info["front"]["template"] == f"loadtest/runners/fronts/{front.FRONTS[kind].template.name}"
    config = info["front"]["configs"][reference_stack.name]
    assert (run / config["file"]).read_text() == config["text"]
    assert str(run / "tls" / "cert.pem") in config["text"]
    records = read_records(run / "results.jsonl")
    verify = [r for r in records if r.get("step") == "verify"]
    assert verify and verify[0]["status"] == "ok", verify
    measured = [r for r in records if r["kind"] == "measurement" and not r["ceiling"]]
    assert {r["scenario"] for r in measured} == {"workday", "kb100"}
    for record in measured:
        assert record["status"] == "ok" and record["result"]["errors_total"] == 0, record
        assert record["front"] == kind
        assert record["response"]["status"] == 200
        assert record["server"]["cpu_mean_pct"] is not None
    kb100 = next(r for r in measured if r["scenario"] == "kb100")
    assert kb100["response"]["body_bytes"] == 100_000
    # The report says the numbers were measured behind the front.
    assert f"every stack behind {kind} ({front.version(kind)})" in (run / "summary.md").read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_a_large_request_body_reaches_the_stack_without_temp_files(
    kind, counted_reference, folder, tls_files
):
    # The run's folder is private (0700) and the workers may be www-data: a
    # 500 KB body must still be passed on in memory and get the stack's 405.
    with front_running(kind, counted_reference, folder, tls_files) as proxy:
        context = ssl.create_default_context(cafile=str(tls_files.cert))
        connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context)
        connection.request("POST", "/workday", body=b"x" * 500_000)
        response = connection.getresponse()
        response.read()
        connection.close()
        assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
        assert "Permission denied" not in proxy.output_tail()


def test_the_runs_certificate_is_a_server_certificate_that_oha_accepts(
    counted_reference, folder, tls_files
):
    text = subprocess.run(
        ["openssl", "x509", "-in", str(tls_files.cert), "-noout", "-ext", "basicConstraints"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    assert "CA:FALSE" in text
    from loadtest.measure.tools import get_tool
    from loadtest.measure.tools.base import LoadSpec

    oha = get_tool("oha")
    if not oha.available() or front.binary("nginx") is None:
        pytest.skip("oha or nginx not installed")
    with front_running("nginx", counted_reference, folder, tls_files) as proxy:
        # Through the adapter, as bench runs it: the spec carries the certificate.
        spec = LoadSpec(url=proxy.base_url + "/workday", connections=2, duration=1,
                        ca_cert=str(proxy.tls_cert))  # fmt: skip
        result = oha.run(spec, folder / "raw" / "oha-tls")
        assert result.requests > 0 and result.errors_total == 0, result.to_dict()
