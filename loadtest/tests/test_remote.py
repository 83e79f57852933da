"""Stacks on one engine, load from others: the rules that need no engine.

The knobs refuse what cannot work before anything starts; an engine's name
becomes the right Docker environment; the figures read through an engine are
parsed exactly; and every rule the remote smoke checks on a record is broken
here on purpose, one at a time (make remote-smoke runs the whole path on real
test hosts).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from loadtest.bench import plan
from loadtest.commands import remote
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, host_problem, resolve
from loadtest.measure.tools.base import LoadResult, LoadSpec
from loadtest.measure.tools.group import Member, MemberRun, load_window
from loadtest.runners import calibration, compose
from loadtest.runners.docker import bind_address
from loadtest.runners.engine import LOCAL, Engine, cpu_pct, parse_system_time
from loadtest.runners.loadgen import WALL_MARKER, container_cpu_ns, take_tool_wall

SERVER, CLIENTS = "lab-server", ["lab-client1", "lab-client2"]


def knobs(**env):
    return resolve("smoke", env={"SEED": "1", **env})


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("tcp://10.0.0.1:2375", "answers anybody"),
        ("unix:///var/run/docker.sock", "through SSH only"),
        ("ssh://", "needs a host"),
        ("-ctx", "neither an ssh:// URL nor a Docker context"),
        ("my context", "neither an ssh:// URL nor a Docker context"),
    ],
)
def test_engines_are_reached_through_ssh_only(host, why):
    assert why in host_problem(host)
    with pytest.raises(KnobError, match="SERVER_HOST/CLIENT_HOSTS"):
        knobs(RUNNER="docker", SERVER_HOST=host)


def test_ssh_urls_and_context_names_are_accepted():
    for host in ("ssh://root@198.18.7.1", "ssh://me@lab:2222", "lab-server", "lab.server_2"):
        assert host_problem(host) is None
    k = knobs(RUNNER="docker", SERVER_HOST=SERVER, CLIENT_HOSTS=",".join(CLIENTS))
    assert (k.server_host, k.client_hosts) == (SERVER, CLIENTS)


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"RUNNER": "native", "SERVER_HOST": SERVER}, "RUNNER=docker"),
        ({"RUNNER": "auto", "CLIENT_HOSTS": "a"}, "RUNNER=docker"),
        ({"RUNNER": "docker", "SERVER_HOST": SERVER, "FRONT": "nginx"}, "FRONT runs on this"),
        ({"RUNNER": "docker", "CLIENT_HOSTS": "a,b", "TOOL": "ab"}, "merge across hosts"),
        ({"RUNNER": "docker", "CLIENT_HOSTS": "a,b", "TOOL": "h2load"}, "merge across hosts"),
        ({"RUNNER": "docker", "CLIENT_HOSTS": "a,a"}, "names a host twice"),
        ({"RUNNER": "docker", "CLIENT_HOSTS": "a,b,c", "CONNECTIONS": "2"}, "fewer than the 3"),
    ],
)
def test_what_cannot_work_is_refused_before_anything_starts(env, why):
    with pytest.raises(KnobError, match=why):
        knobs(**env)


def test_a_request_count_below_the_connections_is_refused_where_the_knobs_enter():
    # ab-2017 sends 2000 requests of the larger bodies: not over 3000 connections.
    with pytest.raises(KnobError, match="fewer than CONNECTIONS=3000"):
        resolve("ab-2017", env={"CONNECTIONS": "3000"})
    assert resolve("ab-2017", env={"CONNECTIONS": "2000"}).connections == [2000]


def test_the_cores_of_another_host_are_not_checked_against_this_one():
    with pytest.raises(KnobError, match="not available here"):
        knobs(RUNNER="docker", SERVER_CPUS="63")
    k = knobs(RUNNER="docker", SERVER_HOST=SERVER, CLIENT_HOSTS="a", SERVER_CPUS="63",
              CLIENT_CPUS="62")  # fmt: skip
    assert (k.server_cpus, k.client_cpus) == ((63,), (62,))


def test_the_ceiling_runs_on_the_stacks_host_from_the_loadgen_image():
    assert plan.measures_ceiling(knobs(RUNNER="docker", SERVER_HOST=SERVER))
    service = compose.model()["services"][calibration.NAME]
    assert service["image"] == compose.image_name("loadgen") and "build" not in service
    assert service["command"][-1] == "loadtest.runners.ceiling_site"
    assert service["cpuset"] == "${SERVER_CPUS:-}" and service["<<"] == "*hardening"
    dockerfile = compose.LOADGEN_DOCKERFILE.read_text()
    assert "nginx-light" in dockerfile and "loadtest/runners/ceiling_site.py" in dockerfile


def test_an_engines_name_becomes_the_docker_environment(monkeypatch):
    monkeypatch.setenv("DOCKER_CONTEXT", "somewhere-else")
    url = Engine.named("ssh://root@198.18.7.1:2222")
    assert (url.label, url.remote, url.address()) == ("198.18.7.1", True, "198.18.7.1")
    assert url.env()["DOCKER_HOST"] == "ssh://root@198.18.7.1:2222"
    assert "DOCKER_CONTEXT" not in url.env()
    context = Engine.named(SERVER)
    assert context.env()["DOCKER_CONTEXT"] == SERVER and "DOCKER_HOST" not in context.env()
    assert Engine.named("") is LOCAL and LOCAL.env()["DOCKER_CONTEXT"] == "somewhere-else"
    assert LOCAL.address() == "127.0.0.1"
    with pytest.raises(ValueError, match="SSH only"):
        Engine.named("tcp://10.0.0.1:2375")


def test_a_stack_elsewhere_listens_on_the_address_the_load_aims_at():
    assert bind_address("198.18.7.1") == "198.18.7.1"
    assert bind_address("fd00::1") == "fd00::1"
    assert bind_address("lab-server.example") == "0.0.0.0"  # may resolve otherwise there


def test_engine_clock_and_cpu_readings():
    assert parse_system_time("1970-01-01T00:00:01.5Z") == pytest.approx(1.5)
    assert parse_system_time("1970-01-01T01:00:00.000000001+01:00") == pytest.approx(1e-9)
    assert parse_system_time("yesterday") is None
    assert cpu_pct((10.0, 0, 0), (12.0, 1_000_000_000, 0)) == pytest.approx(50.0)
    assert container_cpu_ns("123456789\n") == 123456789  # cgroup v1: cpuacct.usage
    assert container_cpu_ns("usage_usec 2500\nuser_usec 2000\n") == 2_500_000  # v2: cpu.stat
    with pytest.raises(StepError, match="no CPU time"):
        container_cpu_ns("cat: no such file\n")


def test_the_tools_own_wall_time_is_taken_from_its_stderr(tmp_path: Path):
    err = tmp_path / "run.stderr"
    err.write_text(f"a warning\n{WALL_MARKER}2013456789\n")
    assert take_tool_wall(err) == pytest.approx(2.013456789)
    assert err.read_text() == "a warning\n"
    assert take_tool_wall(err) is None  # no marker: the exec's own wall time stands


def test_the_load_window_spans_the_first_start_to_the_last_end():
    def ran(ended, duration):
        spec = LoadSpec(url="http://198.18.7.1:8101/", connections=8)
        run = MemberRun(Member("c", None), spec, Path("raw"), "", [])
        run.ended, run.result = ended, LoadResult(tool="wrk", duration_s=duration)
        return run

    # The second host's tool started 0.3 s later (its exec was slower) and ended later.
    assert load_window([ran(10.0, 2.0), ran(10.3, 2.0)]) == pytest.approx(2.3)


# ------------------------------------------------------------- what the smoke checks

GOOD = {
    "stack": "gin",
    "scenario": "hello",
    "status": "ok",
    "connections": 16,
    "server_host": SERVER,
    "client_hosts": CLIENTS,
    "server": {"source": "docker-api", "samples": 4},
    "result": {
        "requests": 300,
        "latency_ms": {"p50": 11.0},
        "details": {
            "hosts": [
                {"label": CLIENTS[0], "requests": 160, "connections": 8, "rate": 1000.0},
                {"label": CLIENTS[1], "requests": 140, "connections": 8, "rate": 1000.0},
            ]
        },
    },
}
PASS = remote.Pass("all rules", 1, (), delay="5ms", rate=2000.0)


def broken(change) -> dict:
    record = copy.deepcopy(GOOD)
    change(record)
    return record


BREAKS = {
    "failed": lambda r: r.update(status="failed", problem="server exited"),
    "served by": lambda r: r.update(server_host="local"),
    "loaded from": lambda r: r.update(client_hosts=CLIENTS[:1]),
    "per-host shares": lambda r: r["result"]["details"]["hosts"].pop(),
    "do not sum to 300": lambda r: r["result"]["details"]["hosts"][0].update(requests=10),
    "connections do not sum": lambda r: r["result"]["details"]["hosts"][0].update(connections=1),
    "rates": lambda r: r["result"]["details"]["hosts"][0].update(rate=500.0),
    "not read through the server's engine": lambda r: r["server"].update(source="process-tree"),
    "under NET_DELAY": lambda r: r["result"]["latency_ms"].update(p50=3.0),
}


def test_a_good_remote_record_passes():
    assert remote.check_record(GOOD, SERVER, CLIENTS, PASS) == []


@pytest.mark.parametrize("why", sorted(BREAKS))
def test_each_rule_of_a_remote_record_fails_alone(why):
    problems = remote.check_record(broken(BREAKS[why]), SERVER, CLIENTS, PASS)
    assert len(problems) == 1 and why in problems[0], problems
