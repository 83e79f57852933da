"""What the harness reads through an engine's API, checked against this machine's own counters.

A stack on another host is sampled through its engine (runners/engine.py),
since its processes are not this machine's. Here the engine is this
machine's, so the same container can also be read from its cgroup: the two
must agree. Needs a Docker daemon and a built stack image (make docker-smoke
runs it with SERVERLAB_DOCKER_TESTS=1).
"""

from __future__ import annotations

import time

import pytest

from loadtest.core.runner import Limits
from loadtest.host.ports import free_port
from loadtest.runners.docker import DockerRunner
from loadtest.runners.engine import LOCAL, EngineAPI, EngineStatsSampler, container_reading
from loadtest.tests.test_docker_limits import built_stack, load_generator, need_docker

# Run by the docker-smoke stage, on the images it built (SERVERLAB_DOCKER_TESTS=1).
pytestmark = [pytest.mark.e2e, pytest.mark.docker]

LOAD_S = 3
# The share of its one core the loaded server must have been charged for the
# readings to be compared at all. An unloaded server is charged under 1%; how
# far above this floor it gets depends on what else runs (make test runs the
# hostile and remote-smoke stages beside this one: 28.6% was seen once), and
# these tests judge the agreement of two readings, not the server's speed.
BUSY_FLOOR_PCT = 10


@pytest.fixture(scope="module")
def stack():
    need_docker()
    return built_stack()


def test_the_engine_describes_its_host_and_its_clock():
    need_docker()
    info = LOCAL.describe()
    assert info["cpus"] >= 1 and info["memory_bytes"] > 0 and info["kernel"]
    assert info["docker_version"] and info["cgroup_version"] in ("1", "2")
    # The same clock on both sides: the offset lies within the reading's own bound.
    assert abs(info["clock_offset_s"]) <= info["clock_offset_error_s"] + 0.002


def test_engine_cpu_time_agrees_with_the_containers_cgroup(stack):
    runner = DockerRunner()
    with runner.start(stack, Limits(cpus=(0,)), port=free_port()) as server:
        server.wait_ready(60)
        group = server.cgroup()
        with load_generator() as load, EngineAPI(LOCAL.label, LOCAL.env()) as api:
            before_engine = container_reading(api, server.container_id)[1]
            before_cgroup = group.cpu_usage_ns()
            load(server.base_url + "/", LOAD_S)
            after_engine = container_reading(api, server.container_id)[1]
            after_cgroup = group.cpu_usage_ns()
        engine_s = (after_engine - before_engine) / 1e9
        cgroup_s = (after_cgroup - before_cgroup) / 1e9
        assert cgroup_s / LOAD_S * 100 > BUSY_FLOOR_PCT, "the load did not keep the server busy"
        assert engine_s == pytest.approx(cgroup_s, rel=0.05)


def test_the_engine_sampler_sees_a_busy_server(stack):
    runner = DockerRunner()
    with runner.start(stack, Limits(cpus=(0,)), port=free_port()) as server:
        server.wait_ready(60)
        group = server.cgroup()
        with load_generator() as load:
            sampler = EngineStatsSampler(LOCAL, server.container_id)
            before_cgroup = group.cpu_usage_ns()
            sampler.start()
            started = time.monotonic()
            load(server.base_url + "/", LOAD_S)
            loaded_s = time.monotonic() - started
            usage = sampler.stop()
            cgroup_pct = (group.cpu_usage_ns() - before_cgroup) / 1e9 / loaded_s * 100
    assert usage.source == "docker-api" and usage.samples >= 3
    assert usage.rss_peak_bytes and usage.rss_peak_bytes > 1024**2
    # What the engine reports over the load is what the kernel charged the
    # container, and never more than the one core it may use.
    assert cgroup_pct > BUSY_FLOOR_PCT, "the load did not keep the server busy"
    assert sampler.active_pct(loaded_s) == pytest.approx(cgroup_pct, abs=15)
    assert sampler.active_pct(loaded_s) <= 105
    assert usage.cpu_peak_pct <= 110
