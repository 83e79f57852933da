"""`bench --runner docker` end to end: gin in its container, every load tool
(the nginx ceiling's too) in the loadgen container, and the records say so.

Needs a Docker daemon and the gin and loadgen images (`make docker-smoke`
builds them; the bench rebuilds only what changed). Skipped without them,
except under `make docker-smoke` (SERVERLAB_DOCKER_TESTS=1), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.core.knobs import parse_cpus
from loadtest.core.manifest import load_all
from loadtest.runners import calibration
from loadtest.runners.choose import choose_runner, docker_problem
from loadtest.runners.container import docker, image_id
from loadtest.runners.docker import compose_problem, daemon_problem
from loadtest.tests.docker_support import need, need_loadgen

# Run by the docker-smoke stage, on the images it built (SERVERLAB_DOCKER_TESTS=1).
pytestmark = [pytest.mark.e2e, pytest.mark.docker]

REPO_ROOT = Path(__file__).resolve().parents[2]


def standins_present() -> bool:
    listed = docker("image", "ls", "--quiet", "--filter", "reference=serverlab/standin-*",
                    check=False)  # fmt: skip
    return bool(listed.stdout.strip())


def test_auto_takes_docker_when_the_daemon_answers():
    need(daemon_problem() or compose_problem())
    # A run of gin: Go modules from their registry (a machine may lack another family's).
    assert choose_runner("auto", lambda: docker_problem(load_all(["gin"])))[0] == "docker"


def test_bench_loads_from_the_loadgen_container(tmp_path):
    need(daemon_problem() or compose_problem())
    need_loadgen()
    need(None if image_id("serverlab/gin") else "serverlab/gin not built (make docker-smoke builds it)")
    env = dict(os.environ)
    env.pop("RUNNER", None)
    # Not on gin's manifest port: another run may be using it.
    env["SERVERLAB_DOCKER_PORTS"] = "free"
    # Images built on stand-ins are rebuilt (a no-op when current) on stand-ins:
    # official base images cannot be pulled where only stand-ins exist.
    if "SERVERLAB_BASE_IMAGES" not in env and standins_present():
        env["SERVERLAB_BASE_IMAGES"] = "standin"
    command = [sys.executable, "-m", "loadtest", "bench", "--runner", "docker",
               "--profile", "smoke", "--servers", "gin",
               "--results-dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env,
                            timeout=900)  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "runner: docker — RUNNER=docker" in result.stdout
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]

    records = [r for r in read_records(folder / "results.jsonl") if r["kind"] == "measurement"]
    stacks = {r["stack"] for r in records}
    assert "gin" in stacks, output
    for record in records:
        assert record["status"] == "ok", record["problem"]
        assert record["client"] == "loadgen-container"
        assert record["runner"] == ("native" if record["ceiling"] else "docker")
        command = record["result"]["command"]
        assert command[:3] == ["taskset", "-c", ",".join(map(str, record["client_cpus"]))]
        assert command[3] == "wrk"
        assert (
            command[command.index("-s") + 1]
            == "/opt/serverlab/loadtest/measure/tools/wrk_report.lua"
        )
        assert record["result"]["tool_cpu_s"] > 0  # the loadgen's cgroup CPU time
    if calibration.nginx_path():
        assert calibration.NAME in stacks  # the ceiling, loaded by the same client
    assert list((folder / "raw").glob("*gin*.stdout"))

    run = json.loads((folder / "run.json").read_text())
    assert run["runner"] == {"requested": "docker", "chosen": "docker", "reason": "RUNNER=docker"}
    assert run["knobs"]["runner"] == "docker"
    client = run["client"]
    assert client["where"] == "loadgen-container" and client["network"] == "host"
    assert client["image_id"] == image_id("serverlab/loadgen")
    assert parse_cpus(client["cpuset"]) == tuple(run["knobs"]["client_cpus"])
    assert client["tools"]["wrk"].startswith("wrk ")
    assert run["tools"]["wrk"] == client["tools"]["wrk"]


def test_a_tool_the_loadgen_lacks_stops_the_run_before_any_build(tmp_path):
    need(daemon_problem() or compose_problem())
    need_loadgen()
    env = dict(os.environ, SERVERLAB_DOCKER_PORTS="free")
    if "SERVERLAB_BASE_IMAGES" not in env and standins_present():
        env["SERVERLAB_BASE_IMAGES"] = "standin"
    command = [sys.executable, "-m", "loadtest", "bench", "--runner", "docker",
               "--tool", "h2load", "--profile", "smoke", "--servers", "gin",
               "--results-dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env,
                            timeout=600)  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "h2load is not in the loadgen image" in result.stdout
    assert "[gin] build" not in result.stdout
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    records = read_records(folder / "results.jsonl")
    assert not [r for r in records if r["kind"] == "measurement"]
    assert [(r["stack"], r["step"], r["status"]) for r in records] == [
        ("loadgen", "prerequisites", "failed")
    ]
