"""The common record every load tool's output is parsed into, and the runner.

Each tool module builds a command line from a `LoadSpec` and parses the
tool's raw output into a `LoadResult`. Running is shared: the tool is pinned
to the client cores with taskset, its raw stdout/stderr are kept, and its
CPU time is taken from the kernel's rusage of the exited process (wait4), so
the client-bound flag does not depend on sampling.

Where the tool runs is an `Executor`: `HOST` (this machine, the default) or
another one with the same interface, such as the Docker runner's loadgen
container (loadtest/docker.py `LoadgenClient`). The adapters are the same
whichever executor runs them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from loadtest.core.verdict import CLIENT_BOUND_SHARE
from loadtest.host.priority import raise_own_priority
from loadtest.host.process import pinned

# Latency percentiles every tool reports where it can (keys are percent).
PERCENTILES = (50, 75, 90, 95, 99, 99.9)
ERROR_KINDS = ("connect", "read", "write", "timeout", "non2xx")


class ToolError(Exception):
    """The tool could not be run at all (missing binary, bad arguments)."""


@dataclass(frozen=True)
class LoadSpec:
    """What to load and how; each tool uses the fields it understands."""

    url: str
    connections: int
    duration: float = 10.0  # seconds (wrk, oha)
    timeout: int = 2  # seconds per request; whole seconds (wrk's --timeout)
    threads: int = 1  # wrk threads; clamped to connections
    rate: float | None = None  # requests/s for open loop (oha)
    requests: int | None = None  # total requests (ab)
    keepalive: bool = True  # ab -k; wrk and oha always keep alive
    client_cpus: tuple[int, ...] | None = None  # taskset for the tool
    priority: int = 0  # nice value for the tool (see loadtest/priority.py); 0 = unchanged
    # Request headers of the scenario, e.g. (("Accept-Encoding", "br, gzip"),).
    headers: tuple[tuple[str, str], ...] = ()
    http1: bool = False  # h2load: force HTTP/1.1 (--h1); the other tools speak only HTTP/1.1
    streams: int = 1  # h2load -m: concurrent streams per connection (HTTP/1.1: pipelining)
    # The run's self-signed certificate for https URLs. oha verifies it (--cacert);
    # wrk, ab and h2load do not verify certificates but do the full handshake.
    ca_cert: str | None = None

    def header_lines(self) -> list[str]:
        return [f"{name}: {value}" for name, value in self.headers]


def latency_key(percent: float) -> str:
    """50 -> 'p50', 99.9 -> 'p99.9'."""
    return f"p{percent:g}"


@dataclass
class LoadResult:
    """One measurement as reported by one tool; times in milliseconds."""

    tool: str
    requests: int = 0  # completed responses (any status)
    duration_s: float = 0.0
    rps: float = 0.0
    bytes_total: int = 0
    bytes_per_s: float = 0.0
    latency_ms: dict = field(default_factory=dict)  # mean, stdev, min, max, p50...p99.9
    # Percentile curve for CDF charts: [[percent, ms], ...] ascending.
    latency_curve: list = field(default_factory=list)
    errors: dict = field(default_factory=lambda: dict.fromkeys(ERROR_KINDS, 0))
    status_counts: dict = field(default_factory=dict)  # "200": n, where the tool tells
    # Tool-specific notes (e.g. "latency corrected for coordinated omission").
    notes: list = field(default_factory=list)
    ok: bool = True  # the tool produced a parsable report
    problem: str = ""  # why not, or what went wrong (e.g. connection refused)
    command: list = field(default_factory=list)
    exit_code: int | None = None
    tool_cpu_s: float = 0.0  # user + system CPU seconds of the tool process
    wall_s: float = 0.0
    # Tool-specific figures that have no common field (h2load: protocol, time to
    # connect and to the first byte per connection, header compression).
    details: dict = field(default_factory=dict)

    @property
    def errors_total(self) -> int:
        return sum(self.errors.values())

    def to_dict(self) -> dict:
        data = asdict(self)
        data["errors_total"] = self.errors_total
        return data


def tool_cpu_share(cpu_seconds: float, wall_seconds: float, cores: int) -> float:
    """Share (0..1) of its available cores the tool kept busy."""
    if wall_seconds <= 0 or cores <= 0:
        return 0.0
    return cpu_seconds / (wall_seconds * cores)


def client_bound(cpu_seconds: float, wall_seconds: float, cores: int) -> bool:
    """True when the load tool used >= 90% of its cores: the client may be the limit."""
    return tool_cpu_share(cpu_seconds, wall_seconds, cores) >= CLIENT_BOUND_SHARE


def run_tool(
    command: list[str],
    raw_prefix: Path,
    timeout_s: float,
    cpus: tuple[int, ...] | None = None,
    priority: int = 0,
) -> tuple[int, str, str, float, float]:
    """Run a load tool to completion; return (exit code, stdout, stderr, cpu s, wall s).

    Raw outputs go to `<raw_prefix>.stdout` / `.stderr` (the stderr file is
    removed when empty). The child is reaped with wait4 so its own CPU time is
    known exactly (taskset execs the tool: the child *is* the tool). A tool
    still running after `timeout_s` is killed (exit code -9).
    """
    if not shutil.which(command[0]):
        raise ToolError(f"{command[0]} not found on PATH")
    out_path, err_path = raw_paths(raw_prefix)
    started = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(
            pinned(command, cpus),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # Ctrl-C reaches the harness, which stops the tool
            # Runs after setsid: the tool's own session (autogroup) gets the priority.
            preexec_fn=(lambda: raise_own_priority(priority)) if priority else None,
        )
    try:
        status, usage = _wait_with_rusage(process, started + timeout_s)
    except BaseException:  # KeyboardInterrupt: never leave a load tool running
        _kill_group(process.pid)
        _wait_with_rusage(process, time.monotonic() + 5)
        raise
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = read_raw(out_path, err_path)
    cpu = usage.ru_utime + usage.ru_stime if usage else 0.0
    return process.returncode, stdout, stderr, cpu, wall


def raw_paths(raw_prefix: Path) -> tuple[Path, Path]:
    """Where a tool's raw stdout and stderr go: `<raw_prefix>.stdout` / `.stderr`."""
    raw_prefix.parent.mkdir(parents=True, exist_ok=True)
    return (
        raw_prefix.with_name(raw_prefix.name + ".stdout"),
        raw_prefix.with_name(raw_prefix.name + ".stderr"),
    )


def read_raw(out_path: Path, err_path: Path) -> tuple[str, str]:
    """The tool's stdout and stderr; an empty stderr file is removed."""
    stderr = err_path.read_text(errors="replace")
    if not stderr:
        err_path.unlink()
    return out_path.read_text(errors="replace"), stderr


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_with_rusage(process: subprocess.Popen, deadline: float):
    """Reap the child with wait4 (keeps its rusage); kill it at the deadline."""
    killed = False
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            return status, usage
        if not killed and time.monotonic() > deadline:
            _kill_group(process.pid)
            killed = True
        time.sleep(0.02)


class Executor(Protocol):
    """Where a load tool runs: this host, or a container with the same interface."""

    where: str  # recorded with every measurement: "host", "loadgen-container"

    def binary(self, tool: Tool) -> str:
        """The tool's program as this executor starts it; ToolError when it is missing."""

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        """As the function `run_tool` above, whose signature and result it has: raw output
        at `raw_prefix` on this host, the tool's CPU s, wall s."""

    def output(self, command: list[str]) -> str:
        """stdout and stderr of a short command (a version query) run where the tools run."""

    def argv(self, command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
        """The command line as it really runs there (recorded with the result)."""


class HostExecutor:
    """Load tools as child processes of the harness, pinned with taskset."""

    where = "host"

    def binary(self, tool: Tool) -> str:
        path = tool.path()
        if path is None:
            raise ToolError(f"{tool.name}: {tool.binary} not found (see scripts/bootstrap.sh)")
        return path

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        return run_tool(command, raw_prefix, timeout_s, cpus, priority)

    def output(self, command: list[str]) -> str:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30)
        return result.stdout + result.stderr

    def argv(self, command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
        return pinned(command, cpus)


HOST = HostExecutor()


class Tool:
    """A load tool adapter: command line in, LoadResult out."""

    name = ""
    binary = ""
    version_flag = "--version"
    # Decimals a latency percentile of this tool carries, as the reports print it.
    latency_decimals = 2

    def path(self) -> str | None:
        return shutil.which(self.binary)

    def available(self) -> bool:
        return self.path() is not None

    def version(self, executor: Executor = HOST) -> str:
        """The tool's version line, from the program that `executor` runs."""
        return self.version_text(executor.output([executor.binary(self), self.version_flag]))

    def version_text(self, output: str) -> str:
        return first_line(output)

    def command(self, spec: LoadSpec) -> list[str]:
        raise NotImplementedError

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        raise NotImplementedError

    def usable_cores(self, spec: LoadSpec) -> int:
        """How many of the client cores the tool can keep busy (for client-bound)."""
        return len(spec.client_cpus) if spec.client_cpus else os.cpu_count() or 1

    def deadline(self, spec: LoadSpec) -> float:
        """Wall-clock seconds after which the tool is killed."""
        return spec.duration + spec.timeout + 30

    def run(self, spec: LoadSpec, raw_prefix: Path, executor: Executor = HOST) -> LoadResult:
        """Run the tool where `executor` says (this host by default) and parse its output."""
        command = self.command(spec)
        code, out, err, cpu, wall = self.execute(spec, command, raw_prefix, executor)
        return self.finish(self.parse(out, err, code), spec, command, code, cpu, wall, executor)

    def execute(
        self, spec: LoadSpec, command: list[str], raw_prefix: Path, executor: Executor = HOST
    ):
        command[0] = executor.binary(self)
        return executor.run_tool(
            command, raw_prefix, self.deadline(spec), spec.client_cpus, spec.priority
        )

    def finish(
        self, result: LoadResult, spec: LoadSpec, command, code, cpu, wall, executor=HOST
    ) -> LoadResult:
        result.command = executor.argv(command, spec.client_cpus)
        result.exit_code = code
        result.tool_cpu_s = cpu
        result.wall_s = wall
        return result


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
