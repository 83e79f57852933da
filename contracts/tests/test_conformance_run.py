"""The whole checker against the correct reference server: CLI and Python API.

These are the only full runs (each waits 2 s for the Date-freshness check);
the break-switch tests run subsets.
"""

from __future__ import annotations

import json
import random
import re
import socket
import subprocess
import sys
import threading

import pytest

from contracts.conformance import ServerUnreachable, UsageError, run_checks
from contracts.conformance.expect import parse_imf_fixdate
from contracts.conformance.runner import DEFAULT_VECTORS
from contracts.conformance.vectors import load_workday
from contracts.tests.conftest import DISPLAY_NAME, REPO_ROOT, expected_ids

pytestmark = pytest.mark.e2e

CHECK_LINE = re.compile(r"(PASS|FAIL) (\S+)  (.+)")
SUMMARY_LINE = re.compile(r"(\d+) passed, (\d+) failed")


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "contracts.conformance", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_cli_passes_correct_server_with_one_line_per_check(reference):
    result = run_cli("--base-url", reference.url, "--display-name", DISPLAY_NAME)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    checks = [CHECK_LINE.fullmatch(line) for line in lines if line[:4] in ("PASS", "FAIL")]
    assert all(checks), [line for line in lines if line[:4] in ("PASS", "FAIL")]
    assert [m.group(1) for m in checks] == ["PASS"] * len(checks)
    assert [m.group(2) for m in checks] == expected_ids()
    assert SUMMARY_LINE.fullmatch(lines[-1]).groups() == (str(len(checks)), "0")
    assert "PASS workday-vectors  450/450" in lines
    seed = int(next(line for line in lines if line.startswith("INFO seed")).split()[-1])
    assert f"seed {seed}" in next(line for line in lines if line.startswith("PASS n-random"))
    assert "INFO server-header  'reference'" in lines


def test_cli_json_report_has_the_documented_schema(reference):
    result = run_cli(
        "--base-url", reference.url + "/", "--display-name", DISPLAY_NAME, "--json", "--seed", "7"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report) == [
        "display_name",
        "base_url",
        "passed",
        "failed",
        "seed",
        "duration_s",
        "checks",
        "observed",
    ]
    assert report["display_name"] == DISPLAY_NAME
    assert report["base_url"] == reference.url
    assert report["seed"] == 7
    assert report["failed"] == 0 and report["passed"] == len(report["checks"])
    assert 0.0 < report["duration_s"] < 30
    for check in report["checks"]:
        assert set(check) == {"id", "category", "ok", "detail"}
        assert check["category"] in {
            "hello",
            "n",
            "workday",
            "headers",
            "routing",
            "head",
            "connection",
        }
        assert check["ok"] is True and isinstance(check["detail"], str) and check["detail"]
    assert [c["id"] for c in report["checks"]] == expected_ids()
    observed = report["observed"]
    assert observed["server_header"] == "reference"
    assert set(observed["response_header_bytes"]) == {"hello", "workday", "kb1"}
    # Status line, Server, Date, Content-Type and Content-Length: well over 100 bytes.
    assert all(
        isinstance(v, int) and 100 < v < 300 for v in observed["response_header_bytes"].values()
    )
    assert parse_imf_fixdate(observed["date_header_example"]) is not None
    values = random.Random(7).sample(range(1, 101), 20)
    n_random = next(c for c in report["checks"] if c["id"] == "n-random")
    assert n_random["detail"].endswith(", ".join(map(str, values)))


def test_api_returns_the_same_report_and_streams_results(reference):
    streamed = []
    report = run_checks(reference.url, DISPLAY_NAME, seed=3, timeout=2.0, on_result=streamed.append)
    assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
    assert streamed == report["checks"]
    assert [c["id"] for c in report["checks"]] == expected_ids()
    assert len(set(expected_ids())) == len(expected_ids())
    categories = {c["id"]: c["category"] for c in report["checks"]}
    assert categories["workday-vectors"] == "workday"
    assert categories["header-date-fresh"] == "headers"
    assert categories["head[/]"] == "head"
    assert categories["concurrent"] == "connection"
    assert len(load_workday(DEFAULT_VECTORS / "workday.json")) >= 300


def test_unreachable_server_exits_2_with_a_clear_message():
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli("--base-url", url, "--display-name", DISPLAY_NAME, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"cannot connect to {url}: connection refused" in result.stderr
    with pytest.raises(ServerUnreachable, match="connection refused"):
        run_checks(url, DISPLAY_NAME)


def test_server_that_never_answers_exits_2():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        result = run_cli("--base-url", url, "--display-name", "X", "--timeout", "0.5")
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()
    assert result.returncode == 2
    assert "accepted a connection but sent no response within 0.5 s" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--base-url", "ftp://127.0.0.1:1", "--display-name", "X"], "must look like http://"),
        (["--base-url", "http://127.0.0.1:1/api", "--display-name", "X"], "no path"),
        (["--base-url", "http://127.0.0.1:1", "--display-name", ""], "must not be empty"),
        (
            ["--base-url", "http://127.0.0.1:1", "--display-name", "X", "--only", "bogus"],
            "unknown check group",
        ),
        (
            [
                "--base-url",
                "http://127.0.0.1:1",
                "--display-name",
                "X",
                "--vectors",
                "/nonexistent",
            ],
            "cannot read vector file",
        ),
        (
            [
                "--base-url",
                "http://127.0.0.1:1",
                "--display-name",
                "X",
                "--calendar",
                "/nonexistent",
            ],
            "cannot read calendar file",
        ),
        (["--display-name", "X"], "--base-url"),
    ],
)
def test_usage_errors_exit_2(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_api_usage_error():
    with pytest.raises(UsageError, match="no path"):
        run_checks("http://127.0.0.1:1/x", "X")
