"""Which runner `make bench` takes: RUNNER=auto (the default) picks Docker when a
daemon answers and Compose v2 is present, else native; RUNNER=docker|native
forces one, and a forced Docker without a daemon stops with the reason.

The rule is tested with the probe's two possible answers, then with the real
docker CLI pointed at a socket nobody serves (no daemon) and at an empty
plugin folder (no Compose v2), and through `bench --dry-run`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.core.knobs import KnobError, resolve
from loadtest.core.runner import RunnerUnavailable
from loadtest.runners.choose import choose_runner, docker_problem
from loadtest.runners.docker import compose_problem, daemon_problem

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
NO_DAEMON = "unix:///nonexistent/serverlab-test/docker.sock"
DAEMON_MISSING = "no Docker daemon answers (scripts/docker-daemon.sh start)"
COMPOSE_MISSING = "Docker Compose v2 plugin not found (scripts/install-compose.sh builds it)"


def docker_usable() -> None:
    return None


def never_probed():
    raise AssertionError("RUNNER=native must not ask Docker anything")


def test_auto_takes_docker_when_a_daemon_answers_and_compose_is_present():
    chosen, reason = choose_runner("auto", docker_usable)
    assert chosen == "docker"
    assert "daemon answers" in reason and "RUNNER=native" in reason


def test_auto_falls_back_to_native_without_a_daemon():
    chosen, reason = choose_runner("auto", lambda: DAEMON_MISSING)
    assert chosen == "native"
    assert reason == f"{DAEMON_MISSING}; RUNNER=docker to insist"


def test_auto_falls_back_to_native_without_compose_v2():
    chosen, reason = choose_runner("auto", lambda: COMPOSE_MISSING)
    assert chosen == "native" and COMPOSE_MISSING in reason


def test_auto_stays_native_for_a_tool_the_loadgen_image_lacks():
    chosen, reason = choose_runner("auto", never_probed, tools=["h2load"])
    assert chosen == "native" and reason.startswith("h2load runs on the host only")
    assert choose_runner("auto", docker_usable, tools=["wrk", "oha"])[0] == "docker"


def test_forced_runners():
    assert choose_runner("native", never_probed) == ("native", "RUNNER=native")
    assert choose_runner("docker", docker_usable) == ("docker", "RUNNER=docker")
    with pytest.raises(RunnerUnavailable, match="RUNNER=docker, but no Docker daemon answers"):
        choose_runner("docker", lambda: DAEMON_MISSING)
    with pytest.raises(RunnerUnavailable, match="Compose v2"):
        choose_runner("docker", lambda: COMPOSE_MISSING)
    with pytest.raises(RunnerUnavailable, match="use auto, native, docker"):
        choose_runner("podman", docker_usable)


def test_the_knob_defaults_to_auto_and_rejects_unknown_runners():
    assert resolve("smoke", env={}).runner == "auto"
    assert resolve("smoke", env={"RUNNER": "native"}).runner == "native"
    with pytest.raises(KnobError, match="RUNNER='podman'"):
        resolve("smoke", env={"RUNNER": "podman"})


def test_real_probe_without_a_daemon(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", NO_DAEMON)
    monkeypatch.setenv("OFFLINE", "0")  # every registry reached: the daemon is the problem
    problem = daemon_problem()
    assert problem is not None  # "docker CLI not found" on a machine without it
    assert docker_problem() == problem
    chosen, reason = choose_runner("auto")
    assert chosen == "native" and reason.startswith(problem)


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
def test_real_probe_without_compose(monkeypatch, tmp_path):
    # The CLI looks for plugins under $DOCKER_CONFIG/cli-plugins (and system
    # folders, where this project never installs Compose).
    if any(Path(d, "docker-compose").exists() for d in SYSTEM_PLUGIN_DIRS):
        pytest.skip("a system-wide Compose plugin cannot be hidden")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert compose_problem() == COMPOSE_MISSING


SYSTEM_PLUGIN_DIRS = (
    "/usr/local/lib/docker/cli-plugins",
    "/usr/local/libexec/docker/cli-plugins",
    "/usr/lib/docker/cli-plugins",
    "/usr/libexec/docker/cli-plugins",
)


def dry_run(servers: str = "gin", **env: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "loadtest", "bench", "--profile", "smoke",
               "--servers", servers, "--dry-run"]  # fmt: skip
    full_env = {**os.environ, "RUNNER": "", "DOCKER_HOST": NO_DAEMON, **env}
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, env=full_env, timeout=120
    )


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed (make bootstrap)")
def test_bench_says_which_runner_it_took_and_why():
    result = dry_run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runner: native — " in result.stdout
    assert "RUNNER=docker to insist" in result.stdout
    assert "runner native" in result.stdout  # the plan's knob line
    # Writes nothing, so names no folder a real run would not use.
    assert "results/<start time>-smoke (a dry run writes nothing)" in result.stdout

    forced = dry_run(RUNNER="native")
    assert forced.returncode == 0 and "runner: native — RUNNER=native" in forced.stdout


def test_bench_with_runner_docker_and_no_daemon_stops_with_the_reason():
    result = dry_run(RUNNER="docker")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "bench: RUNNER=docker, but " in result.stdout
    assert "plan:" not in result.stdout  # nothing planned, nothing started


def test_check_stays_native_unless_runner_is_given():
    command = [sys.executable, "-m", "loadtest", "check", "--servers", "no-such-stack"]
    env = {**os.environ, "DOCKER_HOST": NO_DAEMON}
    default = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env)
    assert "runner: native — the default of check" in default.stdout
    forced = subprocess.run([*command, "--runner", "docker"], cwd=REPO_ROOT,
                            capture_output=True, text=True, env=env)  # fmt: skip
    assert forced.returncode == 2 and "check: RUNNER=docker, but " in forced.stderr


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed (make bootstrap)")
def test_a_stack_that_cannot_run_here_is_named_and_left_out_of_the_estimate():
    # cargo taken off PATH: axum cannot run here, whether or not an earlier stage built it.
    folders = os.environ["PATH"].split(os.pathsep)
    path = os.pathsep.join(d for d in folders if not os.path.exists(os.path.join(d, "cargo")))
    if shutil.which("wrk", path=path) is None:
        pytest.skip("cargo sits beside wrk (a system folder); it cannot be hidden from PATH")
    without_cargo = {"RUNNER": "native", "PATH": path}
    both = dry_run("axum,sanic", **without_cargo)
    alone = dry_run("sanic", **without_cargo)
    assert both.returncode == 0, both.stdout + both.stderr
    assert "not in the plan, cannot run here: axum (" in both.stdout
    plan_line = [line for line in both.stdout.splitlines() if "plan:" in line]
    assert plan_line == [line for line in alone.stdout.splitlines() if "plan:" in line]
