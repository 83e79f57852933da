"""What the Docker tests share: skip where Docker is missing, fail where CI requires it.

`make docker-smoke` runs these tests with SERVERLAB_DOCKER_TESTS=1 and the
stacks whose images it built in SERVERLAB_DOCKER_STACKS; a plain test run
skips them (loudly) on a machine without a Docker daemon.
"""

from __future__ import annotations

import os

import pytest

from loadtest.runners.container import image_id
from loadtest.runners.docker import LOADGEN_SKIPPED_ENV, compose_problem, daemon_problem

REQUIRED = os.environ.get("SERVERLAB_DOCKER_TESTS") == "1"


def need(problem: str | None) -> None:
    """Skip (or, under SERVERLAB_DOCKER_TESTS=1, fail) the test with `problem`."""
    if problem:
        if REQUIRED:
            pytest.fail(problem)
        pytest.skip(problem)


def need_docker() -> None:
    need(daemon_problem() or compose_problem())


def listed_stacks() -> list[str]:
    """The stacks make docker-smoke built images of (empty outside it)."""
    return [s for s in os.environ.get("SERVERLAB_DOCKER_STACKS", "").split(",") if s]


def loadgen_skipped() -> str | None:
    """Why `make docker-smoke` built no loadgen image on this machine (no cargo to
    build its oha), or None."""
    return os.environ.get(LOADGEN_SKIPPED_ENV) or None


def need_loadgen() -> None:
    """The loadgen image. Where this machine cannot build it the test is a named
    skip, also under SERVERLAB_DOCKER_TESTS=1: a missing toolchain is not a failure."""
    if reason := loadgen_skipped():
        pytest.skip(reason)
    built = image_id("serverlab/loadgen")
    need(None if built else "serverlab/loadgen not built (make docker-smoke builds it)")
