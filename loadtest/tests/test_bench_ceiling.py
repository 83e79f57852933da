"""The bench orchestration end to end against the nginx ceiling alone (no stack
builds): records, run.json, the report, resume, and Ctrl-C keeping what was measured."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.host.ports import free_port
from loadtest.host.process import CLEAN_EXIT_CODES
from loadtest.runners import calibration, ceiling_site
from loadtest.tests.stand_in_manifest import PRELUDE

REPO_ROOT = Path(__file__).resolve().parents[2]
NO_DAEMON = "unix:///nonexistent/serverlab-test/docker.sock"

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    calibration.nginx_path() is None or not os.path.exists("/usr/bin/wrk"),
    reason="!!! nginx or wrk NOT INSTALLED: bench orchestration not exercised (make bootstrap) !!!",
)]

# Runs `bench` with the stack list emptied: only the ceiling is measured.
SCRIPT = """
import sys
from loadtest.bench import run as bench
from loadtest.commands import bench as bench_command
bench.Bench.stacks = lambda self: []
sys.exit(bench_command.cmd_bench(bench_args(sys.argv[1:])))
"""


def bench(results: Path, *args: str, wait: bool = True):
    command = [sys.executable, "-c", PRELUDE + SCRIPT, "--results-dir", str(results), *args]
    # RUNNER=auto (the default) with a Docker socket nobody serves: the native
    # runner, whether or not a daemon runs on this machine.
    env = dict(os.environ, SEED="", DURATION="", PROFILE="", RUNNER="", DOCKER_HOST=NO_DAEMON)
    if wait:
        return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=180, env=env)  # fmt: skip
    # Started with SIGINT ignored, as a script's background job is (bash does
    # that): Ctrl-C must still reach the bench.
    return subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=_ignore_sigint)  # fmt: skip


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def only_run(results: Path) -> Path:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_ceiling_only_run_and_resume(tmp_path):
    args = ["--profile", "smoke", "--scenarios", "hello,workday", "--connections", "4",
            "--duration", "1", "--warmup", "0", "--seed", "7"]  # fmt: skip
    result = bench(tmp_path, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    folder = only_run(tmp_path)
    records = [r for r in read_records(folder / "results.jsonl") if r["kind"] == "measurement"]
    assert {r["scenario"] for r in records} == {"hello", "workday"}
    for record in records:
        assert record["status"] == "ok" and record["ceiling"]
        assert record["result"]["rps"] > 0
        assert record["server"]["cpu_mean_pct"] is not None
        assert record["response"]["header_bytes"] > 100
        assert record["server_cpus"] != record["client_cpus"] or os.cpu_count() == 1
        assert record["client"] == "host" and record["result"]["command"][0] == "taskset"
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "complete" and run["knobs"]["seed"] == 7
    assert run["runner"]["requested"] == "auto" and run["runner"]["chosen"] == "native"
    assert "RUNNER=docker to insist" in run["runner"]["reason"]
    assert run["knobs"]["runner"] == "native" and run["client"] == {"where": "host"}
    assert "runner: native" in result.stdout
    assert run["git"]["commit"] and run["host"]["cpu_model"] and run["tools"]["wrk"]
    assert (folder / "report.html").is_file() and (folder / "calibration" / "nginx.conf").is_file()
    assert list((folder / "raw").glob("*.stdout"))

    again = bench(tmp_path, "--resume", str(folder))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 measurements" in again.stdout
    assert (
        len([r for r in read_records(folder / "results.jsonl") if r["kind"] == "measurement"]) == 2
    )


def test_ctrl_c_keeps_measurements_and_writes_the_summary(tmp_path):
    # 15 measurements (about 30 s) leave ample time to interrupt mid-run; the
    # harness's raised priority is off so that this polling test is never
    # starved by the load it watches on a small machine.
    args = ["--profile", "smoke", "--scenarios", "hello,kb1,kb10,kb100,workday",
            "--connections", "4,8,16", "--duration", "2", "--warmup", "0", "--seed", "3",
            "--priority", "0"]  # fmt: skip
    process = bench(tmp_path, *args, wait=False)
    deadline = time.monotonic() + 60
    folder = None
    while time.monotonic() < deadline:
        runs = [p for p in tmp_path.iterdir() if p.is_dir()]
        if runs and len(read_records(runs[0] / "results.jsonl")) >= 1:
            folder = runs[0]
            break
        time.sleep(0.2)
    assert folder is not None, "no measurement within 60 s"
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    measured = [r for r in read_records(folder / "results.jsonl") if r["kind"] == "measurement"]
    assert 1 <= len(measured) < 15
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert (folder / "summary.csv").is_file() and (folder / "report.html").is_file()
    # Nothing left running: the ceiling's nginx was stopped.
    pid_file = folder / "calibration" / "nginx.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_ceiling_answers_every_scenario_over_one_keep_alive_connection(tmp_path):
    """The bodies of the contract's sizes, up to 10 KB from memory and 100 KB from
    its file; no TCP_CORK (tcp_nopush), which leaves Nagle on after a corked answer."""
    config = ceiling_site.write_site(tmp_path / "probe", free_port(), 1).read_text()
    assert "tcp_nopush off;" in config and "tcp_nopush on" not in config
    assert "sendfile on;" in config
    with calibration.CalibrationServer(tmp_path / "site", None, port=free_port()) as server:
        server.wait_ready()
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        expected = {
            "/": ("body-.txt", True),
            "/?n=1": ("body-1.txt", True),
            "/?n=10": ("body-10.txt", True),
            "/?n=100": ("body-100.txt", False),
            "/workday": ("workday.txt", True),
        }
        for _ in range(2):  # twice: the second answers come on a reused connection
            for path, (name, from_memory) in expected.items():
                connection.request("GET", path)
                response = connection.getresponse()
                body = response.read().decode()
                assert response.status == 200, path
                assert body == ceiling_site.BODIES[name], path
                assert response.getheader("Content-Length") == str(len(body)), path
                assert response.getheader("Content-Type") == "text/plain; charset=utf-8", path
                assert not response.will_close, path
                # A file answer carries Last-Modified; a `return` from memory does not.
                assert (response.getheader("Last-Modified") is None) == from_memory, path
        for path, status in (("/?n=5", 404), ("/unavailable", 503)):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            assert response.status == status, path
        connection.close()
        assert server.stop() in CLEAN_EXIT_CODES
