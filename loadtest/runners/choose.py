"""Which runner runs the stacks: RUNNER=auto|native|docker, and the runner itself."""

from __future__ import annotations

from loadtest.core.manifest import Manifest
from loadtest.core.runner import RUNNERS, Runner, RunnerUnavailable
from loadtest.runners.docker import DockerRunner, compose_problem, daemon_problem, offline_problem
from loadtest.runners.engine import Engine
from loadtest.runners.loadgen import LOADGEN_TOOLS
from loadtest.runners.native import NativeRunner


def docker_problem(stacks: list[Manifest] | None = None) -> str | None:
    """None when the Docker runner can work here, else why not: the registries that
    `stacks` fetch from (without stacks: every registry) reached, a daemon that
    answers, Compose v2."""
    return offline_problem(stacks) or daemon_problem() or compose_problem()


def choose_runner(
    requested: str, probe=docker_problem, tools: list[str] | tuple[str, ...] = ()
) -> tuple[str, str]:
    """The runner for RUNNER=auto|native|docker and why: ("docker"|"native", reason).

    auto: Docker when a daemon answers and Compose v2 is present, else native;
    also native when one of the load `tools` is not in the loadgen image (a
    run the host can do is not failed for that). A forced RUNNER=docker
    without Docker raises RunnerUnavailable with the reason. `probe` returns
    None when Docker is usable, else what is missing.
    """
    if requested not in RUNNERS:
        raise RunnerUnavailable(f"RUNNER={requested}: use {', '.join(RUNNERS)}")
    if requested == "native":
        return "native", "RUNNER=native"
    host_only = [tool for tool in tools if tool not in LOADGEN_TOOLS]
    if requested == "auto" and host_only:
        return "native", f"{', '.join(host_only)} runs on the host only (not in the loadgen image)"
    problem = probe()
    if requested == "docker":
        if problem:
            raise RunnerUnavailable(f"RUNNER=docker, but {problem}")
        return "docker", "RUNNER=docker"
    if problem:
        return "native", f"{problem}; RUNNER=docker to insist"
    return "docker", "a Docker daemon answers and Compose v2 is present; RUNNER=native to avoid it"


def get_runner(name: str, server_host: str = "") -> Runner:
    """The runner; the Docker runner's stacks run on SERVER_HOST's engine ("" = here)."""
    if name == "native":
        if server_host:
            raise ValueError("SERVER_HOST runs stacks through a Docker engine: RUNNER=docker")
        return NativeRunner()
    if name == "docker":
        return DockerRunner(engine=Engine.named(server_host))
    raise ValueError(f"unknown runner {name!r}: use native or docker")
