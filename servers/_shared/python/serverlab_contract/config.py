"""Configuration from the environment: PORT, HOST, WORKERS, WORKDAY_CALENDAR.

``WORKERS`` defaults to the CPUs this process may use: the affinity mask
(cpuset) capped by the cgroup CPU quota (cgroup v2 ``cpu.max`` or v1
``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), rounded up, at least 1.
``os.cpu_count()`` alone would count every CPU of the host, which inside a
container limited to 2 CPUs starts far too many workers.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Mapping, Optional, TypeVar

from .workday import CalendarError, TradingCalendar, load_calendar

__all__ = [
    "Config",
    "ConfigError",
    "calendar_from_env",
    "calendar_or_exit",
    "cgroup_cpu_limit",
    "config_from_env",
    "config_or_exit",
    "cpus_available",
    "workers_from_env",
]

DEFAULT_HOST = "0.0.0.0"

_T = TypeVar("_T")


class ConfigError(ValueError):
    """An environment variable is missing or invalid; the message says which."""


@dataclass(frozen=True)
class Config:
    host: str
    port: int
    workers: int
    calendar_path: str
    calendar: TradingCalendar


def _ancestors(root: Path, cgroup_path: str) -> List[Path]:
    """``root/cgroup_path`` and each parent up to ``root`` itself, deepest first.

    Without a cgroup namespace (Docker on cgroup v1, for example) the path
    in /proc/self/cgroup names the host's hierarchy, which is not mounted
    inside the container; its own limits are then at the mount root, which
    is why the root is always a candidate.
    """
    parts = [p for p in cgroup_path.split("/") if p and p not in (".", "..")]
    return [root.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _v2_limit(directory: Path) -> Optional[float]:
    text = _read(directory / "cpu.max")  # "max 100000" or "QUOTA PERIOD"
    if not text:
        return None
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_limit(directory: Path) -> Optional[float]:
    quota_text = _read(directory / "cpu.cfs_quota_us")  # -1 means no limit
    period_text = _read(directory / "cpu.cfs_period_us")
    try:
        quota, period = int(quota_text or ""), int(period_text or "")
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_cpu_limit(
    cgroup_root: str = "/sys/fs/cgroup", proc_self_cgroup: str = "/proc/self/cgroup"
) -> Optional[float]:
    """The CPU quota of this process's cgroup in CPUs (e.g. 1.5), None if unlimited.

    Looks at the process's own cgroup and its ancestors, in cgroup v2
    (``cpu.max``) and v1 (``cpu`` controller) layouts, and returns the
    smallest quota found.
    """
    text = _read(Path(proc_self_cgroup))
    if text is None:
        return None
    root = Path(cgroup_root)
    limits = []
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        hierarchy, controllers, path = fields
        if hierarchy == "0" and controllers == "":
            limits += [_v2_limit(d) for d in _ancestors(root, path)]
        elif "cpu" in controllers.split(","):
            for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                if (root / mount).is_dir():
                    limits += [_v1_limit(d) for d in _ancestors(root / mount, path)]
                    break
    found = [limit for limit in limits if limit is not None]
    return min(found) if found else None


def allowed_cpus_from_status(status_path: str = "/proc/self/status") -> Optional[int]:
    """The affinity mask's size from Linux's Cpus_allowed_list ("0-1,3" is 3).

    For runtimes without os.sched_getaffinity (PyPy 3.9), so that a server
    started under taskset still counts only the cores it may run on.
    """
    text = _read(Path(status_path))
    for line in (text or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            count = 0
            for part in line.split(":", 1)[1].strip().split(","):
                low, _, high = part.partition("-")
                count += int(high or low) - int(low) + 1
            return count or None
    return None


def cpus_available(
    cgroup_root: str = "/sys/fs/cgroup",
    proc_self_cgroup: str = "/proc/self/cgroup",
    proc_self_status: str = "/proc/self/status",
) -> int:
    """CPUs this process may use: affinity mask capped by the cgroup quota (ceil), >= 1."""
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:  # PyPy 3.9, or not Linux
        cpus = allowed_cpus_from_status(proc_self_status) or os.cpu_count() or 1
    quota = cgroup_cpu_limit(cgroup_root, proc_self_cgroup)
    if quota is not None:
        cpus = min(cpus, math.ceil(quota))
    return max(1, cpus)


def _get(environ: Mapping[str, str], name: str) -> Optional[str]:
    """A variable's value, None when unset or empty (as shells often pass it)."""
    value = environ.get(name, "").strip()
    return value or None


def _positive_int(name: str, value: str, upper: Optional[int] = None) -> int:
    # int() alone would accept "+4", " 4", "4_0" and non-ASCII digits.
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    number = int(value)
    if upper is not None and number > upper:
        raise ConfigError(f"{name} must be at most {upper}, got {value!r}")
    return number


def workers_from_env(environ: Optional[Mapping[str, str]] = None) -> int:
    """WORKERS if set, else :func:`cpus_available`. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    value = _get(environ, "WORKERS")
    return cpus_available() if value is None else _positive_int("WORKERS", value)


def calendar_from_env(environ: Optional[Mapping[str, str]] = None) -> TradingCalendar:
    """Load the calendar named by WORKDAY_CALENDAR. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    path = _get(environ, "WORKDAY_CALENDAR")
    if path is None:
        raise ConfigError(
            "WORKDAY_CALENDAR is not set: it must name the trading calendar file "
            "(contracts/calendar/xshg-non-trading-weekdays.txt)"
        )
    try:
        return load_calendar(path)
    except CalendarError as exc:
        raise ConfigError(f"WORKDAY_CALENDAR={path}: {exc}") from None


def config_from_env(
    environ: Optional[Mapping[str, str]] = None, default_port: Optional[int] = None
) -> Config:
    """Read and validate the whole configuration, loading the calendar once.

    PORT is required unless ``default_port`` is given; HOST defaults to
    0.0.0.0. Raises ConfigError with a message naming the variable.
    """
    environ = os.environ if environ is None else environ
    port_text = _get(environ, "PORT")
    if port_text is None:
        if default_port is None:
            raise ConfigError("PORT is not set: it must be the TCP port to listen on")
        port = default_port
    else:
        port = _positive_int("PORT", port_text, upper=65535)
    calendar = calendar_from_env(environ)
    return Config(
        host=_get(environ, "HOST") or DEFAULT_HOST,
        port=port,
        workers=workers_from_env(environ),
        calendar_path=environ["WORKDAY_CALENDAR"].strip(),
        calendar=calendar,
    )


def _or_exit(read: Callable[[], _T]) -> _T:
    """``read()``, or print its ConfigError to stderr and exit with status 2."""
    try:
        return read()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def config_or_exit(
    environ: Optional[Mapping[str, str]] = None, default_port: Optional[int] = None
) -> Config:
    """:func:`config_from_env`, or print the error to stderr and exit with status 2."""
    return _or_exit(lambda: config_from_env(environ, default_port))


def calendar_or_exit(environ: Optional[Mapping[str, str]] = None) -> TradingCalendar:
    """:func:`calendar_from_env`, or print the error to stderr and exit with status 2.

    For servers that import the application themselves (gunicorn workers,
    uWSGI) and so read only the calendar from the environment.
    """
    return _or_exit(lambda: calendar_from_env(environ))
