"""The hostile-input suite judges real servers the way docs/reliability.md says.

A correct server (the contract's reference server, http.server) passes the
raw-socket cases; small raw servers that break one rule each (a 5xx, a hang,
no pipelining, a body read as the next request) fail exactly the case that
covers the rule. The bookkeeping (documented failures, the table) is tested
on made-up reports. No stack is started here: `make test` runs the suite
against every stack in its own stage.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from contracts.tests.reference_server import ReferenceServer
from loadtest.commands import hostile
from loadtest.core.manifest import Manifest
from loadtest.runners import hostile as hostile_run
from loadtest.runners import hostile_cases as hc
from loadtest.runners import raw_http

pytestmark = pytest.mark.e2e

# The reference server is http.server, which never reads the body of a GET:
# it fails body-on-get (the test below proves the case notices).
REFERENCE_PASSES = [c for c in hc.CASES if c != "body-on-get"]


@pytest.fixture(scope="module")
def reference_port():
    with ReferenceServer("Reference") as server:
        yield int(server.url.rsplit(":", 1)[1])


@pytest.mark.parametrize("case", REFERENCE_PASSES)
def test_reference_server_passes(reference_port, case, monkeypatch):
    monkeypatch.setattr(hc, "SILENT_HOLD_S", 1.0)
    func = hc.CASES[case]
    result = func(reference_port, 100) if case == "idle-connections" else func(reference_port)
    assert result.ok, result.detail
    assert not [s for s in result.statuses if s >= 500 and s != hc.VERSION_NOT_SUPPORTED]


def test_reference_server_reads_a_get_body_as_the_next_request(reference_port):
    result = hc.body_on_get(reference_port)
    assert not result.ok
    assert "misread" in result.detail


class RawServer:
    """A tiny socket server whose `answer(data) -> bytes | None` decides every reply."""

    def __init__(self, answer):
        self.answer = answer
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.listener.close()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            conn.settimeout(10)
            try:
                while data := conn.recv(65536):
                    reply = self.answer(data)
                    if reply is None:
                        continue  # say nothing, keep the connection
                    conn.sendall(reply)
                    if b"Connection: close" in reply:
                        return
            except OSError:
                pass


def reply(status: int, body: bytes = b"", close: bool = False) -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n"
    return (head + ("Connection: close\r\n" if close else "") + "\r\n").encode() + body


def test_a_5xx_for_a_bad_request_fails():
    with RawServer(lambda data: reply(500)) as server:
        result = hc.invalid_request_line(server.port)
    assert not result.ok
    assert 500 in result.statuses


def test_a_server_that_says_nothing_fails_after_the_timeout(monkeypatch):
    monkeypatch.setattr(raw_http, "TIMEOUT_S", 0.5)
    with RawServer(lambda data: None) as server:
        result = hc.invalid_request_line(server.port)
    assert not result.ok
    assert "no close within" in result.detail


def test_pipelining_that_drops_requests_fails(monkeypatch):
    monkeypatch.setattr(raw_http, "TIMEOUT_S", 0.5)
    # Answers one request per read, whatever else the read carried.
    with RawServer(lambda data: reply(200, b"X" * 1000)) as server:
        result = hc.pipelined(server.port)
    assert not result.ok
    assert result.info["answered"] < hc.PIPELINED


def test_pipelining_stopped_with_connection_close_is_allowed():
    body = b"Hello World, from Raw! 2026-01-01 00:00:00.000"
    with RawServer(lambda data: reply(200, body, close=True)) as server:
        result = hc.pipelined(server.port)
    assert result.ok, result.detail
    assert "Connection: close as HTTP allows" in result.detail


def test_a_200_for_a_malformed_request_fails():
    with RawServer(lambda data: reply(200, b"ok")) as server:
        result = hc.invalid_request_line(server.port)
    assert not result.ok
    assert "expected a 4xx or a close" in result.detail


def test_file_limit_is_raised_within_the_hard_limit():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    got = hc.raise_file_limit(soft + 1)
    assert got >= min(soft + 1, hard if hard != resource.RLIM_INFINITY else soft + 1)


# -- bookkeeping --------------------------------------------------------------------


def manifest(known: list[dict]) -> Manifest:
    return Manifest(
        name="demo",
        folder=Path("/nonexistent"),
        display_name="Demo",
        language="Python",
        framework="demo",
        framework_version="1.0",
        runtime="CPython",
        runtime_version="3.11.0",
        port=9999,
        concurrency={},
        native={},
        docker={},
        known_failures=known,
    )


def test_documented_failures_show_as_documented_and_never_as_passed(capsys):
    report = hostile_run.StackReport("demo")
    report.set("pipelined-100", False, "1 of 100")
    report.set("header-64k", True, "200")
    report.set("url-1mb", False, "5xx")
    known = [
        {"check": "hostile:pipelined-100", "why": "no pipelining"},
        {"check": "hostile:header-64k", "why": "stale"},
    ]
    hostile_run.apply_documented(report, manifest(known))
    assert report.rows["pipelined-100"]["status"] == "documented"
    assert report.rows["url-1mb"]["status"] == "fail"
    assert report.rows["header-64k"]["status"] == "pass"
    assert "remove it" in report.rows["header-64k"]["note"]
    assert "hostile:header-64k is listed as a known failure but passed" in capsys.readouterr().out


def test_an_intermittent_known_failure_is_documented_when_it_fails_and_kept_when_it_passes(
    capsys,
):
    known = [{"check": "hostile:connect-send-nothing", "why": "timing", "intermittent": True}]
    failed, passed = hostile_run.StackReport("demo"), hostile_run.StackReport("demo")
    failed.set("connect-send-nothing", False, "no answer in 5 s")
    passed.set("connect-send-nothing", True, "answered")
    hostile_run.apply_documented(failed, manifest(known))
    hostile_run.apply_documented(passed, manifest(known))
    assert failed.rows["connect-send-nothing"]["status"] == "documented"
    assert passed.rows["connect-send-nothing"]["status"] == "pass"
    assert "did not occur this time" in passed.rows["connect-send-nothing"]["note"]
    assert "remove it" not in capsys.readouterr().out


def test_schemathesis_is_documented_only_when_every_failure_code_is():
    known = [{"check": "hostile:schemathesis:ST204", "why": "parser rejects QUERY"}]
    report = hostile_run.StackReport("demo")
    report.schemathesis = {"codes": ["ST204"]}
    report.set("schemathesis", False, "2 with failures")
    hostile_run.apply_documented(report, manifest(known))
    assert report.rows["schemathesis"]["status"] == "documented"

    report = hostile_run.StackReport("demo")
    report.schemathesis = {"codes": ["ST101", "ST204"]}
    report.set("schemathesis", False, "3 with failures")
    hostile_run.apply_documented(report, manifest(known))
    assert report.rows["schemathesis"]["status"] == "fail"


def test_table_is_case_by_stack():
    a, b = hostile_run.StackReport("alpha", "passed"), hostile_run.StackReport("beta", "failed")
    a.set("header-64k", True, "")
    b.set("header-64k", False, "")
    b.rows["header-64k"]["status"] = "documented"
    b.set("url-1mb", False, "")
    text = hostile.table([a, b], ["header-64k", "url-1mb"])
    lines = text.splitlines()
    assert lines[0].split() == ["case", "alpha", "beta"]
    assert lines[2].split() == ["header-64k", "pass", "doc"]
    assert lines[3].split() == ["url-1mb", "-", "FAIL"]
    assert lines[4].split() == ["RESULT", "pass", "FAIL"]


def test_exit_code_is_non_zero_only_for_undocumented_failures():
    good = hostile_run.StackReport("a", "passed")
    skipped = hostile_run.StackReport("b", "skipped", reason="toolchain not found: x")
    assert hostile.finish([good, skipped]) == 0
    bad = hostile_run.StackReport("c", "failed")
    bad.set("url-1mb", False, "5xx")
    assert hostile.finish([good, bad]) == 1


def test_every_known_hostile_id_names_a_real_row():
    """A typo in server.toml would excuse nothing and hide nothing: catch it here."""
    from loadtest.core.manifest import load_all

    rows = set(hostile.ROWS)
    for m in load_all():
        for entry in m.known_failures:
            check = entry["check"]
            if not check.startswith(hostile_run.KNOWN_PREFIX):
                continue
            rest = check[len(hostile_run.KNOWN_PREFIX) :]
            if rest.startswith("schemathesis:"):
                assert rest.split(":", 1)[1].startswith("ST"), f"{m.name}: {check}"
            else:
                assert rest in rows, f"{m.name}: unknown hostile case {check}"


def test_static_stacks_are_left_out_with_a_reason(tmp_path):
    """The hostile cases judge the API contract; a static stack is named and skipped."""
    import subprocess
    import sys

    from loadtest.core.manifest import REPO_ROOT

    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "hostile", "--quick",
         "--servers", "nginx-static,apache-static@stock", "--output", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nginx-static skipped: serves the static contract" in result.stdout
    assert "apache-static@stock skipped: serves the static contract" in result.stdout
