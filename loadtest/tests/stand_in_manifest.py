"""A manifest for a throw-away Python stand-in stack, as the runner tests build them,
and a bench run over such stand-ins in a child process; `Stacks`, a servers folder of
stand-ins whose manifests a bench in a child process reads (SERVERLAB_SERVERS_DIR)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil

from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.host.ports import free_port, port_in_use

# A bench in a child process whose stack list and manifest loader see only the
# stand-ins given as JSON in STAND_IN_MANIFESTS; PRELUDE gives `bench_args`.
PRELUDE = """
import argparse
from loadtest.commands import bench as _bench
def bench_args(argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    _bench.register(sub)
    return parser.parse_args(["bench", *argv])
"""
BENCH_OVER_STAND_INS = """
import json, os, sys
from pathlib import Path
from loadtest.bench import run as bench
from loadtest.commands import bench as bench_command
from loadtest.core.manifest import Manifest
stand_ins = {}
for fields in json.loads(os.environ["STAND_IN_MANIFESTS"]):
    stand_ins[fields["name"]] = Manifest(**{**fields, "folder": Path(fields["folder"]),
                                            "repo_root": Path(fields["repo_root"])})
bench.Bench.stacks = lambda self: list(stand_ins)
bench.load = lambda name: stand_ins[name]
sys.exit(bench_command.cmd_bench(bench_args(sys.argv[1:])))
"""


def python_stand_in(
    folder: Path,
    run: str,
    build: str = "true",
    display_name: str | None = None,
    requires: tuple[str, ...] = ("python3",),
    kind: str = "threads",
) -> Manifest:
    """`folder` holds the stand-in's files; `run` starts it (a manifest's native run)."""
    return Manifest(
        name=folder.name,
        folder=folder,
        display_name=display_name or folder.name,
        language="Python",
        framework="http.server",
        framework_version="3.11",
        runtime="CPython",
        runtime_version="3.11",
        port=free_port(),
        concurrency={"kind": kind, "default_workers": "cpus", "workers": "1"},
        native={
            "requires": list(requires),
            "apt": [],
            "version": "python3 -V",
            "build": build,
            "run": run,
        },
        docker={"dockerfile": "Dockerfile"},
        tuning=[],
    )


def server_py_stand_in(parent: Path, prefix: str, source: str, run: str, **fields) -> Manifest:
    """A stand-in whose folder, new under `parent`, holds `source` as server.py; `run`
    starts it and `fields` are python_stand_in's. The folder's name is unique, since the
    build folder (.build/<name>) is shared by every test on the machine."""
    folder = parent / f"{prefix}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "server.py").write_text(source)
    return python_stand_in(folder, run, **fields)


def bench_over(
    manifests: list[Manifest], results: Path, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess:
    """`make bench` over these stand-ins (smoke profile, native, no warm-up) into `results`;
    `args` are more of its command-line knobs (--front self, --tool h2load, ...)."""
    command = [
        sys.executable, "-c", PRELUDE + BENCH_OVER_STAND_INS, "--results-dir", str(results),
        "--profile", "smoke", "--warmup", "0", "--priority", "0", *args,
    ]  # fmt: skip
    fields = [{**dataclasses.asdict(m), "folder": str(m.folder), "repo_root": str(m.repo_root)}
              for m in manifests]  # fmt: skip
    env = dict(
        os.environ, SEED="", DURATION="", PROFILE="", FRONT="", TOOL="", TLS_TOOL="",
        RUNNER="native", STAND_IN_MANIFESTS=json.dumps(fields),
    )  # fmt: skip
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=env,
        check=False,
    )  # fmt: skip


# The reference server, started the way a stack's `run` starts its server; the
# shell's pid (the process group of the stack) goes to $BUILD_DIR/pgid.
REFERENCE_RUN = (
    'echo $$ > "$BUILD_DIR/pgid"; cd "$REPO_ROOT"; '
    'exec {python} -m contracts.tests.reference_server "{display_name}"'
)


class Stacks:
    """A folder of stand-in stacks; each gets a unique name, port and display name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.token = uuid.uuid4().hex[:6]
        self.ports: dict[str, int] = {}
        self.display: dict[str, str] = {}

    def add(self, role: str, build: str = "true", run: str = REFERENCE_RUN, files=None,
            warmup_s: float = 0.0, dependencies: str | None = None) -> str:  # fmt: skip
        name = f"fault-{role}-{self.token}"
        display_name = f"Fault {role} {self.token}"
        port = free_port()
        folder = self.root / name
        folder.mkdir(parents=True)
        for file_name, text in (files or {}).items():
            (folder / file_name).write_text(text.format(name=name))
        run = run.format(python=sys.executable, display_name=display_name)
        (folder / "server.toml").write_text(
            textwrap.dedent(
                f"""\
                display_name = {json.dumps(display_name)}
                language = "Python"
                framework = "http.server"
                framework_version = "3.11"
                runtime = "CPython"
                runtime_version = "3.11"
                port = {port}
                warmup_s = {warmup_s}

                [concurrency]
                kind = "threads"
                default_workers = "cpus"
                workers = "one thread per connection (the reference server)"

                [native]
                requires = ["bash"]
                apt = []
                version = "python3 --version"
                build = {json.dumps(build)}
                run = {json.dumps(run)}
                {f"dependencies = {json.dumps(dependencies)}" if dependencies else ""}

                [docker]
                dockerfile = "Dockerfile"

                [[tuning]]
                setting = "none"
                why = "a stand-in for the harness's fault tests"
                """
            )
        )
        self.ports[name] = port
        self.display[name] = display_name
        return name

    def build_dir(self, name: str) -> Path:
        return REPO_ROOT / ".build" / name

    def pgid(self, name: str, timeout: float = 30) -> int:
        path = self.build_dir(name) / "pgid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.is_file() and path.read_text().strip():
                return int(path.read_text())
            time.sleep(0.05)
        raise AssertionError(f"{name} never started")

    def leftovers(self) -> list[str]:
        """Processes of these stacks still running, or their ports taken: the tests allow none."""
        found = [f"port {port} in use" for port in self.ports.values() if port_in_use(port)]
        for process in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(process.info["cmdline"] or [])
            if self.token in cmdline:
                found.append(f"{process.info['pid']}: {cmdline}")
        return found

    def clean(self) -> None:
        for process in psutil.process_iter(["cmdline"]):
            if self.token in " ".join(process.info["cmdline"] or []):
                with contextlib.suppress(psutil.Error):
                    process.kill()
        for name in self.ports:
            shutil.rmtree(self.build_dir(name), ignore_errors=True)
