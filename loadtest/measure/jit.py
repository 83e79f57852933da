"""The JIT compiler's own account of itself: how many methods it has compiled so far.

A stack whose manifest declares a JIT (`jit = "jvm"`, `"dotnet"`, `"pypy"` or
`"v8"`) is warm when its compiler has gone quiet under the case's load, not
when two throughput windows agree: a tiered JIT on one core climbs slowly
enough that successive windows agree while it is still compiling (Spring MVC's
first 80 s of load: 1.7k, 3.7k ... 9.3k req/s, then 15-18k). The warm-up
(bench/warmup.py, measure/steady.py) reads a `CompilerSignal` after every
window; thresholds are in core/verdict.py (JIT_*).

What each runtime exposes to a reader outside the process, without changing
what it runs:

- the JVM (HotSpot): its perf-data file, /tmp/hsperfdata_<user>/<pid>, which
  it updates in place (the counters jstat reads): `sun.ci.totalCompiles` and
  `java.ci.totalTime` (in `sun.os.hrt.frequency` ticks). Read through
  /proc/<pid>/root, so a JVM in a container is read the same way.
- .NET: the System.Runtime meter's `dotnet.jit.compiled_methods` and
  `dotnet.jit.compilation.time` (so far), streamed by Microsoft's
  dotnet-counters (`monitor`, one refresh a second) over the runtime's
  diagnostics port.

Both are cumulative: a count of compiled methods and the seconds spent
compiling. The time is the signal the warm-up judges (a C2 thread busy with
one large method for a whole second compiles one method in it); the count is
recorded beside it.
- PyPy and V8 (Node.js) expose their compilations only through flags that
  change the run (PYPYLOG, --trace-opt): no signal is read, the record says
  so, and the end-of-instance re-check (DRIFTED) is their warm-up test.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from loadtest.core.manifest import REPO_ROOT
from loadtest.core.verdict import JIT_QUIET_METHODS, JIT_QUIET_MS, JIT_QUIET_WINDOWS

# The dotnet-counters release read here, installed once per machine by `dotnet tool`.
DOTNET_COUNTERS_VERSION = "10.0.750501"
DOTNET_COUNTERS_DIR = REPO_ROOT / ".build" / "tools" / "dotnet-counters"
HSPERF_MAGIC = 0xCAFEC0C0
HSPERF_COMPILES = "sun.ci.totalCompiles"
HSPERF_TIME = "java.ci.totalTime"
HSPERF_FREQUENCY = "sun.os.hrt.frequency"
DOTNET_COMPILES = "dotnet.jit.compiled_methods"
DOTNET_TIME = "dotnet.jit.compilation.time"
# The JITs whose compiler is read (the others: UNREAD).
READABLE = ("jvm", "dotnet")
# Where the runtimes that expose nothing readable say why, in the record.
UNREAD = {
    "pypy": "PyPy shows its JIT only through PYPYLOG, which changes the run",
    "v8": "V8 shows its compilations only through --trace-opt, which changes the run",
}


@dataclass(frozen=True)
class Compiled:
    """A JIT's totals so far: methods compiled, and seconds spent compiling them."""

    methods: int
    seconds: float


class CompilerSignal(Protocol):
    """A JIT's totals so far; None while they cannot be read."""

    name: str

    def compiled(self) -> Compiled | None: ...

    def close(self) -> None: ...


class JitWatch:
    """One instance's compiler, read after every warm-up window: the milliseconds it
    spent compiling and the methods it compiled in each window, and whether the last
    JIT_QUIET_WINDOWS of them each stayed within JIT_QUIET_MS and JIT_QUIET_METHODS.
    Compiling between warm-ups (during measured cases, priming) beyond those counts
    as a busy window."""

    def __init__(self, signal: CompilerSignal) -> None:
        self.signal = signal
        self.last = signal.compiled()
        self.busy_ms: list[float] = []
        self.methods: list[int] = []

    @property
    def name(self) -> str:
        return self.signal.name

    def read(self, window: bool = True) -> None:
        """After a window of warm-up load; or (window=False) after anything else, whose
        compiling counts only when it breaks the quiet."""
        now = self.signal.compiled()
        if now is not None and self.last is not None:
            busy = round(max(0.0, now.seconds - self.last.seconds) * 1000, 1)
            methods = max(0, now.methods - self.last.methods)
            if window or not quiet(busy, methods):
                self.busy_ms.append(busy)
                self.methods.append(methods)
        self.last = now if now is not None else self.last

    def quiet(self) -> bool:
        recent = list(zip(self.busy_ms, self.methods))[-JIT_QUIET_WINDOWS:]
        return len(recent) == JIT_QUIET_WINDOWS and all(quiet(*w) for w in recent)

    def close(self) -> None:
        self.signal.close()


def quiet(busy_ms: float, methods: int) -> bool:
    """One window of a quiet compiler (core/verdict.py, JIT_QUIET_*)."""
    return busy_ms <= JIT_QUIET_MS and methods <= JIT_QUIET_METHODS


def signal_for(jit: str, pids: list[int], client_cpus: tuple[int, ...] = ()) -> (
    CompilerSignal | str
):  # fmt: skip
    """The signal of a `jit` runtime among `pids` (the server's processes), or why none."""
    if jit in UNREAD:
        return UNREAD[jit]
    process = runtime_process(pids, {"jvm": "java", "dotnet": "dotnet"}[jit])
    if process is None:
        return f"no {jit} process among the server's processes"
    if jit == "jvm":
        signal = HotSpotCounters(process)
        if signal.compiled() is None:
            return f"no readable perf-data file for JVM process {process} (-XX:-UsePerfData?)"
        return signal
    return DotnetCounters.start(process, client_cpus)


def watch(jit: str, pids: list[int], client_cpus: tuple[int, ...] = ()) -> JitWatch | str:
    """The compiler of a `jit` runtime among `pids`, watched window by window, or why
    it cannot be read."""
    signal = signal_for(jit, pids, client_cpus)
    return signal if isinstance(signal, str) else JitWatch(signal)


def runtime_process(pids: list[int], command: str) -> int | None:
    """The first of `pids` whose command name is `command` (java, dotnet)."""
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == command:
                return pid
        except OSError:
            continue
    return None


# -- the JVM -------------------------------------------------------------------------


class HotSpotCounters:
    """HotSpot's perf-data counters of one process, read from the file it maps."""

    name = f"jvm: {HSPERF_TIME} and {HSPERF_COMPILES} (hsperfdata)"

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.path = perf_data_file(pid)

    def compiled(self) -> Compiled | None:
        if self.path is None:
            return None
        try:
            counters = perf_counters(self.path.read_bytes())
        except (OSError, ValueError, struct.error):
            return None
        if HSPERF_COMPILES not in counters or not counters.get(HSPERF_FREQUENCY):
            return None
        ticks = counters.get(HSPERF_TIME, 0)
        return Compiled(counters[HSPERF_COMPILES], ticks / counters[HSPERF_FREQUENCY])

    def close(self) -> None:
        pass


def perf_data_file(pid: int) -> Path | None:
    """/tmp/hsperfdata_<user>/<pid> as the process sees it (its pid in its own namespace)."""
    namespace_pid = pid
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                namespace_pid = int(line.split()[-1])
    except (OSError, ValueError):
        return None
    found = sorted(Path(f"/proc/{pid}/root/tmp").glob(f"hsperfdata_*/{namespace_pid}"))
    return found[0] if found else None


def perf_counters(data: bytes) -> dict[str, int]:
    """The long counters of a HotSpot perf-data file (the format jstat reads).

    Prologue: magic 0xcafec0c0 (big-endian), byte order (1 = little), major,
    minor, accessible, used, overflow, modification time, entry offset, entry
    count. Each entry: its length, the offset of its name, vector length,
    type ('J' a long), flags, units, variability, the offset of its data.
    """
    if len(data) < 32 or struct.unpack(">I", data[:4])[0] != HSPERF_MAGIC:
        raise ValueError("not a HotSpot perf-data file")
    order = "<" if data[4] == 1 else ">"
    entry_offset, count = struct.unpack(order + "ii", data[24:32])
    counters, offset = {}, entry_offset
    for _ in range(count):
        length, name_at, vector, kind, _flags, _units, _var, data_at = struct.unpack(
            order + "iiibbbbi", data[offset : offset + 20]
        )
        if length <= 0:
            break
        name_end = data.index(b"\0", offset + name_at)
        if kind == ord("J") and vector == 0:
            name = data[offset + name_at : name_end].decode("ascii", "replace")
            value = data[offset + data_at : offset + data_at + 8]
            counters[name] = struct.unpack(order + "q", value)[0]
        offset += length
    return counters


# -- .NET ----------------------------------------------------------------------------


class DotnetCounters:
    """dotnet-counters monitoring one process; the latest totals its screen showed.

    `monitor` draws a table once, then rewrites only the values, each at its row
    with a cursor move (ESC[row;colH) and no newline; `Screen` follows it."""

    name = (f"dotnet: System.Runtime {DOTNET_TIME} and {DOTNET_COMPILES} "
            f"(dotnet-counters {DOTNET_COUNTERS_VERSION})")  # fmt: skip

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.screen = Screen()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    @classmethod
    def start(cls, pid: int, client_cpus: tuple[int, ...]) -> DotnetCounters | str:
        tool = dotnet_counters()
        if isinstance(tool, str):
            return tool
        command = [str(tool), "monitor", "-p", str(pid), "--refresh-interval", "1",
                   "--counters", f"System.Runtime[{DOTNET_COMPILES},{DOTNET_TIME}]"]  # fmt: skip
        if client_cpus:  # on the load tool's cores, never on the server's
            command = ["taskset", "-c", ",".join(map(str, client_cpus)), *command]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=tool_env())  # fmt: skip
        return cls(process)

    def read(self) -> None:
        stream = self.process.stdout
        while stream is not None:
            chunk = stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096)
            if not chunk:
                return
            self.screen.feed(chunk.decode("utf-8", "replace"))

    def compiled(self) -> Compiled | None:
        values = self.screen.values()
        if DOTNET_COMPILES not in values or DOTNET_TIME not in values:
            return None
        return Compiled(int(values[DOTNET_COMPILES]), values[DOTNET_TIME])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Screen:
    """Just enough of a terminal for dotnet-counters' table: rows of text, the cursor
    moved home (ESC[H), to a row (ESC[row;colH), the screen cleared (ESC[J)."""

    CONTROL = re.compile(r"\x1b\[(?:(\d+);(\d+))?([HJK])")
    ROW = re.compile(r"^\s*(dotnet\.jit\.[a-z_.]+)\b")
    NUMBER = re.compile(r"([\d][\d,]*(?:\.\d+)?)\s*$")

    def __init__(self) -> None:
        self.rows: dict[int, str] = {}
        self.row, self.column = 1, 1
        self.lock = threading.Lock()
        self.pending = ""

    def feed(self, text: str) -> None:
        with self.lock:
            text = self.pending + text
            cut = text.rfind("\x1b")  # an escape split between two reads waits for the rest
            if cut != -1 and not self.CONTROL.match(text, cut):
                text, self.pending = text[:cut], text[cut:]
            else:
                self.pending = ""
            position = 0
            for match in self.CONTROL.finditer(text):
                self.write(text[position : match.start()])
                row, column, kind = match.groups()
                if kind == "H":
                    self.row, self.column = (int(row), int(column)) if row else (1, 1)
                elif kind == "J":
                    self.rows.clear()
                position = match.end()
            self.write(text[position:])

    def write(self, text: str) -> None:
        for i, piece in enumerate(text.replace("\r", "").split("\n")):
            if i:
                self.row, self.column = self.row + 1, 1
            if piece:
                line = self.rows.get(self.row, "").ljust(self.column - 1)
                self.rows[self.row] = line[: self.column - 1] + piece
                self.column += len(piece)

    def values(self) -> dict[str, float]:
        with self.lock:
            rows = list(self.rows.values())
        found = {}
        for line in rows:
            name, number = self.ROW.match(line), self.NUMBER.search(line)
            if name and number:
                found[name.group(1)] = float(number.group(1).replace(",", ""))
        return found


def tool_env() -> dict:
    """This environment without the .NET runtime settings given to the server under test:
    dotnet-counters is a .NET program too (DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=1
    stalls its own reads of the diagnostics port)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("DOTNET_", "COMPlus_")) or k == "DOTNET_ROOT"}  # fmt: skip


def dotnet_counters() -> Path | str:
    """dotnet-counters at DOTNET_COUNTERS_VERSION, installed once; or why it cannot be."""
    binary = DOTNET_COUNTERS_DIR / "dotnet-counters"
    if binary.is_file():
        return binary
    if shutil.which("dotnet") is None:
        return "dotnet not found: dotnet-counters cannot be installed"
    result = subprocess.run(
        ["dotnet", "tool", "install", "dotnet-counters", "--version", DOTNET_COUNTERS_VERSION,
         "--tool-path", str(DOTNET_COUNTERS_DIR)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if result.returncode != 0 or not binary.is_file():
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        return f"dotnet-counters {DOTNET_COUNTERS_VERSION} could not be installed: {' '.join(tail)}"
    return binary
