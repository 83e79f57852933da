"""HTTPS static stacks in containers: the run's certificate mounted, variants chosen by env.

Runs the built serverlab/nginx-static and serverlab/apache-static images the
way the Docker runner does (compose, hardened, read-only root, uid 10001) on
free ports. Skipped without a Docker daemon and Compose v2, or when an image
has not been built (`make build SERVERS=nginx-static,apache-static`).
"""

from __future__ import annotations

import pytest

from loadtest.core import manifest as manifests
from loadtest.core.runner import Limits
from loadtest.host.ports import free_port
from loadtest.runners.conformance import run_conformance
from loadtest.runners.container import image_id
from loadtest.runners.docker import DockerRunner, compose_problem, daemon_problem
from loadtest.testing import STATIC_STACK_SERVER_HEADERS

# Run by the docker-smoke stage, on the images it built (SERVERLAB_DOCKER_TESTS=1).
pytestmark = [pytest.mark.e2e, pytest.mark.docker]


@pytest.mark.parametrize(("stack", "server_header"), STATIC_STACK_SERVER_HEADERS)
def test_static_stack_in_a_container_serves_https_with_its_config(stack, server_header, tmp_path):
    problem = daemon_problem() or compose_problem()
    if problem:
        pytest.skip(problem)
    manifest = manifests.load(stack)
    if not image_id(f"serverlab/{manifest.stack}"):
        pytest.skip(f"serverlab/{manifest.stack} not built")
    runner = DockerRunner()
    runner.tls_folder = tmp_path / "tls"
    server = runner.start(manifest, Limits(cpu_quota=1.0), free_port())
    try:
        server.wait_ready(60)
        assert server.base_url.startswith("https://127.0.0.1:")
        assert server.tls_cert == tmp_path / "tls" / "cert.pem"
        report = run_conformance(manifest, server.base_url, tls_cert=server.tls_cert)
        assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
        # The variant's STATIC_CONFIG reached the container (stock names its version).
        assert report["observed"]["server_header"] == server_header
        assert server.stop() == 0
    finally:
        server.remove()
