"""The loadgen container: where a Docker run's load tools run (docker/loadgen/Dockerfile).

One per client host (this machine's engine, or CLIENT_HOSTS', runners/engine.py),
pinned to the client cores by its cpuset, on the host network. It is an executor
of loadtest/measure/tools/base.py: every tool runs in it with `docker exec`, its
raw output comes back here, and the tool's CPU time is the container's cgroup
CPU time over the run (read here, or inside the container on another host).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import time
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.core.runner import Limits
from loadtest.host.process import pinned
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import ToolError, raw_paths, read_raw
from loadtest.runners import compose as compose_file
from loadtest.runners.container import Container, limits_env
from loadtest.runners.engine import LOCAL, Engine

# Where the loadgen image keeps the harness (docker/loadgen/Dockerfile).
LOADGEN_HARNESS = "/opt/serverlab"
# The load tools the loadgen image has (docker/loadgen/Dockerfile); h2load
# runs on the host only.
LOADGEN_TOOLS = ("wrk", "ab", "oha")


# The tool's own wall time, taken inside the container: `docker exec` adds its
# own latency around it (a fraction of a second over SSH), and the tool's CPU
# share and oha's after-load time are judged against the tool's time alone.
WALL_MARKER = "SERVERLAB_TOOL_WALL_NS "
TIMED = (
    "sh", "-c",
    f's=$(date +%s%N); "$@"; c=$?; echo "{WALL_MARKER}$(($(date +%s%N) - s))" >&2; exit $c',
    "serverlab-timed",
)  # fmt: skip


def take_tool_wall(err_path: Path) -> float | None:
    """The tool's wall seconds from the marker line, which is removed from its stderr."""
    text = err_path.read_text(errors="replace")
    lines = text.splitlines(keepends=True)
    marked = [line for line in lines if line.startswith(WALL_MARKER)]
    if not marked:
        return None
    err_path.write_text("".join(line for line in lines if not line.startswith(WALL_MARKER)))
    return int(marked[-1][len(WALL_MARKER) :].strip()) / 1e9


class LoadgenClient(Container):
    """The loadgen container; load tools run in it with `docker exec`.

    An executor of loadtest.measure.tools.base (`Tool.run(spec, raw, executor=client)`):
    `run_tool` has the signature and result of loadtest.measure.tools.base.run_tool
    (exit code, stdout, stderr, tool CPU s, wall s); raw outputs are written
    on the host, at the same paths as natively.
    """

    where = "loadgen-container"

    def __init__(self, client_cpus: tuple[int, ...] | None = None, engine: Engine = LOCAL) -> None:
        self.service = "loadgen"
        self.engine = engine
        self.client_cpus = client_cpus
        self._present: dict[str, bool] = {}
        self._up(limits_env(Limits(), client_cpus), "loadgen")
        deadline = time.monotonic() + 30
        while not self.is_alive():
            if time.monotonic() > deadline:
                raise StepError("loadgen", "start", "container did not start", self.output_tail())
            time.sleep(0.2)

    def translate(self, argument: str) -> str:
        """Host paths inside the repository -> the harness copy in the image."""
        root = str(REPO_ROOT)
        if argument == root or argument.startswith(root + "/"):
            return LOADGEN_HARNESS + argument[len(root) :]
        return argument

    def which(self, binary: str) -> bool:
        if binary not in self._present:
            probe = f"command -v {shlex.quote(binary)}"
            result = self.engine.docker(
                "exec", self.container_id, "sh", "-c", probe, check=False, timeout=30
            )
            self._present[binary] = result.returncode == 0
        return self._present[binary]

    def binary(self, tool) -> str:
        """The tool's program name in the image (its own PATH), checked once."""

        if not self.which(tool.binary):
            raise ToolError(
                f"{tool.name}: {tool.binary} is not in the loadgen image "
                "(docker/loadgen/Dockerfile); RUNNER=native runs it on the host"
            )
        return tool.binary

    def tool_versions(self) -> dict:
        """Versions of the load tools inside the image, for the provenance."""
        versions = {}
        for name in LOADGEN_TOOLS:
            try:
                versions[name] = get_tool(name).version(self)
            except ToolError:
                versions[name] = "missing"
        return versions

    def output(self, command: list[str]) -> str:
        result = self.engine.docker("exec", self.container_id, *command, check=False, timeout=30)
        return result.stdout + result.stderr

    def provenance(self) -> dict:
        """Where the load came from: image, container cpuset, tool versions."""
        info = {
            "where": self.where,
            "host": self.engine.label,
            "image": compose_file.image_name("loadgen"),
            "image_id": self.engine.image_id(compose_file.image_name("loadgen")),
            "tools": self.tool_versions(),
            "network": "host",
        }
        with contextlib.suppress(StepError, OSError, KeyError, IndexError):
            info["cpuset"] = self.cpuset()
        return info

    def argv(self, command: list[str], cpus: tuple[int, ...] | None = None) -> list[str]:
        """The command as it runs in the container: repository paths mapped, pinned."""
        argv = [os.path.basename(command[0]), *(self.translate(a) for a in command[1:])]
        return pinned(argv, cpus)

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        # `priority` (a higher scheduling priority for the tool) is accepted for
        # the signature but not applied: the container has no CAP_SYS_NICE.
        del priority
        # The deadline is enforced inside the container: killing `docker exec`
        # would leave the tool running there.
        argv = ["timeout", "--signal=KILL", f"{max(1, int(timeout_s))}", *self.argv(command, cpus)]
        out_path, err_path = raw_paths(raw_prefix)
        cpu_before = self.cpu_usage_ns()
        started = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.run(
                ["docker", "exec", self.container_id, *TIMED, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                timeout=timeout_s + 60,
                env=self.engine.env(),
            )
        wall = time.monotonic() - started
        cpu = (self.cpu_usage_ns() - cpu_before) / 1e9
        code = process.returncode
        if code == 137:  # timeout --signal=KILL: report as the native runner does
            code = -9
        wall = take_tool_wall(err_path) or wall
        stdout, stderr = read_raw(out_path, err_path)
        return code, stdout, stderr, cpu, wall

    def cpu_usage_ns(self) -> int:
        """The container's CPU time so far: its cgroup, read here or, elsewhere, inside it."""
        if not self.engine.remote:
            return self.cgroup().cpu_usage_ns() or 0
        return container_cpu_ns(self.output(["cat", *CGROUP_CPU_FILES]))

    def cpuset(self) -> str:
        if not self.engine.remote:
            return self.cgroup().limits()["cpuset"]
        return self.output(["cat", *CGROUP_CPUSET_FILES]).split()[0]

    def close(self) -> None:
        self.remove()

    def __enter__(self) -> LoadgenClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# Inside a container, its own cgroup is the root of /sys/fs/cgroup (v1: per
# controller; v2: one tree). `cat` prints the files that exist and skips the rest.
CGROUP_CPU_FILES = ("/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu.stat")
CGROUP_CPUSET_FILES = ("/sys/fs/cgroup/cpuset/cpuset.cpus", "/sys/fs/cgroup/cpuset.cpus.effective")


def container_cpu_ns(text: str) -> int:
    """CPU ns from `cat` of CGROUP_CPU_FILES: v1's one number or v2's usage_usec line."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 1 and fields[0].isdigit():
            return int(fields[0])
        if len(fields) == 2 and fields[0] == "usage_usec":
            return int(fields[1]) * 1000
    raise StepError("loadgen", "sample", f"no CPU time in the container's cgroup: {text[:200]}")
