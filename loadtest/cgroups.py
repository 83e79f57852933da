"""CPU quota and memory limits for natively run servers, through cgroups.

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
UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3}


class LimitsUnavailable(Exception):
    """The host cannot apply the requested limit (no writable cgroup)."""


def parse_memory(text: str) -> int:
    """'512m' -> bytes. Accepts k, m, g suffixes (binary, like Docker)."""
    text = text.strip().lower()
    if text and text[-1] in UNITS:
        number, factor = text[:-1], UNITS[text[-1]]
    else:
        number, factor = text, 1
    if not number.isdigit() or int(number) <= 0:
        raise ValueError(f"memory limit must look like 512m or 2g, got {text!r}")
    return int(number) * factor


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
