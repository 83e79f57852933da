"""`make check` with --jobs: stacks checked side by side, never two builds of one project.

The JVM stacks build from one Maven reactor (servers/_shared/java), whose
build output two builds at once would both write; a stack's variants share
its folder. Those are checked one after the other, everything else in any
order, and the table keeps the order the stacks were named in.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from loadtest.commands.stacks import first_runnable
from loadtest.core.families import build_group
from loadtest.core.manifest import REPO_ROOT, load_all, stack_ids


def test_stacks_of_one_project_or_one_folder_share_a_build_group():
    groups = {m.name: build_group(m.folder) for m in load_all(stack_ids())}
    assert groups["spring-mvc"] == groups["spring-webflux"] == "maven"
    assert groups["nginx-static"] == groups["nginx-static@stock"] == "nginx-static"
    if "aspnetcore" in groups:
        assert groups["aspnetcore"] == groups["aspnetcore-mvc"] == "dotnet"
    free = [groups[name] for name in ("gin", "go-nethttp", "sanic", "uvloop", "axum", "fastify")]
    assert len(set(free)) == len(free), free


def test_jobs_below_one_is_refused():
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "check", "--servers", "gin", "--jobs", "0"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "--jobs must be 1 or more" in result.stderr


@pytest.mark.e2e
def test_two_at_a_time_checks_every_stack_and_keeps_their_order():
    # go-nethttp, or bjoern where this machine has no Go: a stack of its own build group.
    named = [
        first_runnable(["go-nethttp", "bjoern"]),
        "nginx-static",
        "nginx-static@stock",
        "uvloop",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "check", "--servers", ",".join(named), "--jobs", "2"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SERVERLAB_PORTS": "free"},  # beside other tests' stacks
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    table = result.stdout.split("stack ", 1)[1].splitlines()[2:]
    rows = [line.split()[:2] for line in table if line.strip()][: len(named)]
    assert rows == [[name, "PASSED"] for name in named], table
