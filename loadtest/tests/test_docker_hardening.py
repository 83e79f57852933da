"""Container hardening, checked on every built image and its running container.

Image: runs as a non-root user. Container (as compose starts it): read-only
root filesystem, every capability dropped and none added, no-new-privileges,
an init process, not privileged, host network, nofile ulimit >= 10,000.
Processes (from /proc on the host): non-root uid, no effective, permitted or
bounding capabilities, NoNewPrivs set. Any violation fails and names it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loadtest.core import manifest as manifests
from loadtest.core.runner import Limits
from loadtest.host.ports import free_port
from loadtest.runners.container import docker, image_id
from loadtest.runners.docker import DockerRunner
from loadtest.runners.loadgen import LoadgenClient
from loadtest.tests.docker_support import REQUIRED, listed_stacks, need_docker

# Run by the docker-smoke stage, on the images it built (SERVERLAB_DOCKER_TESTS=1).
pytestmark = [pytest.mark.e2e, pytest.mark.docker]

MIN_NOFILE = 10_000


def stacks_to_check() -> list[str]:
    listed = listed_stacks()
    return listed or [n for n in manifests.stack_names() if image_id(f"serverlab/{n}")]


def image_violations(image: str) -> list[str]:
    config = json.loads(docker("image", "inspect", image).stdout)[0]["Config"]
    user = (config.get("User") or "").strip()
    name = user.split(":")[0]
    if name in ("", "root", "0"):
        return [f"{image}: runs as root (USER {user or 'unset'}); add a non-root USER"]
    return []


def container_violations(label: str, container: dict) -> list[str]:
    host = container["HostConfig"]
    problems = []
    if not host.get("ReadonlyRootfs"):
        problems.append("root filesystem is writable (read_only)")
    if "ALL" not in [c.upper() for c in host.get("CapDrop") or []]:
        problems.append(f"capabilities not all dropped (CapDrop {host.get('CapDrop')})")
    if host.get("CapAdd"):
        problems.append(f"capabilities added: {host['CapAdd']}")
    if not any(o.startswith("no-new-privileges") for o in host.get("SecurityOpt") or []):
        problems.append("no-new-privileges not set")
    if not host.get("Init"):
        problems.append("no init process (init: true)")
    if host.get("Privileged"):
        problems.append("privileged")
    if host.get("NetworkMode") != "host":
        problems.append(f"network mode {host.get('NetworkMode')}, expected host")
    nofile = [u for u in host.get("Ulimits") or [] if u.get("Name") == "nofile"]
    if not nofile or min(nofile[0]["Soft"], nofile[0]["Hard"]) < MIN_NOFILE:
        problems.append(f"nofile ulimit below {MIN_NOFILE}: {nofile}")
    return [f"{label}: {p}" for p in problems]


def process_violations(label: str, pids: list[int]) -> list[str]:
    problems = []
    if not pids:
        return [f"{label}: no processes found"]
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # exited meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        name = fields.get("Name", "?").strip()
        uids = fields.get("Uid", "").split()
        if "0" in uids:
            problems.append(f"{label}: process {pid} ({name}) runs with uid 0 ({' '.join(uids)})")
        for key in ("CapEff", "CapPrm", "CapBnd"):
            if int(fields.get(key, "0").strip(), 16):
                problems.append(f"{label}: process {pid} ({name}) has {key} {fields[key].strip()}")
        if fields.get("NoNewPrivs", "").strip() != "1":
            problems.append(f"{label}: process {pid} ({name}) lacks NoNewPrivs")
    return problems


@pytest.fixture(scope="module")
def stacks():
    need_docker()
    names = stacks_to_check()
    if not names:
        if REQUIRED:
            pytest.fail("no stack image built")
        pytest.skip("no stack image built")
    return names


def test_stack_images_and_containers_are_hardened(stacks):
    violations = []
    runner = DockerRunner()
    for name in stacks:
        manifest = manifests.load(name)
        image = f"serverlab/{name}"
        if not image_id(image):
            violations.append(f"{image}: not built")
            continue
        violations += image_violations(image)
        server = runner.start(manifest, Limits(), free_port())
        with server:
            server.wait_ready(60)
            violations += container_violations(name, server.inspect())
            violations += process_violations(name, server.pids())
            # The root filesystem really refuses writes (the server's own view).
            state = server.inspect()["State"]
            root = Path(f"/proc/{state['Pid']}/root")
            mounts = Path(f"/proc/{state['Pid']}/mounts").read_text().splitlines()
            root_mount = next((m.split() for m in mounts if m.split()[1] == "/"), None)
            if root_mount is None or "ro" not in root_mount[3].split(","):
                violations.append(f"{name}: / is not mounted read-only ({root_mount})")
            assert root.exists()
            # Killed, not stopped: a clean stop is checked by `make check`;
            # here only the hardening is under test.
    assert not violations, "hardening violations:\n  " + "\n  ".join(violations)


def test_loadgen_image_and_container_are_hardened():
    need_docker()
    if not image_id("serverlab/loadgen"):
        if REQUIRED:
            pytest.fail("serverlab/loadgen not built")
        pytest.skip("serverlab/loadgen not built")
    violations = image_violations("serverlab/loadgen")
    with LoadgenClient() as client:
        violations += container_violations("loadgen", client.inspect())
        violations += process_violations("loadgen", client.pids())
        for tool in ("wrk", "ab", "oha"):
            if not client.which(tool):
                violations.append(f"loadgen: {tool} missing")
    assert not violations, "hardening violations:\n  " + "\n  ".join(violations)


def test_the_checks_catch_a_violation():
    """The checks are not vacuous: a default `docker run` container fails them."""
    bad = {
        "HostConfig": {
            "ReadonlyRootfs": False,
            "CapDrop": None,
            "CapAdd": ["NET_ADMIN"],
            "SecurityOpt": None,
            "Init": None,
            "Privileged": True,
            "NetworkMode": "bridge",
            "Ulimits": None,
        }
    }
    found = container_violations("x", bad)
    assert len(found) == 8, found
    if os.getuid() == 0:  # this test process itself is a root process with capabilities
        assert any("uid 0" in p for p in process_violations("x", [os.getpid()]))
