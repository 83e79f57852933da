"""A TLS front (FRONT=nginx|apache) before a stack in a container.

A Docker test: `make docker-smoke` runs it (SERVERLAB_DOCKER_TESTS=1) on the
images it built, not the end-to-end stage, whose two busy workers are no
place for a container under a CPU quota.
"""

from __future__ import annotations

import pytest

from contracts.conformance import run_checks
from loadtest.core.runner import Limits
from loadtest.host.ports import free_port
from loadtest.host.process import group_pids
from loadtest.runners import front
from loadtest.runners.docker import DockerRunner
from loadtest.tests.test_docker_limits import built_stack, need_docker
from loadtest.tests.test_front import KINDS, folder  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.docker]


@pytest.mark.parametrize("kind", KINDS)
def test_front_before_a_docker_stack_with_a_cpu_quota(kind, folder):
    # A container has no host cgroup to share: the front gets one of its own
    # with the same limits, and the pair passes the contract over TLS.
    need_docker()
    stack = built_stack()
    runner = front.wrap(DockerRunner(), kind, folder / "docker-fronts", folder / "tls")
    server = runner.start(stack, Limits(cpus=(0,), cpu_quota=0.5), port=free_port())
    try:
        server.wait_ready(60)
        assert server.stack.base_url.startswith("http://127.0.0.1:")
        own = server._own_cgroup
        assert own is not None and own.cpu_quota == 0.5 and own.dirs
        procs = {int(p) for d in own.dirs for p in (d / "cgroup.procs").read_text().split()}
        assert set(server.front.pids()) <= procs
        report = run_checks(server.base_url, stack.display_name, tls_cert=server.tls_cert)
        assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
        server.stop()
        assert group_pids(server.front.process.pid) == []
    finally:
        server.kill()
