"""The results folder: `results/<run-id>/`.

- `results.jsonl`: one JSON record a line, appended, flushed and fsync'ed as
  each record is written, so a crash or Ctrl-C loses nothing already
  measured. A kill in the middle of a write (SIGKILL, a full disk) can leave
  at most one partial last line: readers skip it, and the next writer to
  open the file trims it before appending.
  Records have a `kind`: "measurement" (one load-tool run), "stack" (what
  happened to a stack: verified, failed a step, stopped uncleanly).
- `run.json`: provenance (git commit, host CPU, cores, kernel, tool
  versions, every stack's manifest provenance with its resolved dependency
  list) and every knob; rewritten atomically when the run ends.
- `raw/`: every load tool's raw output.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import psutil

from loadtest.core.manifest import REPO_ROOT

RESULTS_ROOT = REPO_ROOT / "results"
RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"


def new_run_id(profile: str, now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now()
    return f"{now:%Y%m%d-%H%M%S}-{profile}"


def run_folder(run: str, root: Path = RESULTS_ROOT) -> Path:
    """A run id (under results/) or a path to a run folder."""
    path = Path(run)
    if path.is_dir() and ((path / RUN_FILE).exists() or (path / RESULTS_FILE).exists()):
        return path
    return root / run


def run_argument(folder: Path) -> str:
    """What `make report RUN=` takes for this folder: its id under results/, else its path
    (from the repository's root when it is inside it)."""
    if folder.resolve().parent == RESULTS_ROOT.resolve():
        return folder.name
    with contextlib.suppress(ValueError):
        return str(folder.resolve().relative_to(REPO_ROOT))
    return str(folder)


class WriteFailed(Exception):
    """results.jsonl, run.json or a raw output could not be written (full disk, read-only)."""

    def __init__(self, stack: str | None, error: OSError) -> None:
        where = f"[{stack}] " if stack else ""
        why = error.strerror or str(error)
        super().__init__(
            f"{where}writing results failed: {why} ({os.fsdecode(error.filename or '')})"
        )
        self.stack = stack
        self.error = error


class ResultsWriter:
    """Appends records to results.jsonl, durably, one line per record."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # O_APPEND: every write lands at the end even if the file was appended
        # to by an earlier (resumed) run.
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        _trim_torn_tail(self._fd)

    def write(self, record: dict) -> None:
        """Append one record durably; raises OSError naming the file (full disk, read-only).

        A write that fails half-way (a full disk takes what fits) is cut back
        off, so the file still ends with the last complete record.
        """
        line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, line)
            while written < len(line):  # a short write is rare but legal
                written += os.write(self._fd, line[written:])
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _trim_torn_tail(fd: int) -> None:
    """Cut a partial last line, left by a writer killed mid-write."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        chunk_start = max(0, end - 65536)
        newline = os.pread(fd, end - chunk_start, chunk_start).rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, chunk_start + newline + 1)
            return
        end = chunk_start
    os.ftruncate(fd, 0)


def read_records(path: Path) -> list[dict]:
    """Every complete record; a torn last line (should one exist) is skipped."""
    records = []
    if not path.exists():
        return records
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # partial last line: the write never completed
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError:
                continue
    return records


def write_json_atomic(path: Path, data: dict) -> None:
    """Replace `path` whole or not at all (a full disk leaves the old file and no temporary)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w") as handle:
            json.dump(data, handle, indent=2, sort_keys=True, default=str)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(exc.errno, exc.strerror, str(exc.filename or path)) from exc


def _run(command: list[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=20, cwd=REPO_ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip()


def git_info() -> dict:
    commit = _run(["git", "rev-parse", "HEAD"])
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit or "unknown", "dirty": bool(dirty)}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()


def host_info() -> dict:
    return {
        "cpu_model": cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        "cores_available": sorted(os.sched_getaffinity(0)),
        "memory_bytes": psutil.virtual_memory().total,
        "kernel": platform.release(),
        "os": os_release(),
        "python": sys.version.split()[0],
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "load_average_at_start": list(os.getloadavg()),
    }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
