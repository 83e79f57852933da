"""Scheduling priority for the measured pair (server and load tool).

On a host that also runs other work (a build, an editor, a second job), the
pinned cores are shared with it: taskset keeps the server and the tool apart,
not the rest of the host away. Linux schedules *autogroups* (one per session)
fairly against each other, so a plain `nice` does little across sessions;
the autogroup's own nice value (/proc/<pid>/autogroup) does. The harness
gives both the server's session and the tool's session the same raised
priority (PRIORITY, a nice value, default -15; 0 leaves it alone), so every
stack and the ceiling are treated alike and background work yields to them.
Raising priority needs root or CAP_SYS_NICE; without it the run goes on at
normal priority and run.json says so.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _autogroup(pid: int | str, priority: int) -> bool:
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(priority))
        return True
    except OSError:
        return False


def raise_own_priority(priority: int) -> None:
    """In a child before exec (after setsid): nice value and autogroup nice."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, priority)
    _autogroup("self", priority)


def raise_priority(pids: list[int], priority: int) -> bool:
    """Give running processes (a server's tree) the priority; True if it took."""
    if not priority:
        return False
    applied = False
    for pid in pids:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, priority)
            applied = True
        applied = _autogroup(pid, priority) or applied
    return applied


def can_raise(priority: int) -> bool:
    """Whether this process may set a negative nice value (root or CAP_SYS_NICE)."""
    if priority >= 0:
        return True
    current = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, current - 1)
    except OSError:
        return False
    os.setpriority(os.PRIO_PROCESS, 0, current)
    return True
