"""cgroups: CPU quota and memory limits for native servers; a container's usage read back.

The 2019 static-site experiment capped the server at a share of one CPU.
Natively that is a cgroup: CFS quota (cgroup v1 `cpu.cfs_quota_us`, v2
`cpu.max`) and a memory limit. Both hierarchies are supported; when neither
is writable the harness refuses the knob with a clear message instead of
silently running without the limit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


class LimitsUnavailable(Exception):
    """The host cannot apply the requested limit (no writable cgroup)."""


@dataclass
class CgroupLimits:
    """One cgroup (v1: one per controller) holding a single server's processes."""

    name: str
    cpu_quota: float | None = None
    memory: int | None = None

    def __post_init__(self) -> None:
        self.dirs: list[Path] = []

    @property
    def wanted(self) -> bool:
        return self.cpu_quota is not None or self.memory is not None

    def create(self) -> None:
        if not self.wanted:
            return
        try:
            if (CGROUP_ROOT / "cgroup.controllers").is_file():
                self._create_v2()
            else:
                self._create_v1()
        except OSError as exc:
            self.remove()
            raise LimitsUnavailable(
                f"cannot create a cgroup under {CGROUP_ROOT} ({exc.strerror}); "
                "CPU quota and memory limits need root and a writable cgroup hierarchy, "
                "or use RUNNER=docker"
            ) from exc

    def _create_v1(self) -> None:
        if self.cpu_quota is not None:
            cpu = self._mkdir(CGROUP_ROOT / "cpu" / self.name)
            (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(int(self.cpu_quota * PERIOD_US)))
        if self.memory is not None:
            mem = self._mkdir(CGROUP_ROOT / "memory" / self.name)
            (mem / "memory.limit_in_bytes").write_text(str(self.memory))

    def _create_v2(self) -> None:
        group = self._mkdir(CGROUP_ROOT / self.name)
        if self.cpu_quota is not None:
            (group / "cpu.max").write_text(f"{int(self.cpu_quota * PERIOD_US)} {PERIOD_US}")
        if self.memory is not None:
            (group / "memory.max").write_text(str(self.memory))

    def _mkdir(self, path: Path) -> Path:
        path.mkdir(exist_ok=True)
        self.dirs.append(path)
        return path

    def enter(self) -> None:
        """Move the calling process into the cgroup (used in the child before exec)."""
        for path in self.dirs:
            (path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        for path in reversed(self.dirs):
            try:
                path.rmdir()
            except OSError:
                pass  # still has processes; the kernel keeps it until they exit
        self.dirs.clear()


# Reading a container's cgroup (Docker runs the stack; the harness only reads).


def cgroup_dirs(pid: int) -> dict[str, Path]:
    """Controller name -> cgroup directory of `pid` (v1: one per controller; v2: key '')."""
    dirs: dict[str, Path] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2 unified hierarchy
            dirs[""] = CGROUP_ROOT / path.lstrip("/")
            continue
        for controller in controllers.split(","):
            base = CGROUP_ROOT / controller
            if base.is_dir():
                dirs[controller] = base / path.lstrip("/")
    return dirs


def read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


class ContainerCgroup:
    """Limits and usage of one container, read from its cgroup files."""

    def __init__(self, pid: int) -> None:
        self.dirs = cgroup_dirs(pid)
        self.v2 = "" in self.dirs and len(self.dirs) == 1

    def _file(self, controller: str, name: str) -> Path:
        return self.dirs["" if self.v2 else controller] / name

    def procs(self) -> list[int]:
        path = self._file("pids" if not self.v2 else "", "cgroup.procs")
        if not self.v2 and not path.exists():
            path = self._file("cpu", "cgroup.procs")
        try:
            return sorted(int(p) for p in path.read_text().split())
        except OSError:
            return []

    def cpu_usage_ns(self) -> int | None:
        if self.v2:
            try:
                for line in self._file("", "cpu.stat").read_text().splitlines():
                    key, value = line.split()
                    if key == "usage_usec":
                        return int(value) * 1000
            except OSError:
                return None
            return None
        return read_int(self._file("cpuacct", "cpuacct.usage"))

    def cpu_throttled(self) -> int | None:
        """CFS periods in which the quota stopped the container (cpu.stat nr_throttled)."""
        try:
            for line in self._file("cpu", "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "nr_throttled":
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def memory_bytes(self) -> int | None:
        if self.v2:
            return read_int(self._file("", "memory.current"))
        return read_int(self._file("memory", "memory.usage_in_bytes"))

    def memory_peak_bytes(self) -> int | None:
        if self.v2:
            return read_int(self._file("", "memory.peak"))
        return read_int(self._file("memory", "memory.max_usage_in_bytes"))

    def limits(self) -> dict:
        """What the kernel enforces: CFS quota/period, cpuset, memory limit (None = none)."""
        if self.v2:
            text = self._file("", "cpu.max").read_text().split()
            quota = None if text[0] == "max" else int(text[0])
            period = int(text[1])
            cpuset = self._file("", "cpuset.cpus.effective").read_text().strip()
            memory = read_int(self._file("", "memory.max"))
        else:
            quota = read_int(self._file("cpu", "cpu.cfs_quota_us"))
            quota = None if quota is None or quota < 0 else quota
            period = read_int(self._file("cpu", "cpu.cfs_period_us"))
            cpuset = self._file("cpuset", "cpuset.cpus").read_text().strip()
            memory = read_int(self._file("memory", "memory.limit_in_bytes"))
            # v1 reports "no limit" as a huge page-aligned number.
            if memory is not None and memory >= 1 << 60:
                memory = None
        return {
            "cfs_quota_us": quota,
            "cfs_period_us": period,
            "cpus": quota / period if quota and period else None,
            "cpuset": cpuset,
            "memory_limit_bytes": memory,
        }
